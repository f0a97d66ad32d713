// Every figure of a trace payload as a Plotly figure ({data, layout}): the large view (heatmap or lines), the
// decoding-step panels, the all-heads grid, the head statistics, the predictions and the positional encoding.
// Pure: no DOM, no Plotly; a host (page.js, the app's script) hands the figures to Plotly.react.

import {attention, headWeights, meanOf} from "./payload.js";
import {axisTokens, escape, label, plainLabel, queryLabel} from "./labels.js";
import {shownWeights, weighted, weighs} from "./weights.js";
import {axesOf, mergedWords, picked, renormalised} from "./words.js";

/**
 * @typedef {import("./payload.js").TracePayload} TracePayload
 * @typedef {import("./payload.js").Kind} Kind
 * @typedef {{data: Object[], layout: Object}} Figure
 * @typedef {{template: Object, attention: Array, diverging: Array, probability: Array, masked: string,
 *   heads: string[], hide_title: string, stats: {labels: Object<string, string>, panels: string[],
 *   signed: string[]}}} Look  the page's template and colour scales, the hidden-tokens title, the statistics' names
 * @typedef {{kind: string, layer: number, head: string, step: number, merge: boolean, plain: boolean,
 *   hide: boolean, display: string, weights: string, row?: number}} View  layer and step from 1 (step 0: the
 *   last); head "mean" or "1", "2", …; `weights`: which weights are drawn (weights.js); `row`: a source piece (from
 *   1) whose row a pair's encoder view frames (compare.js pairedView)
 * @typedef {{d_model: number, max_len: number, layout: string, dims: number[]}} Positional
 */

export const MEAN = "mean";
const ORANGE = "#f97316";
const COLORBAR = {title: {text: "weight", side: "right"}, thickness: 12, len: 0.8, tickvals: [0, 0.25, 0.5, 0.75, 1]};
const range = (n) => Array.from({length: n}, (_, i) => i);
const clamp = (x, lo, hi) => Math.min(Math.max(x, lo), hi);
const longest = (labels, cap) => Math.min(Math.max(...labels.map((s) => s.length)), cap);
const cellHeight = (n, perRow = 22, minimum = 260, maximum = 1400, extra = 130) =>
  Math.min(maximum, Math.max(minimum, n * perRow + extra));

/**
 * The kind called `name`.
 * @param {TracePayload} payload
 * @param {string} name
 * @returns {Kind}
 */
export function kindOf(payload, name) {
  const kind = payload.kinds.find((k) => k.name === name);
  if (!kind) throw new Error(`unknown attention kind ${JSON.stringify(name)}`);
  return kind;
}

/** Decoding steps: pieces written. */
export const steps = (payload) => payload.pieces.output.length;

/**
 * The view fitted to the payload (views.fitted): its kind's layers and heads, its steps (the last when unset).
 * @template {View} V
 * @param {{kinds: {name: string, attention: {shape: number[]}}[], pieces: {output: Array}}} payload  a trace
 *   payload, or what of one this reads (controls.js)
 * @param {V} view
 * @returns {V}
 */
export function fitted(payload, view) {
  const kind = payload.kinds.find((k) => k.name === view.kind) || payload.kinds[0];
  const [layers, heads] = kind.attention.shape;
  return fitIn(view, {name: kind.name, layers, heads}, steps(payload));
}

/**
 * The view within one kind's layers and heads and a translation's T steps (the last when unset; 0 when none).
 * @template {{kind?: string, layer?: number, head?: string, step?: number}} V
 * @param {V} view
 * @param {{name: string, layers: number, heads: number}} kind
 * @param {number} T
 * @returns {V}
 */
export function fitIn(view, kind, T) {
  const L = kind.layers, H = kind.heads;
  return Object.assign({}, view, {kind: kind.name, layer: clamp(Math.round(+view.layer) || L, 1, L),
                                  head: view.head === MEAN ? MEAN : String(clamp(Math.round(+view.head) || 1, 1, H)),
                                  step: T ? clamp(Math.round(+view.step) || T, 1, T) : 0});
}

// ---- the frame every figure shares (viz/common.py) ----

/**
 * A layout's frame: the template, height, margins and title.
 * @param {Look} look
 * @param {number} height
 * @param {string} [title]
 * @param {Object} [margin]
 */
export function frame(look, height, title, margin) {
  const out = {template: look.template, height: Math.round(height),
               margin: Object.assign({l: 60, r: 20, t: title ? 40 : 20, b: 40}, margin || {})};
  if (title) out.title = {text: title, x: 0.01, xanchor: "left", font: {size: 14}};
  return out;
}

export const figure = (look, data, layout, height, title, margin) =>
  ({data, layout: Object.assign({}, layout, frame(look, height, title, margin))});

/**
 * A figure that only says `message` (viz.empty_figure), which its `meta.empty` holds (nothing to export).
 * @param {Look} look
 * @param {string} message  text; a newline starts a line
 * @param {number} [height]
 * @returns {Figure}
 */
export const emptyFigure = (look, message, height = 260) => figure(look, [], {
  xaxis: {visible: false}, yaxis: {visible: false}, meta: {empty: message},
  annotations: [{text: escape(message).replace(/\n/g, "<br>"), x: 0.5, y: 0.5, xref: "paper", yref: "paper",
                 showarrow: false, font: {size: 14, color: "#6b7280"}}]}, height);

// ---- one kind's layer and head as shown (attention_views.matrix) ----

/**
 * The view's kind, layer and head (or mean) as shown: weights per piece or word, labels' tokens, hidden cells,
 * the trace row of each piece row, and a caption ("layer 3, mean of 4 heads").
 * @param {TracePayload} payload
 * @param {View} view  fitted
 */
export function shownMatrix(payload, view) {
  const att = weighted(payload, view.kind, view.weights), [, H] = att.shape, axes = axesOf(att.kind, view.hide);
  const head = view.head === MEAN ? MEAN : +view.head - 1;
  const shown = picked(att, view.layer - 1, head, view.hide);
  const s = view.merge ? mergedWords(shown, axes) : shown;
  const tokens = axisTokens(axes, view.merge, view.plain);
  return {w: s.w, hidden: s.hidden, queries: tokens.queries, keys: tokens.keys, rows: axes.rows,
          caption: captionOf(payload, view.kind, view, headsOf(view, H))};
}

const headsOf = (view, H) => view.head === MEAN ? `mean of ${H} heads` : `head ${view.head}`;

/**
 * What a view of one layer shows, in words: "layer 3, mean of 4 heads", "layer 2, head 1 · value-norm weights",
 * "layer 3, rollout of layers 1–3" (every head the same), or what the view's weights could not weigh.
 * @param {TracePayload} payload
 * @param {string} name  the kind
 * @param {View & {weights?: string}} view
 * @param {string} shownHeads  which heads: "mean of 4 heads", "head 2"
 */
function captionOf(payload, name, view, shownHeads) {
  const shown = shownWeights(payload, name, view.weights);
  if (shown === "rollout") return `layer ${view.layer}, rollout of layers 1–${view.layer}`;
  const heads = `layer ${view.layer}, ${shownHeads}`;
  if (shown === "value-norm") return `${heads} · value-norm weights`;
  if (view.weights === "rollout" && !weighs("rollout", name)) return `${heads} · α (rollout: encoder only)`;
  return view.weights === "value-norm" ? `${heads} · α (no value norms for this translation)` : heads;
}

function emptyNote(hidden, queries, hide) {
  if (!hidden || !hide) return null;
  const empty = queries.filter((_, i) => hidden[i].length && hidden[i].every(Boolean)).map((q) => queryLabel(q));
  return empty.length ? `row ${empty.join(", ")}: sees only hidden special tokens (empty) · grey: hidden` : null;
}

/**
 * What a view of one layer should say of the heads switched off there (attention_views.off_note).
 * @param {Kind} kind
 * @param {View} view
 */
export function offNote(kind, view) {
  const off = kind.off.filter(([l]) => l === view.layer).map(([, h]) => h).sort((a, b) => a - b);
  if (!off.length) return "";
  if (view.head !== MEAN) return off.includes(+view.head) ? " · this head is switched OFF" : "";
  return ` · head${off.length > 1 ? "s" : ""} ${off.join(", ")} off`;
}

const viewTitle = (kind, view, caption, look) =>
  `${kind.title} · ${caption}` + (view.merge ? " · words" : "") + (view.hide ? look.hide_title : "");

/**
 * viz.attention_heatmap: queries are rows, keys columns, 0-1 viridis, hidden cells grey, a row framed in orange.
 * @param {Look} look
 * @param {ArrayLike<number>[]} w
 * @param {(string|string[])[]} queries  tokens
 * @param {string[]} keys
 * @param {{queryTitle: string, keyTitle: string, hidden: boolean[][] | null, highlight: number | null,
 *   title: string, note: string | null}} o
 * @returns {Figure}
 */
export function heatmapFigure(look, w, queries, keys, o) {
  const Tq = queries.length, Tk = keys.length;
  if (!Tq || !Tk) return emptyFigure(look, "Nothing to show: no tokens");
  const z = Array.from(w, (row, i) => Array.from(row, (x, j) => o.hidden && o.hidden[i][j] ? null : x));
  const qLab = queries.map((q) => queryLabel(q)), kLab = keys.map((k) => label(k));
  const text = z.map((row, i) =>
    row.map((x, j) => `${qLab[i]} \u2192 ${kLab[j]}: ` + (x === null ? "masked" : x.toFixed(3))));
  const data = [{type: "heatmap", z, x: range(Tk), y: range(Tq), text, zmin: 0, zmax: 1, colorscale: look.attention,
                 hoverongaps: true, hovertemplate: "%{text}<extra></extra>", colorbar: COLORBAR}];
  const layout = {
    xaxis: {tickmode: "array", tickvals: range(Tk), ticktext: kLab, tickangle: -50, title: {text: o.keyTitle},
            showline: false},
    yaxis: {tickmode: "array", tickvals: range(Tq), ticktext: qLab, autorange: "reversed",
            title: {text: o.queryTitle}, showline: false},
    plot_bgcolor: o.hidden ? look.masked : "white", annotations: [], shapes: []};
  if (o.note || (o.hidden && o.hidden.some((row) => row.some(Boolean)))) {
    layout.annotations.push({text: o.note || "grey: hidden by the mask", x: 1, y: 1, xref: "paper", yref: "paper",
                             xanchor: "right", yanchor: "bottom", showarrow: false,
                             font: {size: 11, color: "#52525b"}});
  }
  if (o.highlight !== null && o.highlight >= 0 && o.highlight < Tq) {
    layout.shapes.push({type: "rect", x0: -0.5, x1: Tk - 0.5, y0: o.highlight - 0.5, y1: o.highlight + 0.5,
                        line: {color: ORANGE, width: 3}, name: "step-frame"});
  }
  const lk = longest(kLab, 24), lq = longest(qLab, 32), below = 40 + 50 + 6 * lk; // the margins above and below
  // the query axis's title stands beside the rows (6.5 px a character): few rows take it on two lines, and the
  // figure is never shorter than it
  const along = (t) => 6.5 * Math.max(...t.split("<br>").map((line) => line.length));
  let height = cellHeight(Tq, 30, 260, 1400, 110 + 6 * lk), l = 40 + 7 * lq;
  if (height - below < along(o.queryTitle) && o.queryTitle.includes(" (")) {
    layout.yaxis.title.text = o.queryTitle.replace(" (", "<br>(");
    l += 16;
  }
  height = Math.max(height, below + along(layout.yaxis.title.text));
  return figure(look, data, layout, height, o.title, {l, b: 50 + 6 * lk});
}

/**
 * The large view as a heatmap: the chosen kind, layer and head (or mean); the chosen step framed.
 * @param {TracePayload} payload
 * @param {View} view  fitted
 * @param {Look} look
 * @param {string} [prefix]  said first in the title ("Trained")
 * @returns {Figure}
 */
export function heatmap(payload, view, look, prefix = "") {
  const kind = kindOf(payload, view.kind), s = shownMatrix(payload, view), T = steps(payload);
  let highlight = null;
  if (kind.stepped && !view.merge && T) {
    const row = s.rows.indexOf(view.step - 1);
    highlight = row >= 0 ? row : null;
  } else if (!kind.stepped && view.row) { // a pair's framed source row (compare.js pairedView): its piece or word
    const row = s.rows.indexOf(view.row - 1), groups = axesOf(kind, view.hide).query_groups;
    highlight = row < 0 ? null : view.merge ? groups.findIndex((g) => g.includes(row)) : row;
  }
  return heatmapFigure(look, s.w, s.queries, s.keys, {
    queryTitle: kind.query_title, keyTitle: kind.key_title, hidden: s.hidden, highlight,
    title: (prefix ? `${prefix}: ` : "") + viewTitle(kind, view, s.caption, look) + offNote(kind, view),
    note: emptyNote(s.hidden, s.queries, view.hide)});
}

// ---- lines (viz.attention_lines) ----

const OPACITY_STEPS = 10, MIN_WEIGHT = 0.02, ROW = 26, LINE_FONT = 13;

/**
 * The large view as lines: queries left, keys right, a line per weight with the weight as its opacity (in
 * tenths), one colour per head; a trace's meta says what it is ("lines", "queries", "keys", "legend").
 * @param {TracePayload} payload
 * @param {View} view  fitted
 * @param {Look} look
 * @param {string} [prefix]  said first in the title (a pair's "Sentence 1")
 * @returns {Figure}
 */
export function lines(payload, view, look, prefix = "") {
  const kind = kindOf(payload, view.kind), att = weighted(payload, view.kind, view.weights), [, H] = att.shape;
  const axes = axesOf(kind, view.hide), l = view.layer - 1;
  const heads = view.head === MEAN ? range(H).map((h) => h + 1) : [+view.head];
  const each = heads.map((h) => {
    const s = picked(att, l, h - 1, view.hide);
    return view.merge ? mergedWords(s, axes) : s;
  });
  const {queries, keys} = axisTokens(axes, view.merge, view.plain), hidden = each[0].hidden;
  const caption = captionOf(payload, view.kind, view, heads.length > 1 ? `all ${H} heads` : `head ${heads[0]}`);
  const title = (prefix ? `${prefix}: ` : "") + `${kind.title} · ${caption} · lines` + (view.merge ? " · words" : "") +
                (view.hide ? look.hide_title : "");
  const note = emptyNote(hidden, queries, view.hide);
  if (!queries.length || !keys.length) return emptyFigure(look, "Nothing to show: no tokens");
  const color = (head) => look.heads[(head - 1) % look.heads.length];
  const data = [];
  heads.forEach((head, n) => {
    const w = each[n].w.map((row, i) => Array.from(row, (x, j) => hidden && hidden[i][j] ? 0 : x));
    for (let step = 1; step <= OPACITY_STEPS; step++) {
      const x = [], y = [];
      w.forEach((row, i) => row.forEach((weight, j) => {
        if (Math.ceil(clamp(weight, 0, 1) * OPACITY_STEPS) === step && weight >= MIN_WEIGHT) {
          x.push(0, 1, null);
          y.push(-i, -j, null);
        }
      }));
      if (x.length) {
        data.push({type: "scatter", x, y, mode: "lines", line: {color: color(head), width: 2},
                   opacity: step / OPACITY_STEPS, hoverinfo: "skip", showlegend: false, meta: "lines",
                   legendgroup: `head ${head}`});
      }
    }
  });
  if (heads.length > 1) { // a legend entry per head colour: a click on it hides or shows that head's lines
    heads.forEach((head) => data.push({type: "scatter", x: [null], y: [null], mode: "lines", name: `head ${head}`,
                                       meta: "legend", legendgroup: `head ${head}`,
                                       line: {color: color(head), width: 3}}));
  }
  const qFull = queries.map((q) => queryLabel(q)), kFull = keys.map((x) => label(x));
  const qShort = queries.map((q) => label(Array.isArray(q) ? q[1] : q)), kShort = keys.map((x) => label(x, 12));
  /** @type {[string, number, string[], string[], string][]} */
  const columns = [["queries", 0, qShort, qFull, "middle left"], ["keys", 1, kShort, kFull, "middle right"]];
  columns.forEach(([meta, x, names, full, side]) =>
    data.push({type: "scatter", x: names.map(() => x), y: names.map((_, i) => -i), mode: "markers+text", text: names,
               textposition: side, textfont: {size: LINE_FONT}, customdata: full, meta, showlegend: false,
               marker: {size: 9, color: "#94a3b8"}, hovertemplate: "%{customdata}<extra></extra>"}));
  const rows = Math.max(queries.length, keys.length);
  /** @type {Object[]} */
  const annotations = [[0, kind.stepped ? "produces" : "query"], [1, "key"]].map(([x, text]) => ({
    x, y: 0.7, text: `<b>${text}</b>`, showarrow: false, font: {size: LINE_FONT},
    xanchor: x === 0 ? "right" : "left"}));
  if (note) {
    annotations.push({text: note, x: 0, y: 0, xref: "paper", yref: "paper", yanchor: "top", xanchor: "left",
                      showarrow: false, font: {size: 12, color: "#52525b"}, yshift: heads.length > 1 ? -34 : -4});
  }
  const layout = {xaxis: {visible: false, range: [-0.75, 1.75], fixedrange: true},
                  yaxis: {visible: false, range: [-rows + 0.5, 1.2], fixedrange: true}, annotations,
                  hovermode: "closest", hoverdistance: -1, dragmode: false, plot_bgcolor: "white",
                  showlegend: heads.length > 1,
                  legend: {orientation: "h", x: 0, y: 0, yanchor: "top", font: {size: 12}, traceorder: "normal"}};
  const top = 50, bottom = 20 + (note ? 24 : 0) + (heads.length > 1 ? 30 : 0);
  return figure(look, data, layout, top + bottom + ROW * (rows + 1), title, {l: 10, r: 10, t: top, b: bottom});
}

/**
 * The large view as the view's display asks: heatmap or lines.
 * @param {TracePayload} payload
 * @param {View} view  fitted
 * @param {Look} look
 * @param {string} [prefix]  said first in the title (a pair's "Sentence 1")
 */
export const large = (payload, view, look, prefix = "") =>
  view.display === "lines" ? lines(payload, view, look, prefix) : heatmap(payload, view, look, prefix);

// ---- decoding steps (attention_views.step_row, step_figures) ----

/**
 * Step t's (from 0) row of a kind whose queries are decoding steps, over the keys it may see, with the view's
 * layer, head, words, ▁ and special tokens: the mean of heads is taken first, then the special keys leave and
 * the row is renormalised, then words sum their pieces.
 * @param {TracePayload} payload
 * @param {View} view  fitted
 * @param {string} name  "cross" or "decoder"
 * @param {number} t
 * @returns {{row: number[], keys: string[], query: string[], caption: string}}
 */
export function stepRow(payload, view, name, t) {
  const att = weighted(payload, name, view.weights), kind = att.kind, [, H] = att.shape;
  if (!kind.stepped) throw new Error(`${kind.label} has no row per decoding step`);
  const axes = axesOf(kind, view.hide), l = view.layer - 1;
  const n = kind.causal ? axes.cols.filter((j) => j <= t).length : axes.cols.length;
  const cols = axes.cols.slice(0, n);
  const heads = view.head === MEAN ? range(H) : [+view.head - 1];
  const mean = meanOf(heads.map((h) => [headWeights(att, l, h)[t]]))[0];
  let row = cols.map((j) => mean[j]);
  if (view.hide) row = renormalised(row);
  let keys = axes.keys.slice(0, n);
  if (view.merge) {
    const groups = axes.key_groups.map((g) => g.filter((j) => j < n)).filter((g) => g.length);
    row = groups.map((g) => g.reduce((s, j) => s + row[j], 0));
    keys = groups.map((g, i) => kind.causal ? axes.key_prefix_words[g[g.length - 1]] : axes.key_words[i]);
  } else if (view.plain) {
    keys = keys.map(plainLabel);
  }
  const query = [payload.pieces.target[t], payload.pieces.output[t]];
  return {row, keys, query: view.plain ? query.map(plainLabel) : query,
          caption: captionOf(payload, name, view, headsOf(view, H))};
}

/**
 * viz.attention_row: one query's attention over the keys as bars, on the fixed 0-1 scale.
 * @param {Look} look
 */
export function rowFigure(look, r, title, keyTitle, color) {
  const kLab = r.keys.map((k) => label(k)), q = queryLabel(r.query);
  const data = [{type: "bar", x: range(r.row.length), y: r.row, marker: {color}, textposition: "none",
                 text: kLab.map((k, j) => `${q} \u2192 ${k}: ${r.row[j].toFixed(3)}`),
                 hovertemplate: "%{text}<extra></extra>"}];
  const layout = {xaxis: {tickmode: "array", tickvals: range(r.row.length), ticktext: kLab, tickangle: -50,
                          title: {text: keyTitle}},
                  yaxis: {range: [0, 1], title: {text: "weight"}, showgrid: true, gridcolor: "#f3f4f6"}};
  const lk = longest(kLab, 24);
  return figure(look, data, layout, 300 + 5 * lk, title, {b: 50 + 6 * lk, t: 50});
}

// the next-piece bars' probability axis: room for a bar of p = 1 and its label
const TOPK_RANGE = 1.12;

/**
 * viz.topk_bars: step t's (from 0) most likely next pieces, the chosen one in orange.
 * @param {TracePayload} payload
 * @param {View} view
 * @param {Look} look
 * @param {number} t
 */
export function topkBars(payload, view, look, t) {
  const row = payload.top_k[t] || [], out = payload.pieces.output[t];
  const produced = view.plain ? plainLabel(out) : out;
  if (!row.length) return emptyFigure(look, "No prediction yet", 300);
  const pieces = row.map((c) => c[0]), probs = row.map((c) => c[1]);
  // each row's whole width answers a pointer (a clear bar over the drawn one): a piece of p ≈ 0 is a bar too thin
  // to tap, yet a branch from it is the "what if" a student asks
  const data = [{type: "bar", x: probs, y: range(pieces.length), orientation: "h",
                 marker: {color: pieces.map((p) => p === produced ? "#ea580c" : "#9333ea")},
                 text: probs.map((p) => p.toFixed(2)), textposition: "outside", cliponaxis: false,
                 hoverinfo: "skip"},
                {type: "bar", x: pieces.map(() => TOPK_RANGE), y: range(pieces.length), orientation: "h", width: 1,
                 marker: {color: "rgba(0,0,0,0)"}, customdata: probs, textposition: "none",
                 hovertext: pieces.map((p, i) => `${i + 1} ${label(p)}`), meta: `branch=${t}`,
                 hovertemplate: "%{hovertext}<br>p = %{customdata:.3f}<br>(click: continue from it)<extra></extra>"}];
  const layout = {barmode: "overlay", showlegend: false,
                  yaxis: {tickmode: "array", tickvals: range(pieces.length), ticktext: pieces.map((p) => label(p)),
                          autorange: "reversed"},
                  xaxis: {range: [0, TOPK_RANGE], title: {text: "probability"}, showgrid: true, gridcolor: "#f3f4f6"}};
  return figure(look, data, layout, 300, `Step ${t + 1}: next-piece probabilities \u2192 ${label(produced)}`,
                {l: 110, r: 30});
}

/**
 * The decoding step's three panels: its cross-attention row over the source, its masked self-attention row over
 * the pieces read so far, and its top-k next pieces.
 * @param {TracePayload} payload
 * @param {View} view  fitted
 * @param {Look} look
 * @returns {{cross: Figure, self: Figure, topk: Figure}}
 */
export function stepFigures(payload, view, look) {
  if (!steps(payload)) {
    const none = emptyFigure(look, "No decoding step", 300);
    return {cross: none, self: none, topk: none};
  }
  const t = view.step - 1, cross = kindOf(payload, "cross"), self = kindOf(payload, "decoder");
  const c = stepRow(payload, view, "cross", t), s = stepRow(payload, view, "decoder", t);
  const hidden = view.hide ? " · special tokens hidden" : "";
  const [crossTitle, selfTitle] = [cross, self].map((k) => `Step ${t + 1} · ${k.label} (${c.caption})${hidden}`);
  return {
    cross: c.keys.length ? rowFigure(look, c, crossTitle, cross.key_title, cross.step_color)
                         : emptyFigure(look, `${crossTitle}: no key left to see`, 300),
    self: s.keys.length ? rowFigure(look, s, selfTitle, self.key_title, self.step_color)
                        : emptyFigure(look, `${selfTitle}: this step sees only <s>, which is hidden (empty row)`, 300),
    topk: topkBars(payload, view, look, t)};
}

// ---- every head of a kind (viz.attention_grid) ----

/**
 * Every layer × head of the view's kind, on one 0-1 scale (in whole percents); a head switched off greyed. Each
 * thumbnail's meta names its head as "head=KIND:LAYER.HEAD" (from 1), for a click to read.
 * @param {TracePayload} payload
 * @param {View} view  fitted
 * @param {Look} look
 * @param {string} click  what a click on a thumbnail does, for its hover
 * @returns {Figure}
 */
export function grid(payload, view, look, click) {
  const kind = kindOf(payload, view.kind), att = weighted(payload, view.kind, view.weights), [L, H] = att.shape;
  const axes = axesOf(kind, view.hide), tokens = axisTokens(axes, view.merge, view.plain);
  const shown = shownWeights(payload, view.kind, view.weights);
  const weighed = {"value-norm": " · value-norm weights", rollout: " · rollout up to each layer (every head the same)"};
  const title = `${kind.title}: every layer × head` + (view.hide ? look.hide_title : "") + (weighed[shown] || "");
  if (!tokens.queries.length || !tokens.keys.length) return emptyFigure(look, "Nothing to show: no tokens");
  // positions counted from 1 keep repeated pieces apart as categories
  const qPos = tokens.queries.map((q, i) => `${i + 1} ${queryLabel(q)}`);
  const kPos = tokens.keys.map((x, j) => `${j + 1} ${label(x)}`);
  const hGap = 0.015, vGap = Math.min(0.05, 0.3 / Math.max(L, 1));
  const width = (1 - hGap * (H - 1)) / H, height = (1 - vGap * (L - 1)) / L;
  const axis = {showticklabels: false, ticks: "", type: "category", showline: false};
  const data = [], layout = {}, titles = [], shapes = [];
  for (let l = 0; l < L; l++) {
    const top = 1 - l * (height + vGap);
    for (let h = 0; h < H; h++) {
      const n = l === 0 && h === 0 ? "" : String(l * H + h + 1), left = h * (width + hGap);
      layout[`xaxis${n}`] = Object.assign({}, axis, {domain: [left, left + width], anchor: `y${n}`});
      layout[`yaxis${n}`] = Object.assign({}, axis, {domain: [top - height, top], anchor: `x${n}`,
                                                     autorange: "reversed"});
      const off = kind.off.some(([ol, oh]) => ol === l + 1 && oh === h + 1);
      titles.push({text: `layer ${l + 1} · head ${h + 1}` + (off ? " · <b>OFF</b>" : ""), x: left + width / 2,
                   y: top, xref: "paper", yref: "paper", xanchor: "center", yanchor: "bottom", showarrow: false,
                   font: {size: 11, color: off ? "#71717a" : undefined}});
      const picked1 = picked(att, l, h, view.hide), s = view.merge ? mergedWords(picked1, axes) : picked1;
      const percent = s.w.map((row) => Array.from(row, (x) => Math.round(clamp(x, 0, 1) * 100)));
      data.push({type: "heatmap", z: percent, x: kPos, y: qPos, coloraxis: "coloraxis", xaxis: `x${n}`,
                 yaxis: `y${n}`, meta: `head=${kind.name}:${l + 1}.${h + 1}`,
                 hovertemplate: `layer ${l + 1} head ${h + 1}` + (off ? " (off)" : "") +
                                `<br>%{y} \u2192 %{x}: %{z}%<br>click: ${click}<extra></extra>`});
      if (off) { // the weights are still computed; only the head's output was zeroed
        shapes.push({type: "rect", xref: `x${n} domain`, yref: `y${n} domain`, x0: 0, x1: 1, y0: 0, y1: 1,
                     fillcolor: look.masked, opacity: 0.7, line: {color: "#52525b", width: 2}});
      }
      if (s.hidden) {
        data.push({type: "heatmap", z: s.hidden.map((row) => row.map(Number)), x: kPos, y: qPos, zmin: 0, zmax: 1,
                   showscale: false, hoverinfo: "skip", colorscale: [[0, "rgba(0,0,0,0)"], [1, look.masked]],
                   xaxis: `x${n}`, yaxis: `y${n}`});
      }
    }
  }
  Object.assign(layout, {annotations: titles, shapes, coloraxis: {colorscale: look.attention, cmin: 0, cmax: 100,
    colorbar: {title: {text: "weight"}, thickness: 12, len: 0.6, tickvals: [0, 25, 50, 75, 100],
               ticktext: ["0", "0.25", "0.5", "0.75", "1"]}}});
  return figure(look, data, layout, 50 + 170 * L, title, {l: 20, r: 20, t: 50, b: 20});
}

// ---- head statistics (viz.head_multiples) ----

/**
 * Every statistic of a kind per layer × head, a panel each (the payload's `stats`, named by `look.stats`).
 * @param {TracePayload} payload
 * @param {string} name  the kind
 * @param {Look} look
 * @returns {Figure}
 */
export function summary(payload, name, look) {
  const kind = kindOf(payload, name), st = look.stats;
  const records = payload.stats.filter((r) => r.kind === name);
  const title = `${kind.title}: what each head does (every statistic per layer × head)`;
  if (!records.length) return emptyFigure(look, `No ${kind.label} heads to show`);
  const L = Math.max(...records.map((r) => r.layer)), H = Math.max(...records.map((r) => r.head));
  const panels = st.panels.filter((p) => records.some((r) => r[p] !== null));
  const nRows = Math.ceil(panels.length / 3), nCols = Math.ceil(panels.length / nRows);
  const panel = Math.max(90, 26 * L), top = 70, bottom = 50, gap = 64;
  const height = nRows * panel + (nRows - 1) * gap + top + bottom;
  const hs = 0.07, vs = nRows > 1 ? gap / (height - top - bottom) : 0;
  const w = (1 - hs * (nCols - 1)) / nCols, h = (1 - vs * (nRows - 1)) / nRows;
  const data = [], layout = {annotations: []};
  const signed = panels.some((p) => st.signed.includes(p));
  panels.forEach((stat, n) => {
    const r = Math.floor(n / nCols), c = n % nCols, a = n ? String(n + 1) : "";
    const left = c * (w + hs), topY = 1 - r * (h + vs), label = st.labels[stat];
    const axis = {dtick: 1, ticks: "", showline: false, tickfont: {size: 10}};
    layout[`xaxis${a}`] = Object.assign({}, axis, {domain: [left, left + w], anchor: `y${a}`},
                                        r === nRows - 1 ? {title: {text: "head", standoff: 4}} : {});
    layout[`yaxis${a}`] = Object.assign({}, axis, {domain: [topY - h, topY], anchor: `x${a}`, autorange: "reversed"},
                                        c === 0 ? {title: {text: "layer", standoff: 4}} : {});
    const z = range(L).map(() => range(H).map(() => null));
    records.forEach((rec) => {
      if (rec[stat] !== null) z[rec.layer - 1][rec.head - 1] = rec[stat];
    });
    data.push({type: "heatmap", z, x: range(H).map((i) => i + 1), y: range(L).map((i) => i + 1), xaxis: `x${a}`,
               yaxis: `y${a}`, coloraxis: st.signed.includes(stat) ? "coloraxis2" : "coloraxis", xgap: 1, ygap: 1,
               texttemplate: "%{z:.2f}", textfont: {size: 10}, hoverongaps: false,
               hovertemplate: `layer %{y}, head %{x}: ${label} %{z:.2f}<extra></extra>`});
    layout.annotations.push({text: label, x: left + w / 2, y: topY, xref: "paper", yref: "paper", xanchor: "center",
                             yanchor: "bottom", showarrow: false, font: {size: 12}});
  });
  const placement = signed ? {len: 0.45, yanchor: "top", y: 1} : {len: 0.8};
  layout.coloraxis = {colorscale: look.attention, cmin: 0, cmax: 1,
                      colorbar: Object.assign({title: {text: "share, focus"}, thickness: 12}, placement)};
  if (signed) {
    layout.coloraxis2 = {colorscale: look.diverging, cmin: -1, cmax: 1,
                         colorbar: {title: {text: "correlation"}, thickness: 12, len: 0.45, yanchor: "bottom", y: 0}};
  }
  return figure(look, data, layout, height, title, {l: 60, r: 30, t: top, b: bottom});
}

// ---- predictions (viz.topk_table) ----

/**
 * The top-k next pieces at every step, the emitted one bold; a step whose piece is not in its top k in red.
 * @param {TracePayload} payload
 * @param {Look} look
 * @returns {Figure}
 */
export function topkTable(payload, look) {
  const rows = payload.top_k, n = rows.length;
  if (!n) return emptyFigure(look, "No decoder steps to show");
  const k = Math.max(...rows.map((r) => r.length));
  const z = [], text = [], hover = [], names = [];
  rows.forEach((row, t) => {
    const out = payload.pieces.output[t];
    let hit = false;
    z.push(range(k).map(() => null));
    text.push(range(k).map(() => ""));
    hover.push(range(k).map(() => ""));
    row.forEach(([piece, p], r) => {
      const chosen = piece === out, lab = label(piece, 16);
      hit = hit || chosen;
      z[t][r] = p;
      text[t][r] = chosen ? `<b>${lab}</b>` : lab;
      hover[t][r] = `step ${t + 1}: ${label(piece)}<br>p = ${p.toFixed(3)}` +
        (chosen ? "<br>(emitted)" : "<br>(click: continue from it)");
    });
    const name = `${t + 1} ${label(out, 16)}`;
    names.push(hit ? name : `<span style="color:#dc2626">${name}</span>`);
  });
  const data = [{type: "heatmap", z, x: range(k).map((r) => `#${r + 1}`), y: range(n), text, customdata: hover,
                 meta: "branch",
                 texttemplate: "%{text}", textfont: {size: 11}, colorscale: look.probability, zmin: 0, zmax: 1,
                 xgap: 2, ygap: 2, hoverongaps: false, hovertemplate: "%{customdata}<extra></extra>",
                 colorbar: {title: {text: "probability"}, thickness: 12, len: 0.8}}];
  const layout = {yaxis: {tickmode: "array", tickvals: range(n), ticktext: names, autorange: "reversed",
                          title: {text: "step · emitted token"}},
                  xaxis: {side: "top", title: {text: "rank"}}};
  return figure(look, data, layout, cellHeight(n, 26, 260, 1400, 90), "Top-k next pieces at every step (bold: emitted)",
                {l: 120, t: 60});
}

// ---- positional encoding (paper §3.5; transformer.model.sinusoidal_positional_encoding) ----

/**
 * PE(pos, i) for `positions` positions and d dimensions: sin(pos / 10000^(2i/d)) at 2i, cos at 2i + 1
 * ("interleaved", the paper's), or every sine first and then every cosine ("split", Marian's).
 * @param {number} positions
 * @param {number} d
 * @param {string} layout
 * @returns {number[][]}
 */
export function positionalTable(positions, d, layout) {
  const sines = Math.ceil(d / 2);
  return range(positions).map((pos) => {
    const row = new Array(d);
    for (let i = 0; 2 * i < d; i++) {
      const angle = pos / Math.pow(10000, (2 * i) / d);
      if (layout === "split") {
        row[i] = Math.sin(angle);
        if (sines + i < d) row[sines + i] = Math.cos(angle);
      } else {
        row[2 * i] = Math.sin(angle);
        if (2 * i + 1 < d) row[2 * i + 1] = Math.cos(angle);
      }
    }
    return row;
  });
}

/**
 * A dimension's wave: sin or cos, and its wavelength in positions.
 * @returns {[string, number]}
 */
function wave(dim, d, layout) {
  let kind, twoI;
  if (layout === "split") {
    const half = Math.floor(d / 2);
    [kind, twoI] = dim < half ? ["sin", 2 * dim] : ["cos", 2 * (dim - half)];
  } else {
    [kind, twoI] = [dim % 2 === 0 ? "sin" : "cos", dim - (dim % 2)];
  }
  return [kind, 2 * Math.PI * Math.pow(10000, twoI / d)];
}

/**
 * The positional encoding: the table, chosen dimensions as curves, the similarity of positions, and the encodings
 * added to the source's pieces. The table and the curves are two figures, not two subplots of one: each colorbar
 * has the room Plotly makes beside its own figure (in one figure it lay over the table once a margin grew).
 * @param {Positional} p
 * @param {string[]} source  the source pieces
 * @param {Look} look
 * @returns {{table: Figure, curves: Figure, similarity: Figure, rows: Figure}}
 */
export function positional(p, source, look) {
  const d = p.d_model, pe = positionalTable(p.max_len, d, p.layout);
  const order = p.layout === "split" ? ", all sines, then all cosines" : "";
  const table = figure(look, [{type: "heatmap", z: pe, x: range(d), y: range(p.max_len), colorscale: look.diverging,
                                zmin: -1, zmax: 1, hovertemplate: "pos %{y}, dim %{x}<br>%{z:.3f}<extra></extra>",
                                colorbar: {thickness: 10, len: 0.8}}],
                       {xaxis: {title: {text: "dimension i"}},
                        yaxis: {autorange: "reversed", title: {text: "position"}}},
                       430, `Sinusoidal positional encoding PE(pos, i) (d_model = ${d}, ${p.max_len} positions` +
                       `${order})`);
  const lines = p.dims.map((dim, n) => {
    const [kind, wavelength] = wave(dim, d, p.layout);
    return {type: "scatter", x: range(p.max_len), y: pe.map((row) => row[dim]), mode: "lines",
            line: {color: look.heads[n % look.heads.length]},
            name: `dim ${dim} (${kind}, λ≈${Math.round(wavelength).toLocaleString("en-US")})`,
            hovertemplate: `dim ${dim}<br>pos %{x}: %{y:.3f}<extra></extra>`};
  });
  const curves = figure(look, lines, {
    xaxis: {title: {text: "position"}}, yaxis: {range: [-1.1, 1.1], showgrid: true, gridcolor: "#f3f4f6"},
    showlegend: true, legend: {orientation: "h", y: -0.25, x: 0, font: {size: 11}}},
  430, "The chosen dimensions of PE, along the positions", {b: 90});
  const sim = pe.map((a) => pe.map((b) => a.reduce((s, x, i) => s + x * b[i], 0) / d));
  const similarity = figure(look, [{type: "heatmap", z: sim, x: range(p.max_len), y: range(p.max_len),
                                    colorscale: look.attention, colorbar: {thickness: 10},
                                    hovertemplate: "pos %{y} · pos %{x}<br>%{z:.3f}<extra></extra>"}],
                            {yaxis: {autorange: "reversed", title: {text: "position p"}, scaleanchor: "x"},
                             xaxis: {title: {text: "position q"}, constrain: "domain"}},
                            430, "PE(p) · PE(q) / d_model");
  const n = Math.min(source.length, p.max_len);
  const ticks = source.slice(0, n).map((t, i) => `${i} ${label(t)}`);
  const rows = n ? figure(look, [{type: "heatmap", z: pe.slice(0, n), x: range(d), y: range(n),
                                  colorscale: look.diverging, zmin: -1, zmax: 1, colorbar: {thickness: 10},
                                  hovertemplate: "position %{y} · dim %{x}<br>PE = %{z:.3f}<extra></extra>"}],
                          {yaxis: {tickmode: "array", tickvals: range(n), ticktext: ticks, autorange: "reversed",
                                   title: {text: "source position · piece"}},
                           xaxis: {title: {text: "dimension i"}}},
                          cellHeight(n, 20, 260, 1400, 100), "The encodings added to this input's pieces", {l: 120})
    : emptyFigure(look, "No source pieces");
  return {table, curves, similarity, rows};
}


// ---- export names (attention_views.export_name) ----

/**
 * A figure's download name without extension: direction, step for the step panels, kind, layer, head, how the
 * large view draws it when not as a heatmap, "no-special" when special tokens are hidden; `figure` names one that
 * is not the large view ("step-cross", "step-self", "step-topk", "grid", "trained", "untrained").
 * @param {TracePayload} payload
 * @param {View & {query: number, method?: string}} view  fitted
 * @param {string} [figure]
 */
export function exportName(payload, view, figure = "") {
  const key = payload.model.key;
  const shown = kindOf(payload, {"step-cross": "cross", "step-self": "decoder"}[figure] || view.kind);
  const kind = shown.label.replace(/ /g, "-");
  let head = view.head === MEAN ? "mean-of-heads" : `head${view.head}`;
  const step = figure.startsWith("step") ? `step${view.step}_` : "";
  const special = view.hide && figure !== "step-topk" ? ["no-special"] : [];
  const words = view.merge ? ["words"] : [];
  if (figure === "step-topk") return `${key}_${step}next-piece-probabilities`;
  if (figure === "logit-lens") return `${key}_step${view.step}_logit-lens`;
  if (figure === "logit-lens-all") return `${key}_logit-lens`;
  if (figure === "why") return [`${key}_step${view.step}_why_${view.method}`, ...words, ...special].join("_");
  if (figure === "why-all") return [`${key}_why_${view.method}`, ...words, ...special].join("_");
  if (figure === "why-shares") return `${key}_source-shares`;
  if (figure === "why-agree") return `${key}_step${view.step}_attention-agreement`;
  if (figure === "grid") return [`${key}_${kind}_all-heads`, ...words, ...special].join("_");
  if (!figure && view.display === "walk") {
    head = view.head === MEAN ? "head1" : head;
    const where = shown.stepped ? `step${view.step}` : `query${view.query}`;
    return `${key}_${kind}_layer${view.layer}_${head}_walk-${where}`;
  }
  const display = !figure && view.display === "lines" ? ["lines"] : [];
  return [`${key}_${step}${kind}`, `layer${view.layer}`, head, ...words, ...display,
          ...(["trained", "untrained"].includes(figure) ? [figure] : []), ...special].join("_");
}

// ---- one query through equation 1 (the softmax walk) ----

/**
 * @typedef {{kind: string, layer: number, head: number, row: number, query: string | string[], keys: string[],
 *   q: number[], k: number[][], v: number[][], visible: boolean[]}} Vectors  one query's q (its row in the kind's
 *   attention, from 0), each key's k and v and which keys the mask lets it see, of one head (layer and head from
 *   1), as the model computed them (ui/handlers/asks.py `walk`)
 */

/**
 * Each stage of softmax(q·kᵀ / √d_k) · V for one query, in float64: q·k_j, ÷√d_k, the mask, the softmax over
 * the visible keys, and the output Σ_j softmax_j v_j.
 * @param {Vectors} w
 */
export function walkStages(w) {
  const dK = w.q.length;
  const scores = w.k.map((k) => k.reduce((s, x, i) => s + x * w.q[i], 0));
  const scaled = scores.map((s) => s / Math.sqrt(dK));
  const top = Math.max(...scaled.filter((_, j) => w.visible[j]));
  const exp = scaled.map((s, j) => w.visible[j] ? Math.exp(s - top) : 0);
  const total = exp.reduce((a, b) => a + b, 0);
  const weights = exp.map((e) => e / total);
  const output = w.q.map((_, i) => weights.reduce((s, p, j) => s + p * w.v[j][i], 0));
  return {scores, scaled, weights, output};
}

// make_subplots' domains: widths (or heights) in proportion, with a gap between neighbours, from the start.
function domains(sizes, gap) {
  const total = sizes.reduce((a, b) => a + b, 0), room = 1 - gap * (sizes.length - 1);
  let at = 0;
  return sizes.map((s) => {
    const d = [at, at + room * s / total];
    at = d[1] + gap;
    return d;
  });
}

/**
 * The softmax walk: q and each k_j, q·k_j, ÷√d_k, the mask (−∞ where it hides k_j), the softmax, and the output
 * beside each v_j; every trace named by its stage.
 * @param {Vectors} w
 * @param {View} view  fitted: its ▁ choice labels the pieces, its head, words and hiding say what a note says
 * @param {Look} look
 * @param {string} title  the kind's title
 * @returns {Figure}
 */
export function walkFigure(w, view, look, title) {
  const dK = w.q.length, Tk = w.keys.length;
  if (!Tk) return emptyFigure(look, "Nothing to show: no keys");
  const keys = view.plain ? w.keys.map(plainLabel) : w.keys;
  const query = view.plain ? (Array.isArray(w.query) ? w.query.map(plainLabel) : plainLabel(w.query)) : w.query;
  const kLab = keys.map((k, j) => `${j + 1} ${label(k)}`), qLab = queryLabel(query);
  const dims = range(dK).map((i) => i + 1);
  const {scores, scaled, weights, output} = walkStages(w);
  const stage = ["q·k", `÷√${dK}`, "mask", "soft-<br>max"];
  // row 1 (q, the output) on top, row 2 (every key) below it
  const cols = domains([0.3, 0.1, 0.1, 0.1, 0.1, 0.3], 0.012), rows = domains([Tk, 1.6], 0.04).reverse();
  const layout = {annotations: []};
  const cell = (r, c) => { // axes of row r, column c (from 1), as make_subplots names them
    const n = (r - 1) * 6 + c, name = n === 1 ? "" : String(n);
    const axis = {showticklabels: false, ticks: "", showline: false};
    layout[`xaxis${name}`] = Object.assign({}, axis, {domain: cols[c - 1], anchor: `y${name}`});
    layout[`yaxis${name}`] = Object.assign({}, axis, {domain: rows[r - 1],
                                                      anchor: `x${name}`, autorange: "reversed", type: "category"},
                                           c === 1 ? {showticklabels: true, tickfont: {size: 11}} : {});
    return {xaxis: `x${name}`, yaxis: `y${name}`};
  };
  const heading = (text, r, c, size) => layout.annotations.push({
    text, x: (cols[c - 1][0] + cols[c - 1][1]) / 2, y: rows[r - 1][1], xref: "paper", yref: "paper",
    xanchor: "center", yanchor: "bottom", showarrow: false, font: {size}});
  const vmax = Math.max(...[w.q, ...w.k, ...w.v, output].flat().map(Math.abs), 1e-6);
  const smax = Math.max(...scores.filter((_, j) => w.visible[j]).map(Math.abs), 1e-6);
  const vector = (name, z, y, r, c, hover) => Object.assign({type: "heatmap", name, z, x: dims, y,
    coloraxis: "coloraxis", xgap: 0, ygap: 1, hovertemplate: `${hover}, dim %{x}: %{z:.4f}<extra></extra>`},
  cell(r, c));
  /** @type {Object[]} */
  const data = [vector("q", [w.q], ["q"], 1, 1, "q"), vector("k", w.k, kLab, 2, 1, "k of %{y}"),
                vector("output", [output], ["output"], 1, 6, "output"), vector("v", w.v, kLab, 2, 6, "v of %{y}")];
  /** @type {[string, (number | null)[], string, string[]][]} */
  const stages = [["q·k", scores, "coloraxis2", scores.map((s) => s.toFixed(1))],
                  ["scaled", scaled, "coloraxis2", scaled.map((s) => s.toFixed(2))],
                  ["masked", scaled.map((s, j) => w.visible[j] ? s : null), "coloraxis2",
                   scaled.map((s, j) => w.visible[j] ? s.toFixed(2) : "\u2212\u221e")],
                  ["softmax", weights, "coloraxis3", weights.map((s) => s.toFixed(2))]];
  stages.forEach(([name, z, axis, text], n) => data.push(Object.assign({
    type: "heatmap", name, z: z.map((x) => [x]), x: [name], y: kLab, coloraxis: axis, text: text.map((t) => [t]),
    texttemplate: "%{text}", textfont: {size: 11}, ygap: 1, hoverongaps: true,
    hovertemplate: `${name} for %{y}: ` + (name === "masked" ? "%{text}" : "%{z:.4f}") + "<extra></extra>"},
  cell(2, n + 2))));
  for (let c = 2; c <= 5; c++) cell(1, c); // the empty cells above the stages keep make_subplots' axes
  heading(`q (${qLab})`, 1, 1, 12);
  heading("output: \u03a3 softmax_j v_j", 1, 6, 12);
  heading("k_j", 2, 1, 12);
  stage.forEach((text, n) => heading(text, 2, n + 2, 10));
  heading("v_j", 2, 6, 12);
  // the mean of heads has no single q: the title says which head this is, where the head is read
  const one = view.head === MEAN ? " (the mean of heads has no single q)" : "";
  const note = !one && (view.hide || view.merge)
    ? "The walk is the model's own computation: every piece, special tokens included." : null;
  if (note) {
    layout.annotations.push({text: note, x: 0, y: 0, xref: "paper", yref: "paper", yanchor: "top", xanchor: "left",
                             yshift: -6, showarrow: false, font: {size: 12, color: "#52525b"}});
  }
  Object.assign(layout, {
    plot_bgcolor: look.masked,
    coloraxis: {colorscale: look.diverging, cmin: -vmax, cmax: vmax, showscale: false},
    coloraxis2: {colorscale: look.diverging, cmin: -smax, cmax: smax, showscale: false},
    coloraxis3: {colorscale: look.attention, cmin: 0, cmax: 1, showscale: false}});
  const long = longest(kLab, 20);
  return figure(look, data, layout, 160 + 24 * (Tk + 2) + (note ? 24 : 0),
                `${title} · layer ${w.layer}, head ${w.head}${one}<br>query ${qLab}: ` +
                `softmax(q·k\u1d40 / \u221a${dK}) V, step by step`,
                {l: 20 + 7 * long, r: 20, t: 90, b: 20 + (note ? 28 : 0)});
}

// ---- which heads a translation needs (anatomy/ablation_views.py sends the maps' values) ----

// px: a layer row (two lines of text), between kinds, a title (two lines: the kind, the measure), a legend's lines
const MAP_ROW = 34, MAP_GAP = 56, MAP_TITLE = 38, MAP_LEGEND = 13;

/**
 * @typedef {{title: string, colorscale: Array, zmin: number, zmax: number, legend?: string[]}} Measure  one
 *   column of maps; `legend`: lines under its title saying what its colours mean (which way a head helps)
 * @typedef {{title: string, measures: Measure[], off: string[], kinds: {name: string, label: string,
 *   values: number[][][], notes: (string[][] | null)[]}[]}} Maps  per kind and measure a (layers, heads) array
 */

/**
 * Per-head maps side by side: one row per attention kind, one column per measure, each cell its value (and its
 * note); a cell's customdata names its head ("head=KIND:LAYER.HEAD") for a click; the heads that are off greyed.
 * @param {Maps} m
 * @param {Look} look
 * @returns {Figure}
 */
export function importanceMaps(m, look) {
  const legend = Math.max(0, ...m.measures.map((measure) => (measure.legend || []).length));
  const title = MAP_TITLE + MAP_LEGEND * legend;
  const heights = m.kinds.map((k) => k.values[0].length), blocks = heights.map((L) => title + MAP_ROW * L);
  const plot = blocks.reduce((a, b) => a + b, 0) + MAP_GAP * (m.kinds.length - 1);
  const nCols = m.measures.length, colGap = 0.06, width = (1 - colGap * (nCols - 1)) / nCols;
  const data = [], layout = {}, annotations = [], shapes = [];
  const axis = {showgrid: false, zeroline: false, ticks: "", showline: false, tickfont: {size: 10}, dtick: 1};
  let y = plot; // px from the bottom of the plotting area to the top of the next kind's block
  m.kinds.forEach((kind, i) => {
    const L = heights[i], top = (y - title) / plot, bottom = (y - title - MAP_ROW * L) / plot;
    m.measures.forEach((measure, j) => {
      const n = i * nCols + j + 1, name = n === 1 ? "" : String(n), left = j * (width + colGap);
      const z = kind.values[j], H = z[0].length, notes = kind.notes[j];
      const text = z.map((row, l) => row.map((x, h) => x.toFixed(2) + (notes ? `<br>${escape(notes[l][h])}` : "")));
      data.push({type: "heatmap", z, x: range(H).map((h) => h + 1), y: range(L).map((l) => l + 1), text,
                 texttemplate: "%{text}", textfont: {size: 10},
                 customdata: z.map((row, l) => row.map((_, h) => `head=${kind.name}:${l + 1}.${h + 1}`)),
                 xgap: 1, ygap: 1, zmin: measure.zmin, zmax: measure.zmax, colorscale: measure.colorscale,
                 showscale: false, xaxis: `x${name}`, yaxis: `y${name}`,
                 hovertemplate: `${escape(kind.label)} layer %{y} head %{x}<br>${escape(measure.title)}: ` +
                                "%{text}<br>click: switch this head off/on<extra></extra>"});
      layout[`xaxis${name}`] = Object.assign({}, axis, {domain: [left, left + width], anchor: `y${name}`,
                                                        title: {text: "head", standoff: 2, font: {size: 10}}});
      layout[`yaxis${name}`] = Object.assign({}, axis, {domain: [bottom, top], anchor: `x${name}`,
                                                        autorange: "reversed"},
                                             j === 0 ? {title: {text: "layer", standoff: 2, font: {size: 10}}} : {});
      const lines = (measure.legend || []).map((line) => `<br><span style="font-size:10px">${escape(line)}</span>`);
      annotations.push({text: `<b>${escape(kind.label)}</b><br>${escape(measure.title)}${lines.join("")}`, x: left,
                        y: top,
                        xref: "paper", yref: "paper", xanchor: "left", yanchor: "bottom", align: "left",
                        showarrow: false, font: {size: 12}});
      for (const head of m.off) {
        const found = /^(\w+):(\d+)\.(\d+)$/.exec(head);
        if (!found || found[1] !== kind.name || +found[2] > L || +found[3] > H) continue;
        const [l, h] = [+found[2], +found[3]];
        shapes.push({type: "rect", xref: `x${name}`, yref: `y${name}`, x0: h - 0.5, x1: h + 0.5, y0: l - 0.5,
                     y1: l + 0.5, fillcolor: look.masked, opacity: 0.6, line: {color: "#52525b", width: 2}});
        annotations.push({text: "<b>OFF</b>", x: h + 0.45, y: l - 0.45, xref: `x${name}`, yref: `y${name}`,
                          xanchor: "right", yanchor: "top", showarrow: false, font: {size: 9, color: "#18181b"}});
      }
    });
    y -= blocks[i] + MAP_GAP;
  });
  Object.assign(layout, {annotations, shapes});
  const top = m.title ? 80 : 50;
  return figure(look, data, layout, top + 40 + plot, m.title, {l: 50, r: 20, t: top, b: 40});
}

/**
 * Per piece of the all-heads translation, the change in its log p when the heads are off (after − before).
 * @param {{pieces: string[], before: number[], after: number[], title: string}} c
 * @param {Look} look
 * @returns {Figure}
 */
export function logProbChange(c, look) {
  const delta = c.after.map((a, i) => a - c.before[i]);
  const data = [{type: "bar", x: c.pieces.map((p, i) => `${i + 1} ${escape(p)}`), y: delta,
                 marker: {color: delta.map((d) => d < 0 ? "#dc2626" : "#2563eb")},
                 customdata: c.before.map((b, i) => [b, c.after[i]]),
                 hovertemplate: "%{x}<br>log p %{customdata[0]:.2f} \u2192 %{customdata[1]:.2f} (%{y:+.2f})" +
                                "<extra></extra>"}];
  const layout = {xaxis: {type: "category", tickangle: -45, title: {text: "output piece of the original translation"}},
                  yaxis: {title: {text: "\u0394 log p (heads off \u2212 all on)"}, zeroline: true,
                          zerolinecolor: "#9ca3af"}};
  return figure(look, data, layout, 300, c.title, {l: 60, r: 20, t: 40, b: 90});
}

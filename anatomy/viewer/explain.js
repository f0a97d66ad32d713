// Why this word: each produced piece's attribution to the source and the target prefix (transformer/explain.py),
// the share of each from the source, and the logit lens, drawn from the payload's optional part `explain`
// (anatomy/payload.py `explain_payload`). Pieces merge into the payload's words and special tokens hide as in the
// attention views; nothing here splits or joins pieces. Pure: no DOM, no Plotly.

import {figure, kindOf} from "./figures.js";
import {label, plainLabel} from "./labels.js";
import {attention, headWeights, meanOf, traceKey} from "./payload.js";
import {hasNorms, weighted} from "./weights.js";
import {axesOf} from "./words.js";

/**
 * @typedef {import("./payload.js").TracePayload} TracePayload
 * @typedef {import("./figures.js").Look} Look
 * @typedef {import("./figures.js").View} View
 * @typedef {import("./figures.js").Figure} Figure
 * @typedef {{label: string, steps: number[], source: number[][], prefix?: number[][], score: number[],
 *   baseline?: number[], path_steps?: number, words?: number[][]}} Method  one method's attribution of some
 *   steps (rows): each source piece's part (occlusion: each source word's), each decoder input piece's
 * @typedef {{layers: number, normed: boolean, tokens: string[][][], probs: number[][][]}} Lens  per decoder layer,
 *   per step, the top pieces and their probabilities
 * @typedef {{step: number, foil: string, asked: string, methods: Object<string, Method>}} Contrast
 * @typedef {{of: Array, lens: Lens, methods: Object<string, Method>, shares: number[][],
 *   contrast: Contrast | null}} Explain
 * @typedef {{labels: string[], values: number[]}} Bars
 */

export const METHODS = ["ig", "grad", "occlusion"];
const RAISED = "#dc2626", LOWERED = "#2563eb", SOURCE = "#0d9488", PREFIX = "#f97316";
const range = (n) => Array.from({length: n}, (_, i) => i);
const sum = (values) => values.reduce((a, b) => a + b, 0);

// What Why this word says of a translation stopped before its first piece (in the app and the offline file)
export const NOTHING_TO_EXPLAIN = "Nothing was decoded: no piece to explain.";

/**
 * The explanation, when it is of this payload's translation (the server sends it only when asked: an older
 * translation's, or the same sentence's with other heads off, would be wrong at every step).
 * @param {Explain | null} explain
 * @param {TracePayload} payload
 */
export const explainsPayload = (explain, payload) => !!explain && JSON.stringify(explain.of) === traceKey(payload);

const pieceLabel = (piece, plain, max) => plain ? label(plainLabel(piece), max) : label(piece, max);

/**
 * One row of a method's source parts as the view shows the source: pieces or (merge) words summed over their
 * pieces, special tokens dropped with `hide`; occlusion's parts are already per word.
 * @param {TracePayload} payload
 * @param {Method} m
 * @param {number[]} row  the method's source parts at one step
 * @param {View} view
 * @returns {Bars}
 */
export function sourceBars(payload, m, row, view) {
  const cross = kindOf(payload, "cross"), axes = axesOf(cross, view.hide);
  if (m.words) { // occlusion: per word, a word of only hidden pieces left out
    const shown = new Set(axes.cols), all = cross.axes.all;
    const kept = range(m.words.length).filter((w) => m.words[w].some((j) => shown.has(j)));
    return {labels: kept.map((w) => label(all.key_words[w])), values: kept.map((w) => row[w])};
  }
  if (view.merge) {
    return {labels: axes.key_words.map((w) => label(w)),
            values: axes.key_groups.map((g) => sum(g.map((c) => row[axes.cols[c]])))};
  }
  return {labels: axes.cols.map((j, c) => pieceLabel(axes.keys[c], view.plain)),
          values: axes.cols.map((j) => row[j])};
}

/**
 * One row of a method's prefix parts at step `t` (from 0): the decoder input pieces up to t (the ones step t
 * read), as pieces or words (a word still being written cut at t), special tokens dropped with `hide`.
 * @param {TracePayload} payload
 * @param {number[]} row
 * @param {number} t
 * @param {View} view
 * @returns {Bars}
 */
export function prefixBars(payload, row, t, view) {
  const axes = axesOf(kindOf(payload, "decoder"), view.hide);
  const read = range(axes.cols.length).filter((c) => axes.cols[c] <= t);
  if (view.merge) {
    const groups = axes.key_groups.map((g) => g.filter((c) => axes.cols[c] <= t)).filter((g) => g.length);
    return {labels: groups.map((g) => label(axes.key_prefix_words[g[g.length - 1]])),
            values: groups.map((g) => sum(g.map((c) => row[axes.cols[c]])))};
  }
  return {labels: read.map((c) => pieceLabel(axes.keys[c], view.plain)), values: read.map((c) => row[axes.cols[c]])};
}

/**
 * What the step view shows: the method's parts at step `t` (from 0), against the contrast's foil when one was
 * asked for at this step.
 * @param {Explain} explain
 * @param {TracePayload} payload
 * @param {View & {method: string}} view
 * @param {number} t
 */
export function stepParts(explain, payload, view, t) {
  const name = METHODS.includes(view.method) ? view.method : METHODS[0];
  const contrast = explain.contrast && explain.contrast.step === t ? explain.contrast : null;
  const m = (contrast ? contrast.methods : explain.methods)[name];
  const r = m.steps.indexOf(t);
  return {name, m, contrast, score: m.score[r], baseline: m.baseline ? m.baseline[r] : null,
          source: sourceBars(payload, m, m.source[r], view),
          prefix: m.prefix ? prefixBars(payload, m.prefix[r], t, view) : null};
}

const signed = (x) => (x >= 0 ? "+" : "−") + Math.abs(x).toFixed(3);

/**
 * Why the piece of the view's step: a bar per source piece (or word) and per prefix piece, red where it raised
 * f = log p(piece) (− log p(foil) against one), blue where it lowered it; the method the view names.
 * @param {Explain} explain
 * @param {TracePayload} payload
 * @param {View & {method: string}} view  fitted
 * @param {Look} look
 * @returns {Figure}
 */
export function whyStep(explain, payload, view, look) {
  const t = view.step - 1, out = payload.pieces.output[t];
  const {name, m, contrast, score, baseline, source, prefix} = stepParts(explain, payload, view, t);
  const bars = prefix ? [...source.values, ...prefix.values] : source.values;
  const labels = prefix ? [...source.labels, ...prefix.labels] : source.labels;
  const x = range(bars.length).map((i) => i + (prefix && i >= source.values.length ? 1 : 0)); // a gap between
  const f = contrast ? `log p(${label(out, 16)}) − log p(${label(contrast.foil, 16)})` : `log p(${label(out, 16)})`;
  const data = [{type: "bar", x, y: bars, marker: {color: bars.map((v) => v >= 0 ? RAISED : LOWERED)},
                 customdata: labels, hovertemplate: `%{customdata}: %{y:.4f}<extra></extra>`}];
  const top = Math.max(...bars.map(Math.abs), 1e-9);
  const shapes = [], annotations = [{text: "source", x: (source.values.length - 1) / 2, y: 1.02, xref: "x",
                                     yref: "paper", showarrow: false, font: {color: SOURCE}}];
  if (prefix) {
    const split = source.values.length;
    shapes.push({type: "line", x0: split, x1: split, y0: 0, y1: 1, yref: "paper",
                 line: {color: "#9ca3af", dash: "dot"}});
    annotations.push({text: "target prefix (read at this step)", x: split + 1 + (prefix.values.length - 1) / 2,
                      y: 1.02, xref: "x", yref: "paper", showarrow: false, font: {color: PREFIX}});
  }
  const what = name === "occlusion" ? "each source word's pieces set to the baseline (source words only)"
    : name === "ig" ? `from a zero-embedding baseline in ${m.path_steps} steps; the bars add up to f − f(baseline) = ` +
      `${signed(score - baseline)}`
      : "embedding × gradient, summed over the embedding";
  const title = (contrast ? `Why “${label(out, 16)}” and not “${label(contrast.foil, 16)}” at step ${t + 1}?`
    : `Why “${label(out, 16)}” at step ${t + 1}?`) + ` · ${m.label}: red raised f = ${f}, blue lowered it · ${what}`;
  const layout = {xaxis: {tickmode: "array", tickvals: x, ticktext: labels, tickangle: -45},
                  yaxis: {title: {text: contrast ? "part of the log-prob difference" : "part of log p"},
                          range: [-top * 1.1, top * 1.1], zeroline: true},
                  shapes, annotations, bargap: 0.25};
  return figure(look, data, layout, 380, title, {l: 70, t: 90, b: 110});
}

/**
 * Where each piece came from: for every step, the share of the evidence for its piece (its positive integrated
 * gradients) that came from the source and from the target prefix, summing to 100 %; the view's step framed.
 * @param {Explain} explain
 * @param {TracePayload} payload
 * @param {View} view  fitted
 * @param {Look} look
 * @returns {Figure}
 */
export function whyShares(explain, payload, view, look) {
  const out = payload.pieces.output, T = out.length, x = range(T);
  const names = out.map((p, t) => `${t + 1} ${pieceLabel(p, view.plain, 12)}`);
  const part = (i, name, color) => ({type: "bar", name, x, y: explain.shares.map((s) => 100 * s[i]),
                                     marker: {color}, customdata: names,
                                     hovertemplate: `%{customdata}: %{y:.1f} % ${name}<extra></extra>`});
  const s = view.step - 1;
  const layout = {barmode: "stack", bargap: 0.15,
                  xaxis: {tickmode: "array", tickvals: x, ticktext: names, tickangle: -50,
                          title: {text: "step · emitted piece"}},
                  yaxis: {range: [0, 100], ticksuffix: " %", title: {text: "share of the evidence"}},
                  legend: {orientation: "h", y: 1.02, yanchor: "bottom", x: 1, xanchor: "right"},
                  shapes: [{type: "rect", x0: s - 0.5, x1: s + 0.5, y0: 0, y1: 100, line: {color: "#111827", width: 2},
                            name: "step-frame"}]};
  return figure(look, [part(0, "source", SOURCE), part(1, "target prefix", PREFIX)], layout, 340,
                "Where each piece came from · the share of the evidence for it (its positive integrated " +
                "gradients) from the source and from the pieces written before it", {l: 70, t: 80, b: 110});
}

/**
 * The method's attribution of every step at once: a row per step, the source's pieces (or words) then the
 * target prefix's, red raised, blue lowered; cells after a step's own piece are empty (the mask hides them).
 * @param {Explain} explain
 * @param {TracePayload} payload
 * @param {View & {method: string}} view  fitted
 * @param {Look} look
 * @returns {Figure}
 */
export function whyTranslation(explain, payload, view, look) {
  const name = METHODS.includes(view.method) ? view.method : METHODS[0], m = explain.methods[name];
  const out = payload.pieces.output, T = out.length;
  const rows = range(T).map((t) => {
    const src = sourceBars(payload, m, m.source[t], view);
    if (!m.prefix) return {src, pre: null};
    const full = prefixBars(payload, m.prefix[t], T - 1, view); // every column, then those after t emptied
    const seen = prefixBars(payload, m.prefix[t], t, view).values.length;
    return {src, pre: {labels: full.labels, values: full.values.map((v, c) => c < seen ? v : null)}};
  });
  const P = rows[0].pre ? rows[0].pre.values.length : 0;
  const parts = rows.map(({src, pre}) => pre ? [...src.values, null, ...pre.values] : src.values);
  // each step scaled by its largest part: one step's large parts (the first step's <s>) would wash out the others
  const z = parts.map((row) => {
    const top = Math.max(...row.filter((v) => v !== null).map(Math.abs), 1e-9);
    return row.map((v) => v === null ? null : v / top);
  });
  const labels = P ? [...rows[0].src.labels, "", ...rows[0].pre.labels] : rows[0].src.labels;
  const names = out.map((p, t) => `${t + 1} ${pieceLabel(p, view.plain, 12)}`);
  const s = view.step - 1;
  const data = [{type: "heatmap", z, x: range(labels.length), y: range(T), colorscale: look.diverging,
                 reversescale: true, zmin: -1, zmax: 1, hoverongaps: false, xgap: 1, ygap: 1,
                 customdata: parts.map((row, t) => row.map((v, c) => v === null ? ""
                   : `${labels[c]} → step ${t + 1} ${pieceLabel(out[t], view.plain)}: ${v.toFixed(4)}`)),
                 hovertemplate: "%{customdata}<extra></extra>",
                 colorbar: {title: {text: "÷ the step's largest", side: "right"}, thickness: 12, len: 0.8}}];
  const layout = {xaxis: {tickmode: "array", tickvals: range(labels.length), ticktext: labels, tickangle: -50},
                  yaxis: {tickmode: "array", tickvals: range(T), ticktext: names, autorange: "reversed",
                          title: {text: "step · emitted piece"}},
                  shapes: [{type: "rect", x0: -0.5, x1: labels.length - 0.5, y0: s - 0.5, y1: s + 0.5,
                            line: {color: "#111827", width: 2}, name: "step-frame"}]};
  const what = P ? "source, then the target prefix" : "source words only";
  return figure(look, data, layout, Math.min(1400, Math.max(300, 24 * T + 200)),
                `${m.label[0].toUpperCase()}${m.label.slice(1)} of every step · ${what}: red raised the piece's ` +
                "log p, blue lowered it · each row scaled by its largest part", {l: 120, t: 60, b: 110});
}

// ---- the logit lens (transformer.translator.LogitLens) ----

const lensRead = (lens) => lens.normed ? "its output through the final layer norm and the output projection"
  : "its output through the output projection";

/**
 * What each decoder layer would predict at one step: a row per layer (the last at the bottom), its top pieces by
 * rank; the emitted piece bold.
 * @param {Lens} lens
 * @param {TracePayload} payload
 * @param {number} step  from 1
 * @param {Look} look
 * @returns {Figure}
 */
export function lensStep(lens, payload, step, look) {
  const t = Math.min(Math.max(step, 1), lens.tokens[0].length) - 1, k = lens.tokens[0][t].length;
  const out = payload.pieces.output[t], layers = range(lens.layers);
  const text = layers.map((l) => lens.tokens[l][t].map((p) => p === out ? `<b>${label(p, 14)}</b>` : label(p, 14)));
  const hover = layers.map((l) => lens.tokens[l][t].map((p, r) =>
    `layer ${l + 1}, #${r + 1}: ${label(p)}<br>p = ${lens.probs[l][t][r].toFixed(3)}`));
  const data = [{type: "heatmap", z: layers.map((l) => lens.probs[l][t]), x: range(k),
                 y: layers, text, customdata: hover, texttemplate: "%{text}", textfont: {size: 11},
                 colorscale: look.probability, zmin: 0, zmax: 1, xgap: 2, ygap: 2,
                 hovertemplate: "%{customdata}<extra></extra>",
                 colorbar: {title: {text: "probability"}, thickness: 12, len: 0.8}}];
  const layout = {yaxis: {tickmode: "array", tickvals: layers, ticktext: layers.map((l) => `layer ${l + 1}`),
                          autorange: "reversed"},
                  xaxis: {side: "top", tickmode: "array", tickvals: range(k),
                          ticktext: range(k).map((r) => `rank ${r + 1}`)}};
  return figure(look, data, layout, 140 + 44 * lens.layers,
                `Logit lens at step ${t + 1} → ${label(out, 16)} · each decoder layer's top pieces (${lensRead(lens)})`,
                {l: 80, t: 70});
}

/**
 * The logit lens over the whole translation: a row per decoder layer, a column per step, each cell that layer's
 * top piece and its probability; the emitted piece bold, the step framed.
 * @param {Lens} lens
 * @param {TracePayload} payload
 * @param {number} step  from 1
 * @param {Look} look
 * @returns {Figure}
 */
export function lensTranslation(lens, payload, step, look) {
  const T = lens.tokens[0].length, layers = range(lens.layers), out = payload.pieces.output;
  const text = layers.map((l) => range(T).map((t) => {
    const p = lens.tokens[l][t][0];
    return p === out[t] ? `<b>${label(p, 10)}</b>` : label(p, 10);
  }));
  const hover = layers.map((l) => range(T).map((t) =>
    `layer ${l + 1}, step ${t + 1}: ${label(lens.tokens[l][t][0])} (p = ${lens.probs[l][t][0].toFixed(3)})` +
    `<br>emitted: ${label(out[t])}`));
  const data = [{type: "heatmap", z: layers.map((l) => range(T).map((t) => lens.probs[l][t][0])), x: range(T),
                 y: layers, text, customdata: hover, texttemplate: "%{text}", textfont: {size: 10},
                 colorscale: look.probability, zmin: 0, zmax: 1, xgap: 1, ygap: 2,
                 hovertemplate: "%{customdata}<extra></extra>",
                 colorbar: {title: {text: "top-1 p"}, thickness: 12, len: 0.8}}];
  const s = Math.min(Math.max(step, 1), T) - 1;
  const layout = {yaxis: {tickmode: "array", tickvals: layers, ticktext: layers.map((l) => `layer ${l + 1}`),
                          autorange: "reversed"},
                  xaxis: {tickmode: "array", tickvals: range(T),
                          ticktext: out.map((p, t) => `${t + 1} ${label(p, 12)}`), tickangle: -50,
                          title: {text: "step · emitted piece"}},
                  shapes: [{type: "rect", x0: s - 0.5, x1: s + 0.5, y0: -0.5, y1: lens.layers - 0.5,
                            line: {color: "#f97316", width: 3}, name: "step-frame"}]};
  return figure(look, data, layout, 200 + 44 * lens.layers, "Logit lens over the translation · each layer's top "
                + "piece at every step (bold: the piece emitted)", {l: 80, t: 50, b: 110});
}

// ---- does attention agree? ----

/**
 * Spearman's rank correlation (tied values share their mean rank): transformer.explain.spearman; null when either
 * side is constant or has fewer than 2 values.
 * @param {number[]} a
 * @param {number[]} b
 * @returns {number | null}
 */
export function spearman(a, b) {
  if (a.length < 2 || Math.min(...a) === Math.max(...a) || Math.min(...b) === Math.max(...b)) return null;
  const ranks = (x) => {
    const order = range(x.length).sort((i, j) => x[i] - x[j]), r = new Array(x.length);
    for (let k = 0; k < order.length;) { // a run of ties gets its mean rank
      let end = k;
      while (end + 1 < order.length && x[order[end + 1]] === x[order[k]]) end++;
      for (let m = k; m <= end; m++) r[order[m]] = (k + end) / 2;
      k = end + 1;
    }
    return r;
  };
  const ra = ranks(a), rb = ranks(b), mean = (x) => sum(x) / x.length, ma = mean(ra), mb = mean(rb);
  const cov = sum(ra.map((x, i) => (x - ma) * (rb[i] - mb)));
  return cov / Math.sqrt(sum(ra.map((x) => (x - ma) ** 2)) * sum(rb.map((x) => (x - mb) ** 2)));
}

/**
 * At step `t` (from 0), Spearman's ρ over the source words (special pieces left out) between integrated gradients
 * and each decoder layer's mean cross-attention: its weights α, and (once at hand) its value-norm weights.
 * @param {Explain} explain
 * @param {TracePayload} payload
 * @param {number} t
 * @returns {{alpha: (number | null)[], valueNorm: (number | null)[] | null, words: number}}
 */
export function agreement(explain, payload, t) {
  const axes = axesOf(kindOf(payload, "cross"), true), groups = axes.key_groups.map((g) => g.map((c) => axes.cols[c]));
  // at 6 decimals: the payload's weights are quantised, so sums equal in exact arithmetic tie, as they should
  const words = (row) => groups.map((g) => Math.round(1e6 * sum(g.map((j) => row[j]))) / 1e6);
  const ig = explain.methods.ig, attributed = words(ig.source[ig.steps.indexOf(t)]);
  const rho = (att) => range(att.shape[0]).map((l) => {
    const heads = range(att.shape[1]).map((h) => [headWeights(att, l, h)[t]]);
    return spearman(words(Array.from(meanOf(heads)[0])), attributed);
  });
  return {alpha: rho(attention(payload, "cross")), words: groups.length,
          valueNorm: hasNorms(payload) ? rho(weighted(payload, "cross", "value-norm")) : null};
}

/**
 * Does attention agree? Per decoder layer, ρ between integrated gradients and the layer's mean cross-attention at
 * the view's step, for α and for value-norm weights.
 * @param {Explain} explain
 * @param {TracePayload} payload
 * @param {View} view  fitted
 * @param {Look} look
 * @returns {Figure}
 */
export function whyAgreement(explain, payload, view, look) {
  const t = view.step - 1, a = agreement(explain, payload, t), x = a.alpha.map((_, l) => `layer ${l + 1}`);
  const bars = (y, name, color) => ({type: "bar", name, x, y, marker: {color},
                                     text: y.map((r) => r === null ? "n/a" : r.toFixed(2)), textposition: "outside",
                                     hovertemplate: `%{x}, ${name}: ρ = %{y:.3f}<extra></extra>`});
  const data = [bars(a.alpha, "attention α", "#6366f1")];
  if (a.valueNorm) data.push(bars(a.valueNorm, "value-norm weights", "#0d9488"));
  const layout = {barmode: "group", yaxis: {range: [-1.15, 1.15], title: {text: "Spearman's ρ"}, zeroline: true},
                  legend: {orientation: "h", y: 1.02, yanchor: "bottom", x: 1, xanchor: "right"}};
  return figure(look, data, layout, 320,
                `Does attention agree? · step ${t + 1} → ${label(payload.pieces.output[t], 16)}: Spearman's ρ over ` +
                `the ${a.words} source words between integrated gradients and each layer's mean cross-attention`,
                {l: 70, t: 90, b: 50});
}

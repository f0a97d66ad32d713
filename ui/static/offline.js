// The offline page of a translation: anatomy/offline.py inlines this after Plotly.js and DATA. Every figure is drawn
// here from DATA as viz/ draws it on the app's page (same scales, labels, titles, masks), with no server and no
// network. Attention arrives as uint8 (round(weight × scale)), one base64 array per kind: (layer, head, query, key).
"use strict";
(() => {
  const D = DATA;
  const S = D.style;
  // transformer.analysis.HIDDEN_PIECES: what "Hide special tokens" hides
  const SPECIAL = new Set(["<s>", "</s>", "<pad>"]);
  const WORD_SPECIAL = new Set([...SPECIAL, "<unk>"]); // viz.words.SPECIALS: each a word of its own
  const MARK = "\u2581";
  const ORANGE = "#f97316";
  const MEAN = "mean";
  const CONFIG = {displaylogo: false, responsive: true};
  const COLORBAR = {title: {text: "weight", side: "right"}, thickness: 12, len: 0.8, tickvals: [0, 0.25, 0.5, 0.75, 1]};
  const $ = (id) => document.getElementById(id);
  const range = (n) => Array.from({length: n}, (_, i) => i);
  const clamp = (x, lo, hi) => Math.min(Math.max(x, lo), hi);

  // ---- labels, as viz/text.py and viz/words.py make them ----

  const escape = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}]/u;
  const unprintable = (ch) => UNPRINTABLE.test(ch) || (ch !== " " && /\p{Zs}/u.test(ch));

  function readable(piece, max = 24) {
    const text = Array.from(String(piece), (ch) =>
      unprintable(ch) ? "\\x" + ch.codePointAt(0).toString(16).padStart(2, "0") : ch).join("") || "\u2205";
    const chars = Array.from(text);
    return chars.length > max ? chars.slice(0, max - 1).join("") + "\u2026" : text;
  }
  const label = (piece, max = 24) => escape(readable(piece, max));
  const queryLabel = (q, max = 14) => Array.isArray(q) ? `${label(q[0], max)} \u25b8 ${label(q[1], max)}` : label(q);
  const plainLabel = (p) =>
    WORD_SPECIAL.has(p) ? p : p.startsWith(MARK) ? p.slice(MARK.length) || "\u2423" : "\u00b7" + p;
  const plainLabels = (tokens) => tokens.map((t) => Array.isArray(t) ? t.map(plainLabel) : plainLabel(t));

  function wordGroups(pieces) {
    const groups = [];
    let previousSpecial = true;
    pieces.forEach((piece, i) => {
      const special = WORD_SPECIAL.has(piece);
      if (!groups.length || special || previousSpecial || piece.startsWith(MARK)) groups.push([i]);
      else groups[groups.length - 1].push(i);
      previousSpecial = special;
    });
    return groups;
  }

  // transformer.pieces.word_label: the pieces' text as the app's detokenisation writes it (DATA.piece_text), a
  // special piece as its name
  function wordText(pieces, group) {
    const parts = group.map((i) => pieces[i]);
    if (parts.some((p) => WORD_SPECIAL.has(p))) {
      return parts.map((p) => WORD_SPECIAL.has(p) ? p : D.piece_text[p].trim()).join(" ");
    }
    return parts.map((p) => D.piece_text[p]).join("").trim() || parts.join("");
  }

  function mergeLabels(tokens, groups) {
    if (tokens.length && Array.isArray(tokens[0])) {
      const reads = tokens.map((t) => t[0]), produced = tokens.map((t) => t[1]);
      return groups.map((g) => [wordText(reads, g), wordText(produced, g)]);
    }
    return groups.map((g) => wordText(tokens, g));
  }

  // ---- the attention arrays (anatomy/views.py, anatomy/attention_views.py) ----

  const KINDS = D.kinds;
  const byName = Object.fromEntries(KINDS.map((k) => [k.name, k]));
  for (const k of KINDS) {
    const bytes = atob(k.weights);
    k.u8 = new Uint8Array(bytes.length);
    for (let i = 0; i < bytes.length; i++) k.u8[i] = bytes.charCodeAt(i);
  }
  const T = D.output.length; // decoding steps

  function value(k, l, h, i, j) {
    const [, H, Tq, Tk] = k.shape;
    return k.u8[((l * H + h) * Tq + i) * Tk + j] / k.scale;
  }

  function sides(k) {
    if (k.queries === "source") return {queries: D.source, pieces: D.source, keys: D.source};
    // a decoder position reads target t and produces output t; it belongs to the word it produces
    return {queries: D.target.map((t, i) => [t, D.output[i]]), pieces: D.output,
            keys: k.keys === "source" ? D.source : D.target};
  }

  const ordinary = (pieces) => range(pieces.length).filter((i) => !SPECIAL.has(pieces[i]));

  function renormalised(row) {
    const total = row.reduce((a, b) => a + b, 0);
    return row.map((x) => total > 0 ? x / total : 0);
  }

  // views.arrays: one kind's rows and keys (with `hide`, the special ones left out and every row renormalised
  // over the keys left), the cells a mask hides, and each head's matrix.
  function arrays(k, hide) {
    const {queries, pieces, keys} = sides(k);
    const [, , Tq, Tk] = k.shape;
    const rows = hide ? ordinary(pieces) : range(Tq), cols = hide ? ordinary(keys) : range(Tk);
    const hidden = k.causal ? rows.map((i) => cols.map((j) => j > i)) : null;
    const head = (l, h) => rows.map((i, r) => {
      const row = cols.map((j, c) => hide && hidden && hidden[r][c] ? 0 : value(k, l, h, i, j));
      return hide ? renormalised(row) : row;
    });
    return {queries: rows.map((i) => queries[i]), pieces: rows.map((i) => pieces[i]), keys: cols.map((j) => keys[j]),
            rows, hidden, head};
  }

  // attention_views.pick: one layer's head, or the mean of its heads; layer and head from 1.
  function pick(a, k, layer, head) {
    const [L, H] = k.shape;
    const l = clamp(layer, 1, L) - 1;
    if (head === MEAN) {
      const each = range(H).map((h) => a.head(l, h));
      const w = each[0].map((row, i) => row.map((_, j) => each.reduce((s, m) => s + m[i][j], 0) / H));
      return {w, caption: `layer ${l + 1}, mean of ${H} heads`};
    }
    const h = clamp(+head, 1, H) - 1;
    return {w: a.head(l, h), caption: `layer ${l + 1}, head ${h + 1}`};
  }

  // viz.merge_attention: attention to a word is the sum over its pieces, from a word the mean over its pieces' rows.
  function merge(w, queryGroups, keyGroups, hidden) {
    const keySum = w.map((row) => keyGroups.map((g) => g.reduce((s, j) => s + row[j], 0)));
    const sees = w.map((_, i) => !hidden || !hidden[i].every(Boolean));
    const merged = queryGroups.map((g) => {
      const seeing = g.filter((i) => sees[i]);
      const rows = seeing.length ? seeing : g;
      return keyGroups.map((_, c) => rows.reduce((s, i) => s + keySum[i][c], 0) / rows.length);
    });
    const mergedHidden = hidden && queryGroups.map((gq) =>
      keyGroups.map((gk) => gq.every((i) => gk.every((j) => hidden[i][j]))));
    return {w: merged, hidden: mergedHidden};
  }

  // attention_views._shown: weights, labels and hidden cells per piece (▁ hidden when plain), or per word.
  function shown(a, w, v) {
    if (!v.merge) {
      return v.plain ? {w, queries: plainLabels(a.queries), keys: plainLabels(a.keys), hidden: a.hidden}
                     : {w, queries: a.queries, keys: a.keys, hidden: a.hidden};
    }
    const qg = wordGroups(a.pieces), kg = wordGroups(a.keys);
    const m = merge(w, qg, kg, a.hidden);
    return {w: m.w, queries: mergeLabels(a.queries, qg), keys: mergeLabels(a.keys, kg), hidden: m.hidden};
  }

  function emptyNote(hidden, queries, hide) {
    if (!hidden || !hide) return null;
    const empty = queries.filter((_, i) => hidden[i].length && hidden[i].every(Boolean)).map((q) => queryLabel(q));
    return empty.length ? `row ${empty.join(", ")}: sees only hidden special tokens (empty) · grey: hidden` : null;
  }

  function offNote(k, v) {
    const off = k.off.filter(([l]) => l === v.layer).map(([, h]) => h).sort((a, b) => a - b);
    if (!off.length) return "";
    if (v.head !== MEAN) return off.includes(+v.head) ? " · this head is switched OFF" : "";
    return ` · head${off.length > 1 ? "s" : ""} ${off.join(", ")} off`;
  }

  const viewTitle = (k, v, caption) =>
    `${k.title} · ${caption}` + (v.merge ? " · words" : "") + (v.hide ? D.hide_title : "");

  // ---- figures (viz/common.py's frame) ----

  function frame(height, title, margin) {
    const out = {template: S.template, height: Math.round(height),
                 margin: Object.assign({l: 60, r: 20, t: title ? 40 : 20, b: 40}, margin || {})};
    if (title) out.title = {text: title, x: 0.01, xanchor: "left", font: {size: 14}};
    return out;
  }

  const draw = (id, data, layout, height, title, margin) =>
    Plotly.react($(id), data, Object.assign({}, layout, frame(height, title, margin)), CONFIG);

  const empty = (id, message, height = 260) => draw(id, [], {
    xaxis: {visible: false}, yaxis: {visible: false},
    annotations: [{text: escape(message), x: 0.5, y: 0.5, xref: "paper", yref: "paper", showarrow: false,
                   font: {size: 14, color: "#6b7280"}}]}, height);

  const cellHeight = (n, perRow = 22, minimum = 260, maximum = 1400, extra = 130) =>
    Math.min(maximum, Math.max(minimum, n * perRow + extra));
  const longest = (labels, cap) => Math.min(Math.max(...labels.map((s) => s.length)), cap);

  // viz.attention_heatmap: queries are rows, keys columns, 0-1 viridis, hidden cells grey, the step framed.
  function heatmapFigure(id, w, queries, keys, o) {
    const Tq = queries.length, Tk = keys.length;
    if (!Tq || !Tk) return empty(id, "Nothing to show: no tokens");
    const z = w.map((row, i) => row.map((x, j) => o.hidden && o.hidden[i][j] ? null : x));
    const qLab = queries.map((q) => queryLabel(q)), kLab = keys.map((k) => label(k));
    const text = z.map((row, i) =>
      row.map((x, j) => `${qLab[i]} \u2192 ${kLab[j]}: ` + (x === null ? "masked" : x.toFixed(3))));
    const data = [{type: "heatmap", z, x: range(Tk), y: range(Tq), text, zmin: 0, zmax: 1, colorscale: S.attention,
                   hoverongaps: true, hovertemplate: "%{text}<extra></extra>", colorbar: COLORBAR}];
    const layout = {
      xaxis: {tickmode: "array", tickvals: range(Tk), ticktext: kLab, tickangle: -50, title: {text: o.keyTitle},
              showline: false},
      yaxis: {tickmode: "array", tickvals: range(Tq), ticktext: qLab, autorange: "reversed",
              title: {text: o.queryTitle}, showline: false},
      plot_bgcolor: o.hidden ? S.masked : "white", annotations: [], shapes: []};
    if (o.note || (o.hidden && o.hidden.some((row) => row.some(Boolean)))) {
      layout.annotations.push({text: o.note || "grey: hidden by the mask", x: 1, y: 1, xref: "paper", yref: "paper",
                               xanchor: "right", yanchor: "bottom", showarrow: false,
                               font: {size: 11, color: "#52525b"}});
    }
    if (o.highlight !== null && o.highlight >= 0 && o.highlight < Tq) {
      layout.shapes.push({type: "rect", x0: -0.5, x1: Tk - 0.5, y0: o.highlight - 0.5, y1: o.highlight + 0.5,
                          line: {color: ORANGE, width: 3}, name: "step-frame"});
    }
    const lk = longest(kLab, 24), lq = longest(qLab, 32);
    return draw(id, data, layout, cellHeight(Tq, 30, 260, 1400, 110 + 6 * lk), o.title,
                {l: 40 + 7 * lq, b: 50 + 6 * lk});
  }

  // The large view: the chosen kind, layer and head (or mean) as a heatmap or as lines.
  function large(v) {
    const k = byName[v.kind], a = arrays(k, v.hide);
    if (v.display === "lines") return lines(k, a, v);
    lineTraces = null;
    const p = pick(a, k, v.layer, v.head), s = shown(a, p.w, v);
    let highlight = null;
    if (k.stepped && !v.merge && T) {
      const row = a.rows.indexOf(Math.min(v.step || T, T) - 1);
      highlight = row >= 0 ? row : null;
    }
    return heatmapFigure("heatmap", s.w, s.queries, s.keys, {
      queryTitle: k.query_title, keyTitle: k.key_title, hidden: s.hidden, highlight,
      title: viewTitle(k, v, p.caption) + offNote(k, v), note: emptyNote(s.hidden, s.queries, v.hide)});
  }

  // viz.attention_lines: queries left, keys right, a line per weight with the weight as its opacity (in ten
  // steps), one colour per head.
  const OPACITY_STEPS = 10, MIN_WEIGHT = 0.02, ROW = 26, LINE_FONT = 13;
  let lineTraces = null; // the large view's line traces as drawn: [trace index, x, y]

  function lines(k, a, v) {
    const [L, H] = k.shape;
    const l = clamp(v.layer, 1, L) - 1;
    const heads = v.head === MEAN ? range(H).map((h) => h + 1) : [clamp(+v.head, 1, H)];
    const each = heads.map((h) => shown(a, a.head(l, h - 1), v));
    const {queries, keys, hidden} = each[0];
    const caption = `layer ${l + 1}, ` + (heads.length > 1 ? `all ${H} heads` : `head ${heads[0]}`);
    const title = `${k.title} · ${caption} · lines` + (v.merge ? " · words" : "") + (v.hide ? D.hide_title : "");
    const note = emptyNote(hidden, queries, v.hide);
    lineTraces = null;
    if (!queries.length || !keys.length) return empty("heatmap", "Nothing to show: no tokens");
    const color = (head) => S.heads[(head - 1) % S.heads.length];
    const data = [];
    heads.forEach((head, n) => {
      const w = each[n].w.map((row, i) => row.map((x, j) => hidden && hidden[i][j] ? 0 : x));
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
    const columns = [["queries", 0, qShort, qFull, "middle left"], ["keys", 1, kShort, kFull, "middle right"]];
    columns.forEach(([meta, x, names, full, side]) =>
      data.push({type: "scatter", x: names.map(() => x), y: names.map((_, i) => -i), mode: "markers+text", text: names,
                 textposition: side, textfont: {size: LINE_FONT}, customdata: full, meta, showlegend: false,
                 marker: {size: 9, color: "#94a3b8"}, hovertemplate: "%{customdata}<extra></extra>"}));
    const rows = Math.max(queries.length, keys.length);
    const annotations = [[0, k.stepped ? "produces" : "query"], [1, "key"]].map(([x, text]) => ({
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
    const height = top + bottom + ROW * (rows + 1);
    return draw("heatmap", data, layout, height, title, {l: 10, r: 10, t: top, b: bottom}).then((gd) => {
      lineTraces = gd.data.map((t, n) => [n, t.x, t.y, t.meta]).filter((t) => t[3] === "lines");
      return gd;
    });
  }

  // Pointing at a piece of the lines view keeps only its lines (as app.js does on the app's page).
  function keepLines(event) {
    const point = event.points[0], meta = point.data.meta;
    if (!lineTraces || (meta !== "queries" && meta !== "keys")) return;
    const end = meta === "queries" ? 0 : 1;
    const xs = [], ys = [];
    for (const [, , y] of lineTraces) {
      const kx = [], ky = [];
      for (let s = 0; s < y.length; s += 3) {
        if (y[s + end] === point.y) {
          kx.push(0, 1, null);
          ky.push(y[s], y[s + 1], null);
        }
      }
      xs.push(kx);
      ys.push(ky);
    }
    Plotly.restyle($("heatmap"), {x: xs, y: ys}, lineTraces.map((t) => t[0]));
  }

  function allLines() {
    if (!lineTraces) return;
    Plotly.restyle($("heatmap"), {x: lineTraces.map((t) => t[1]), y: lineTraces.map((t) => t[2])},
                   lineTraces.map((t) => t[0]));
  }

  // ---- decoding steps (attention_views.step_figures) ----

  function stepRow(k, v, t) {
    const [L, H] = k.shape;
    const l = clamp(v.layer, 1, L) - 1;
    const heads = v.head === MEAN ? range(H) : [clamp(+v.head, 1, H) - 1];
    let keys = k.causal ? D.target.slice(0, t + 1) : D.source.slice();
    let row = keys.map((_, j) => heads.reduce((s, h) => s + value(k, l, h, t, j), 0) / heads.length);
    const caption = v.head === MEAN ? `layer ${l + 1}, mean of ${H} heads` : `layer ${l + 1}, head ${heads[0] + 1}`;
    if (v.hide) {
      const kept = ordinary(keys);
      row = renormalised(kept.map((j) => row[j]));
      keys = kept.map((j) => keys[j]);
    }
    if (v.merge) {
      const groups = wordGroups(keys);
      row = groups.map((g) => g.reduce((s, j) => s + row[j], 0));
      keys = groups.map((g) => wordText(keys, g));
    } else if (v.plain) {
      keys = keys.map(plainLabel);
    }
    const query = [D.target[t], D.output[t]];
    return {row, keys, query: v.plain ? query.map(plainLabel) : query, caption};
  }

  // viz.attention_row: one query's attention over the keys as bars, on the fixed 0-1 scale.
  function rowFigure(id, r, title, keyTitle, color) {
    const kLab = r.keys.map((k) => label(k)), q = queryLabel(r.query);
    const data = [{type: "bar", x: range(r.row.length), y: r.row, marker: {color}, textposition: "none",
                   text: kLab.map((k, j) => `${q} \u2192 ${k}: ${r.row[j].toFixed(3)}`),
                   hovertemplate: "%{text}<extra></extra>"}];
    const layout = {xaxis: {tickmode: "array", tickvals: range(r.row.length), ticktext: kLab, tickangle: -50,
                            title: {text: keyTitle}},
                    yaxis: {range: [0, 1], title: {text: "weight"}, showgrid: true, gridcolor: "#f3f4f6"}};
    const lk = longest(kLab, 24);
    return draw(id, data, layout, 300 + 5 * lk, title, {b: 50 + 6 * lk, t: 50});
  }

  // viz.topk_bars: the step's most likely next pieces, the chosen one in orange.
  function topkBars(t, v) {
    const row = D.top_k[t] || [];
    const produced = v.plain ? plainLabel(D.output[t]) : D.output[t];
    if (!row.length) return empty("step-topk", "No prediction yet", 300);
    const pieces = row.map((c) => c[0]), probs = row.map((c) => c[1]);
    const data = [{type: "bar", x: probs, y: range(pieces.length), orientation: "h",
                   marker: {color: pieces.map((p) => p === produced ? "#ea580c" : "#9333ea")},
                   text: probs.map((p) => p.toFixed(2)), textposition: "outside", cliponaxis: false,
                   hovertext: pieces.map((p, i) => `${i + 1} ${label(p)}`),
                   hovertemplate: "%{hovertext}<br>p = %{x:.3f}<extra></extra>"}];
    const layout = {yaxis: {tickmode: "array", tickvals: range(pieces.length), ticktext: pieces.map((p) => label(p)),
                            autorange: "reversed"},
                    xaxis: {range: [0, 1.12], title: {text: "probability"}, showgrid: true, gridcolor: "#f3f4f6"}};
    const title = `Step ${t + 1}: next-piece probabilities \u2192 ${label(produced)}`;
    return draw("step-topk", data, layout, 300, title, {l: 110, r: 30});
  }

  function steps(v) {
    chips("partial", D.output.slice(0, v.step).map((piece, i) => [piece, i === v.step - 1 ? "current" : ""]));
    if (!T) {
      return Promise.all(["step-cross", "step-self", "step-topk"].map((id) => empty(id, "No decoding step", 300)));
    }
    const t = Math.min(v.step || T, T) - 1;
    const cross = byName.cross, self = byName.decoder;
    const c = stepRow(cross, v, t), s = stepRow(self, v, t);
    const hidden = v.hide ? " · special tokens hidden" : "";
    const [crossTitle, selfTitle] = [cross, self].map((k) => `Step ${t + 1} · ${k.label} (${c.caption})${hidden}`);
    return Promise.all([
      c.keys.length ? rowFigure("step-cross", c, crossTitle, cross.key_title, cross.step_color)
                    : empty("step-cross", `${crossTitle}: no key left to see`, 300),
      s.keys.length ? rowFigure("step-self", s, selfTitle, self.key_title, self.step_color)
                    : empty("step-self", `${selfTitle}: this step sees only <s>, which is hidden (empty row)`, 300),
      topkBars(t, v)]);
  }

  // ---- every head of a kind (viz.attention_grid) ----

  function grid(v) {
    const k = byName[v.kind], a = arrays(k, v.hide), [L, H] = k.shape;
    const first = shown(a, a.head(0, 0), v);
    const title = `${k.title}: every layer × head` + (v.hide ? D.hide_title : "");
    if (!first.queries.length || !first.keys.length) return empty("grid", "Nothing to show: no tokens");
    // positions counted from 1 keep repeated pieces apart as categories
    const qPos = first.queries.map((q, i) => `${i + 1} ${queryLabel(q)}`);
    const kPos = first.keys.map((x, j) => `${j + 1} ${label(x)}`);
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
        const off = k.off.some(([ol, oh]) => ol === l + 1 && oh === h + 1);
        titles.push({text: `layer ${l + 1} · head ${h + 1}` + (off ? " · <b>OFF</b>" : ""), x: left + width / 2,
                     y: top, xref: "paper", yref: "paper", xanchor: "center", yanchor: "bottom", showarrow: false,
                     font: {size: 11, color: off ? "#71717a" : undefined}});
        const s = shown(a, a.head(l, h), v);
        const percent = s.w.map((row) => row.map((x) => Math.round(clamp(x, 0, 1) * 100)));
        data.push({type: "heatmap", z: percent, x: kPos, y: qPos, coloraxis: "coloraxis", xaxis: `x${n}`,
                   yaxis: `y${n}`, meta: `${l + 1}:${h + 1}`,
                   hovertemplate: `layer ${l + 1} head ${h + 1}` + (off ? " (off)" : "") +
                                  "<br>%{y} \u2192 %{x}: %{z}%<br>click: open in the large view<extra></extra>"});
        if (off) { // the weights are still computed; only the head's output was zeroed
          shapes.push({type: "rect", xref: `x${n} domain`, yref: `y${n} domain`, x0: 0, x1: 1, y0: 0, y1: 1,
                       fillcolor: S.masked, opacity: 0.7, line: {color: "#52525b", width: 2}});
        }
        if (s.hidden) {
          data.push({type: "heatmap", z: s.hidden.map((row) => row.map(Number)), x: kPos, y: qPos, zmin: 0, zmax: 1,
                     showscale: false, hoverinfo: "skip", colorscale: [[0, "rgba(0,0,0,0)"], [1, S.masked]],
                     xaxis: `x${n}`, yaxis: `y${n}`});
        }
      }
    }
    Object.assign(layout, {annotations: titles, shapes, coloraxis: {colorscale: S.attention, cmin: 0, cmax: 100,
      colorbar: {title: {text: "weight"}, thickness: 12, len: 0.6, tickvals: [0, 25, 50, 75, 100],
                 ticktext: ["0", "0.25", "0.5", "0.75", "1"]}}});
    return draw("grid", data, layout, 50 + 170 * L, title, {l: 20, r: 20, t: 50, b: 20});
  }

  // ---- head statistics (viz.head_multiples, the table of every head) ----

  const statColumn = (key) => 3 + D.stats.keys.indexOf(key);

  function summary(v) {
    const k = byName[v.kind], st = D.stats;
    const records = st.rows.filter((r) => r[0] === k.label);
    const title = `${k.title}: what each head does (every statistic per layer × head)`;
    if (!records.length) return empty("summary", `No ${k.label} heads to show`);
    const L = Math.max(...records.map((r) => r[1])), H = Math.max(...records.map((r) => r[2]));
    const panels = st.panels.filter((p) => records.some((r) => r[statColumn(p)] !== null));
    const nRows = Math.ceil(panels.length / 3), nCols = Math.ceil(panels.length / nRows);
    const panel = Math.max(90, 26 * L), top = 70, bottom = 50, gap = 64;
    const height = nRows * panel + (nRows - 1) * gap + top + bottom;
    const hs = 0.07, vs = nRows > 1 ? gap / (height - top - bottom) : 0;
    const w = (1 - hs * (nCols - 1)) / nCols, h = (1 - vs * (nRows - 1)) / nRows;
    const data = [], layout = {annotations: []};
    const signed = panels.some((p) => st.signed.includes(p));
    panels.forEach((stat, n) => {
      const r = Math.floor(n / nCols), c = n % nCols, a = n ? String(n + 1) : "";
      const left = c * (w + hs), topY = 1 - r * (h + vs), name = st.headers[statColumn(stat)];
      const axis = {dtick: 1, ticks: "", showline: false, tickfont: {size: 10}};
      layout[`xaxis${a}`] = Object.assign({}, axis, {domain: [left, left + w], anchor: `y${a}`},
                                          r === nRows - 1 ? {title: {text: "head", standoff: 4}} : {});
      layout[`yaxis${a}`] = Object.assign({}, axis, {domain: [topY - h, topY], anchor: `x${a}`, autorange: "reversed"},
                                          c === 0 ? {title: {text: "layer", standoff: 4}} : {});
      const z = range(L).map(() => range(H).map(() => null));
      records.forEach((rec) => {
        if (rec[statColumn(stat)] !== null) z[rec[1] - 1][rec[2] - 1] = rec[statColumn(stat)];
      });
      data.push({type: "heatmap", z, x: range(H).map((i) => i + 1), y: range(L).map((i) => i + 1), xaxis: `x${a}`,
                 yaxis: `y${a}`, coloraxis: st.signed.includes(stat) ? "coloraxis2" : "coloraxis", xgap: 1, ygap: 1,
                 texttemplate: "%{z:.2f}", textfont: {size: 10}, hoverongaps: false,
                 hovertemplate: `layer %{y}, head %{x}: ${name} %{z:.2f}<extra></extra>`});
      layout.annotations.push({text: name, x: left + w / 2, y: topY, xref: "paper", yref: "paper", xanchor: "center",
                               yanchor: "bottom", showarrow: false, font: {size: 12}});
    });
    const placement = signed ? {len: 0.45, yanchor: "top", y: 1} : {len: 0.8};
    layout.coloraxis = {colorscale: S.attention, cmin: 0, cmax: 1,
                        colorbar: Object.assign({title: {text: "share, focus"}, thickness: 12}, placement)};
    if (signed) {
      layout.coloraxis2 = {colorscale: S.diverging, cmin: -1, cmax: 1,
                           colorbar: {title: {text: "correlation"}, thickness: 12, len: 0.45, yanchor: "bottom", y: 0}};
    }
    return draw("summary", data, layout, height, title, {l: 60, r: 30, t: top, b: bottom});
  }

  let statsOrder = {column: -1, descending: false};

  function statsTable() {
    const st = D.stats, table = $("stats");
    table.replaceChildren();
    const head = table.createTHead().insertRow();
    st.headers.forEach((name, c) => {
      const th = document.createElement("th");
      th.textContent = name + (statsOrder.column === c ? (statsOrder.descending ? " ▼" : " ▲") : "");
      th.addEventListener("click", () => {
        statsOrder = {column: c, descending: statsOrder.column === c && !statsOrder.descending};
        statsTable();
      });
      head.appendChild(th);
    });
    const rows = st.rows.slice();
    if (statsOrder.column >= 0) {
      const c = statsOrder.column, sign = statsOrder.descending ? -1 : 1;
      rows.sort((a, b) => a[c] === null ? 1 : b[c] === null ? -1 : sign * (a[c] < b[c] ? -1 : a[c] > b[c] ? 1 : 0));
    }
    const body = table.createTBody();
    for (const row of rows) {
      const tr = body.insertRow();
      row.forEach((x) => { tr.insertCell().textContent = x === null ? "" : String(x); });
      tr.addEventListener("click", () => { // open that head in the large view
        const kind = KINDS.find((k) => k.label === row[0]);
        if (!kind) return;
        Object.assign(state, {kind: kind.name, layer: row[1], head: String(row[2])});
        controls();
        update(true);
        $("explorer-section").scrollIntoView();
      });
    }
  }

  // ---- predictions (viz.topk_table) ----

  function topkTable() {
    const rows = D.top_k, n = rows.length;
    if (!n) return empty("topk-table", "No decoder steps to show");
    const k = Math.max(...rows.map((r) => r.length));
    const z = [], text = [], hover = [], names = [];
    rows.forEach((row, t) => {
      const out = D.output[t];
      let hit = false;
      z.push(range(k).map(() => null));
      text.push(range(k).map(() => ""));
      hover.push(range(k).map(() => ""));
      row.forEach(([piece, p], r) => {
        const chosen = piece === out, lab = label(piece, 16);
        hit = hit || chosen;
        z[t][r] = p;
        text[t][r] = chosen ? `<b>${lab}</b>` : lab;
        hover[t][r] = `step ${t + 1}: ${label(piece)}<br>p = ${p.toFixed(3)}` + (chosen ? "<br>(emitted)" : "");
      });
      const name = `${t + 1} ${label(out, 16)}`;
      names.push(hit ? name : `<span style="color:#dc2626">${name}</span>`);
    });
    const data = [{type: "heatmap", z, x: range(k).map((r) => `#${r + 1}`), y: range(n), text, customdata: hover,
                   texttemplate: "%{text}", textfont: {size: 11}, colorscale: S.probability, zmin: 0, zmax: 1,
                   xgap: 2, ygap: 2,
                   hoverongaps: false, hovertemplate: "%{customdata}<extra></extra>",
                   colorbar: {title: {text: "probability"}, thickness: 12, len: 0.8}}];
    const layout = {yaxis: {tickmode: "array", tickvals: range(n), ticktext: names, autorange: "reversed",
                            title: {text: "step · emitted token"}},
                    xaxis: {side: "top", title: {text: "rank"}}};
    return draw("topk-table", data, layout, cellHeight(n, 26, 260, 1400, 90),
                "Top-k next pieces at every step (bold: emitted)", {l: 120, t: 60});
  }

  // ---- positional encoding (paper §3.5; transformer.model.sinusoidal_positional_encoding, viz/positional.py) ----

  function positionalTable(positions, d, layout) {
    const sines = Math.ceil(d / 2); // "split" (Marian's) puts the sines first, then the cosines
    return range(positions).map((pos) => {
      const row = new Array(d);
      for (let i = 0; 2 * i < d; i++) {
        const angle = pos / Math.pow(10000, (2 * i) / d);
        const [sin, cos] = [Math.sin(angle), Math.cos(angle)];
        if (layout === "split") { row[i] = sin; if (sines + i < d) row[sines + i] = cos; }
        else { row[2 * i] = sin; if (2 * i + 1 < d) row[2 * i + 1] = cos; }
      }
      return row;
    });
  }

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

  function positional() {
    const P = D.positional, d = P.d_model, pe = positionalTable(P.max_len, d, P.layout);
    const order = P.layout === "split" ? ", all sines, then all cosines" : "";
    const data = [{type: "heatmap", z: pe, x: range(d), y: range(P.max_len), colorscale: S.diverging, zmin: -1, zmax: 1,
                   hovertemplate: "pos %{y}, dim %{x}<br>%{z:.3f}<extra></extra>",
                   colorbar: {thickness: 10, len: 0.8, x: 0.52}}];
    P.dims.forEach((dim, n) => {
      const [kind, wavelength] = wave(dim, d, P.layout);
      data.push({type: "scatter", x: range(P.max_len), y: pe.map((row) => row[dim]), mode: "lines", xaxis: "x2",
                 yaxis: "y2",
                 line: {color: S.heads[n % S.heads.length]},
                 name: `dim ${dim} (${kind}, λ≈${Math.round(wavelength).toLocaleString("en-US")})`,
                 hovertemplate: `dim ${dim}<br>pos %{x}: %{y:.3f}<extra></extra>`});
    });
    const sub = (text, x0, x1) => ({text, x: (x0 + x1) / 2, y: 1, xref: "paper", yref: "paper", xanchor: "center",
                                    yanchor: "bottom", showarrow: false, font: {size: 16}});
    const layout = {xaxis: {domain: [0, 0.495], title: {text: "dimension i"}},
                    yaxis: {autorange: "reversed", title: {text: "position"}},
                    xaxis2: {domain: [0.595, 1], anchor: "y2", title: {text: "position"}},
                    yaxis2: {anchor: "x2", range: [-1.1, 1.1], showgrid: true, gridcolor: "#f3f4f6"},
                    annotations: [sub("PE(pos, i)", 0, 0.495), sub("selected dimensions", 0.595, 1)],
                    showlegend: true, legend: {orientation: "h", y: -0.18, x: 0.55, font: {size: 11}}};
    const title = `Sinusoidal positional encoding (d_model = ${d}, ${P.max_len} positions${order})`;
    const curves = draw("pe", data, layout, 430, title, {t: 70, b: 90});
    const sim = pe.map((a) => pe.map((b) => a.reduce((s, x, i) => s + x * b[i], 0) / d));
    const similarity = draw("pe-similarity", [{type: "heatmap", z: sim, x: range(P.max_len), y: range(P.max_len),
                                               colorscale: S.attention, colorbar: {thickness: 10},
                                               hovertemplate: "pos %{y} · pos %{x}<br>%{z:.3f}<extra></extra>"}],
                            {yaxis: {autorange: "reversed", title: {text: "position p"}, scaleanchor: "x"},
                             xaxis: {title: {text: "position q"}, constrain: "domain"}},
                            430, "PE(p) · PE(q) / d_model");
    const n = Math.min(D.source.length, P.max_len);
    const ticks = D.source.slice(0, n).map((t, i) => `${i} ${label(t)}`);
    const rows = n ? draw("pe-rows", [{type: "heatmap", z: pe.slice(0, n), x: range(d), y: range(n),
                                       colorscale: S.diverging, zmin: -1, zmax: 1, colorbar: {thickness: 10},
                                       hovertemplate: "position %{y} · dim %{x}<br>PE = %{z:.3f}<extra></extra>"}],
                          {yaxis: {tickmode: "array", tickvals: range(n), ticktext: ticks,
                                   autorange: "reversed", title: {text: "source position · piece"}},
                           xaxis: {title: {text: "dimension i"}}},
                          cellHeight(n, 20, 260, 1400, 100), "The encodings added to this input's pieces", {l: 120})
                   : empty("pe-rows", "No source pieces");
    return Promise.all([curves, similarity, rows]);
  }

  // ---- the translation, its pieces and the model ----

  function chips(id, items, colors = {}) {
    $(id).replaceChildren(...items.map(([piece, category]) => {
      const span = document.createElement("span");
      span.className = "chip" + (category === "current" ? " current" : "");
      span.textContent = piece;
      if (colors[category]) span.style.background = colors[category];
      if (category && category !== "current") span.title = category;
      return span;
    }));
  }

  function translation() {
    $("source-text").textContent = D.text;
    $("translation").textContent = D.translation || "∅ (empty)";
    $("notices").replaceChildren(...D.notices.map((n) => {
      const li = document.createElement("li");
      li.textContent = "⚠️ " + n;
      return li;
    }));
    chips("source-pieces", D.source.map((p) => [p, ""]));
    chips("output-pieces", D.chips, D.confidence);
    chips("confidence-legend", Object.keys(D.confidence).map((c) => [c, c]), D.confidence);
    document.title = `${D.model.key}: ${D.translation || D.text} · Transformer Anatomy`;
    if (D.candidates.length) {
      $("candidates-box").hidden = false;
      const table = $("candidates"), head = table.createTHead().insertRow();
      ["#", "candidate", "score", "log p", "pieces"].forEach((h) => {
        head.appendChild(document.createElement("th")).textContent = h;
      });
      const body = table.createTBody();
      D.candidates.forEach((row) => {
        const tr = body.insertRow();
        row.forEach((x) => { tr.insertCell().textContent = String(x); });
      });
    }
    $("definitions").replaceChildren(...D.stats.definitions.map(([name, text]) => {
      const li = document.createElement("li");
      li.appendChild(document.createElement("b")).textContent = name;
      li.append(": " + text);
      return li;
    }));
    const scale = KINDS[0].scale;
    $("quantised").textContent = `Attention is stored in this page as whole 1/${scale}ths (each weight within ` +
                                 `1/${2 * scale} of the model's); the mean of heads is the mean of those.`;
    // HTML made by anatomy/offline.py from the app's markdown, raw HTML escaped
    $("architecture").innerHTML = D.architecture;
    $("card").innerHTML = D.card;
    const fig = (id, f) => Plotly.newPlot($(id), f.data, f.layout, CONFIG);
    return Promise.all([fig("architecture-figure", D.figures.architecture), fig("parameters", D.figures.parameters)]);
  }

  // ---- controls ----

  const state = Object.assign({}, D.view);

  function options(select, items, chosen) {
    select.replaceChildren(...items.map(([text, val]) => new Option(text, val)));
    select.value = String(chosen);
  }

  // The controls as the state says, each clamped to the chosen kind's layers and heads.
  function controls() {
    const k = byName[state.kind], [L, H] = k.shape;
    state.layer = clamp(state.layer, 1, L);
    if (state.head !== MEAN) state.head = String(clamp(+state.head, 1, H));
    state.step = T ? clamp(state.step || T, 1, T) : 1;
    options($("kind"), KINDS.map((x) => [x.title, x.name]), state.kind);
    options($("layer"), range(L).map((l) => [String(l + 1), l + 1]), state.layer);
    options($("head"), [["mean of heads", MEAN], ...range(H).map((h) => [String(h + 1), String(h + 1)])], state.head);
    Object.assign($("step"), {max: Math.max(T, 1), value: state.step, disabled: !T});
    const pair = T && [D.target[state.step - 1], D.output[state.step - 1]];
    $("step-value").textContent = T ? `${state.step} of ${T}: ${queryLabelText(pair)}` : "no step";
    $("display").value = state.display;
    for (const flag of ["merge", "plain", "hide"]) $(flag).checked = state[flag];
    $("kind-help").innerHTML = k.help;
  }

  const queryLabelText = (q) => `${readable(q[0], 14)} \u25b8 ${readable(q[1], 14)}`;

  let drawn = 0;
  // Redraw what the view controls change; `all`: the grid and the head statistics too (kind, words, tokens).
  function update(all) {
    const v = Object.assign({}, state);
    const jobs = [large(v), steps(v), ...(all ? [grid(v), summary(v)] : [])];
    return Promise.all(jobs).then(() => { document.body.dataset.drawn = String(++drawn); });
  }

  function read(event) {
    const id = event.target.id;
    if (id === "kind") state.kind = $("kind").value;
    if (id === "layer") state.layer = +$("layer").value;
    if (id === "head") state.head = $("head").value;
    if (id === "step") state.step = +$("step").value;
    if (id === "display") state.display = $("display").value;
    if (["merge", "plain", "hide"].includes(id)) state[id] = $(id).checked;
    controls();
    update(["kind", "merge", "plain", "hide"].includes(id));
  }

  function nudge(name, delta) {
    const select = $(name);
    if (name === "step") {
      if (!T) return;
      state.step = clamp(state.step + delta, 1, T);
    } else {
      const i = clamp(select.selectedIndex + delta, 0, select.options.length - 1);
      state[name] = name === "layer" ? +select.options[i].value : select.options[i].value;
    }
    controls();
    update(false);
  }

  function start() {
    translation().catch(console.error);
    controls();
    for (const id of ["kind", "layer", "head", "display", "merge", "plain", "hide"]) {
      $(id).addEventListener("change", read);
    }
    $("step").addEventListener("input", read);
    document.addEventListener("keydown", (e) => {
      if (e.target.closest("input, select, textarea") || e.altKey || e.ctrlKey || e.metaKey) return;
      const move = {ArrowLeft: ["step", -1], ArrowRight: ["step", 1], "[": ["layer", -1], "]": ["layer", 1],
                    ",": ["head", -1], ".": ["head", 1]}[e.key];
      if (move) {
        e.preventDefault();
        nudge(...move);
      }
    });
    statsTable();
    // Plotly gives a div its .on once it has drawn there.
    const first = update(true).then(() => {
      $("heatmap").on("plotly_hover", keepLines);
      $("heatmap").on("plotly_unhover", allLines);
      $("grid").on("plotly_click", (event) => { // a thumbnail opens its head in the large view
        const meta = event.points[0].data.meta;
        if (!meta) return;
        const [layer, head] = meta.split(":");
        Object.assign(state, {layer: +layer, head});
        controls();
        update(false);
        $("explorer-section").scrollIntoView();
      });
    });
    Promise.all([first, topkTable(), positional()]).then(() => { document.body.dataset.ready = "1"; }, (err) => {
      document.body.dataset.ready = "error";
      throw err;
    });
  }

  start();
})();

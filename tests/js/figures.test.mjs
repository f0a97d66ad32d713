// anatomy/viewer/figures.js on a payload made here by hand: the heatmap's axes, fixed scale, hover and masked
// cells; the step panels; the grid's one scale; predictions; the head statistics' panels; every label escaped.
import assert from "node:assert/strict";
import {test} from "node:test";

import {emptyFigure, exportName, grid, heatmap, importanceMaps, lines, logProbChange, positional, stepFigures, summary,
  topkTable, walkFigure, walkStages} from "../../anatomy/viewer/figures.js";

const HOSTILE = "<a href=\"javascript:alert(1)\">x</a>";
const SPECIAL = new Set(["<s>", "</s>", "<pad>"]);
const LOOK = {template: {}, attention: [[0, "#440154"], [1, "#fde725"]], diverging: [[0, "#00f"], [1, "#f00"]],
              probability: [[0, "#fff"], [1, "#000"]], masked: "#e5e7eb", heads: ["#1", "#2", "#3", "#4"],
              hide_title: " · special tokens hidden, rows renormalised",
              stats: {labels: {focus: "focus", monotonic: "monotonic", eos: "EOS"}, panels: ["focus", "monotonic", "eos"],
                      signed: ["monotonic"]}};

// every piece a word of its own: the groups are the positions
function axes(queries, keys, queryPieces) {
  const each = (n) => Array.from({length: n}, (_, i) => [i]);
  const make = (rows, cols) => ({rows, cols, queries: rows.map((i) => queries[i]), keys: cols.map((j) => keys[j]),
                                 query_groups: each(rows.length), key_groups: each(cols.length),
                                 query_words: rows.map((i) => queries[i]), key_words: cols.map((j) => keys[j]),
                                 key_prefix_words: cols.map((j) => keys[j])});
  const ordinary = (pieces) => pieces.flatMap((p, i) => SPECIAL.has(p) ? [] : [i]);
  return {all: make(queries.map((_, i) => i), keys.map((_, j) => j)),
          hidden: make(ordinary(queryPieces), ordinary(keys))};
}

// (L, H, Tq, Tk) weights from a function of (l, h, i, j), each row normalised (masked cells 0 when causal)
function packed(L, H, Tq, Tk, f, causal) {
  const bytes = new Uint8Array(L * H * Tq * Tk);
  for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) for (let i = 0; i < Tq; i++) {
    const row = Array.from({length: Tk}, (_, j) => causal && j > i ? 0 : f(l, h, i, j));
    const total = row.reduce((a, b) => a + b, 0);
    row.forEach((x, j) => { bytes[((l * H + h) * Tq + i) * Tk + j] = Math.round(x / total * 255); });
  }
  return {shape: [L, H, Tq, Tk], scale: 255, weights: Buffer.from(bytes).toString("base64")};
}

function payload(token = "▁Hund") {
  const source = ["▁Zwei", token, "</s>"], target = ["<s>", "▁Two", token], output = ["▁Two", token, "</s>"];
  const pairs = target.map((t, i) => [t, output[i]]);
  const f = (l, h, i, j) => 1 + ((l + 2 * h + 3 * i + 5 * j) % 7);
  const kind = (name, label, queries, keys, causal) => ({
    name, label, title: label[0].toUpperCase() + label.slice(1), queries: queries === source ? "source" : "target",
    keys: keys === source ? "source" : "target", causal, stepped: queries !== source,
    query_title: queries === source ? "query: source piece" : "query: decoder position (read ▸ produced)",
    key_title: keys === source ? "key: source piece" : "key: decoder input piece (read)",
    step_color: name === "cross" ? "#3b528b" : "#21918c", off: name === "cross" ? [[2, 1]] : [],
    attention: packed(2, 2, queries.length, keys.length, f, causal),
    axes: axes(queries === source ? source : pairs, keys, queries === source ? source : output)});
  return {schema: "anatomy.trace/1", model: {key: "de-en"}, settings: {}, text: "", translation: "",
          pieces: {source, target, output}, top_k: [[["▁Two", 0.9], [token, 0.05]], [[token, 0.7]], [["</s>", 0.8]]],
          kinds: [kind("cross", "cross-attention", pairs, source, false),
                  kind("encoder", "encoder self-attention", source, source, false),
                  kind("decoder", "decoder masked self-attention", pairs, target, true)],
          stats: [1, 2].flatMap((layer) => [1, 2].flatMap((head) => ["cross", "encoder"].map((k) => (
            {kind: k, layer, head, focus: 0.1 * layer + 0.01 * head, monotonic: k === "cross" ? -0.5 : null,
             eos: 0.2}))))};
}

const VIEW = {kind: "cross", layer: 2, head: "mean", step: 2, merge: false, plain: false, hide: false,
              display: "heatmap", query: 1};
const view = (changes) => Object.assign({}, VIEW, changes);

test("the heatmap: queries are rows (first on top), keys columns, a fixed 0-1 scale, the step framed", () => {
  const fig = heatmap(payload(), view({}), LOOK), hm = fig.data[0];
  assert.deepEqual([hm.zmin, hm.zmax], [0, 1]);
  assert.ok(fig.layout.yaxis.title.text.startsWith("query") && fig.layout.xaxis.title.text.startsWith("key"));
  assert.equal(fig.layout.yaxis.autorange, "reversed");
  assert.equal(fig.layout.yaxis.ticktext[0], "&lt;s&gt; \u25b8 \u2581Two");
  assert.ok(hm.text[0][0].startsWith("&lt;s&gt; \u25b8 \u2581Two \u2192 \u2581Zwei: "));
  assert.equal(fig.layout.shapes.length, 1);
  assert.deepEqual([fig.layout.shapes[0].y0, fig.layout.shapes[0].y1], [0.5, 1.5]); // step 2
  assert.ok(fig.layout.height >= 260);
  assert.equal(fig.layout.title.text, "Cross-attention · layer 2, mean of 2 heads · head 1 off");
  assert.equal(heatmap(payload(), view({}), LOOK, "Trained").layout.title.text.split(":")[0], "Trained");
});

test("masked cells are drawn as masked, not as zero", () => {
  const fig = heatmap(payload(), view({kind: "decoder", head: "1"}), LOOK), hm = fig.data[0];
  assert.equal(hm.z[0][1], null);
  assert.notEqual(hm.z[1][1], null);
  assert.ok(hm.text[0][1].endsWith(": masked"));
  assert.equal(fig.layout.plot_bgcolor, LOOK.masked);
  assert.ok(fig.layout.annotations.some((a) => a.text.includes("mask")));
});

test("the step panels: the step's rows on the 0-1 scale, its top-k with the chosen piece apart", () => {
  const {cross, self, topk} = stepFigures(payload(), view({head: "1"}), LOOK);
  assert.deepEqual(cross.layout.yaxis.range, [0, 1]);
  assert.ok(cross.data[0].text[0].startsWith("\u2581Two \u25b8 \u2581Hund \u2192 \u2581Zwei: "));
  assert.ok(cross.layout.title.text.startsWith("Step 2 · cross-attention (layer 2, head 1)"));
  assert.equal(self.data[0].y.length, 2); // step 2 sees the pieces read so far
  assert.ok(topk.layout.title.text.startsWith("Step 2: next-piece probabilities"));
  // the drawn bars answer no pointer; a clear bar over each whole row does (a click there branches: branchOf)
  const [drawn, hit] = topk.data;
  assert.equal(drawn.hoverinfo, "skip");
  assert.deepEqual(hit.x, drawn.x.map(() => topk.layout.xaxis.range[1]));
  assert.deepEqual([hit.width, hit.meta, hit.customdata], [1, "branch=1", drawn.x]);
  const hidden = stepFigures(payload(), view({kind: "decoder", step: 1, hide: true}), LOOK).self;
  assert.ok(JSON.stringify(hidden).includes("sees only &lt;s&gt;, which is hidden"));
  const none = stepFigures(Object.assign(payload(), {pieces: {source: ["</s>"], target: [], output: []}}),
                           view({step: 0}), LOOK);
  assert.ok(JSON.stringify(none.cross).includes("No decoding step"));
});

test("the grid: every layer × head on one scale in whole percents, each naming its head for a click", () => {
  const fig = grid(payload(), view({}), LOOK, "switch this head off/on");
  assert.equal(fig.data.length, 4);
  assert.ok(fig.data.every((t) => t.coloraxis === "coloraxis"));
  assert.deepEqual([fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax], [0, 100]);
  assert.deepEqual(fig.layout.coloraxis.colorbar.ticktext, ["0", "0.25", "0.5", "0.75", "1"]);
  assert.deepEqual(fig.data.map((t) => t.meta), ["head=cross:1.1", "head=cross:1.2", "head=cross:2.1", "head=cross:2.2"]);
  const titles = fig.layout.annotations.map((a) => a.text);
  assert.ok(titles.includes("layer 2 · head 1 · <b>OFF</b>") && titles.includes("layer 1 · head 1"));
  assert.equal(fig.layout.shapes.length, 1); // the head off, greyed
  const masked = grid(payload(), view({kind: "decoder"}), LOOK, "open");
  assert.equal(masked.data.length, 8); // each head and its mask's overlay
  assert.equal(masked.data[1].hoverinfo, "skip");
  assert.deepEqual([masked.data[1].z[0][1], masked.data[1].z[1][0]], [1, 0]);
});

test("predictions: the emitted piece bold, a step whose piece was not in its top k in red", () => {
  const fig = topkTable(payload(), LOOK);
  assert.equal(fig.data[0].text[0][0], "<b>\u2581Two</b>");
  assert.ok(!fig.layout.yaxis.ticktext[0].includes("color"));
  assert.deepEqual(fig.data[0].z[2], [0.8, null]);
  assert.ok(fig.layout.yaxis.ticktext[0].startsWith("1 "));
  const missed = payload();
  missed.top_k[1] = [["▁Katze", 0.6]];
  assert.ok(topkTable(missed, LOOK).layout.yaxis.ticktext[1].includes("color"));
});

test("head statistics: a panel per statistic that applies, the correlation on its own scale", () => {
  const fig = summary(payload(), "cross", LOOK);
  assert.deepEqual(fig.layout.annotations.map((a) => a.text), ["focus", "monotonic", "EOS"]);
  assert.deepEqual(fig.data.map((t) => t.coloraxis), ["coloraxis", "coloraxis2", "coloraxis"]);
  assert.deepEqual([fig.layout.coloraxis2.cmin, fig.layout.coloraxis2.cmax], [-1, 1]);
  assert.ok(Math.abs(fig.data[0].z[1][0] - 0.21) < 1e-9); // layer 2, head 1
  assert.ok(fig.data[0].hovertemplate.startsWith("layer %{y}, head %{x}: focus %{z:.2f}"));
  const encoder = summary(payload(), "encoder", LOOK);
  assert.deepEqual(encoder.layout.annotations.map((a) => a.text), ["focus", "EOS"]);
  assert.equal(encoder.layout.coloraxis2, undefined);
  assert.ok(summary(payload(), "decoder", LOOK).layout.annotations[0].text.includes("No decoder masked"));
});

test("every label escapes markup: a hostile piece never reaches Plotly as a tag", () => {
  for (const token of [HOSTILE, "<b>", "<script>alert(1)</script>"]) {
    const P = payload(token), v = view({head: "1"});
    const figures = [heatmap(P, v, LOOK), heatmap(P, view({kind: "decoder"}), LOOK), lines(P, v, LOOK),
                     grid(P, v, LOOK, "open"), topkTable(P, LOOK), ...Object.values(stepFigures(P, v, LOOK)),
                     positional({d_model: 8, max_len: 10, layout: "interleaved", dims: [1]}, P.pieces.source, LOOK).rows];
    for (const fig of figures) {
      const text = JSON.stringify(fig).replace(/<\/?b>/g, "").replace(/<br>/g, "").replace(/<extra><\/extra>/g, "")
        .replace(/<span style=\\"color:#dc2626\\">|<\/span>/g, "");
      assert.ok(!text.includes("<a ") && !text.includes("<script") && !text.includes(token), fig.layout.title?.text);
    }
  }
  assert.equal(emptyFigure(LOOK, "<b>x</b>").layout.annotations[0].text, "&lt;b&gt;x&lt;/b&gt;");
});

test("export names say direction, step, kind, layer, head and how it is drawn", () => {
  const P = payload();
  assert.equal(exportName(P, view({head: "2", step: 4})), "de-en_cross-attention_layer2_head2");
  assert.equal(exportName(P, view({kind: "decoder", layer: 1, merge: true})),
               "de-en_decoder-masked-self-attention_layer1_mean-of-heads_words");
  assert.equal(exportName(P, view({head: "2", step: 4}), "step-self"),
               "de-en_step4_decoder-masked-self-attention_layer2_head2");
  assert.equal(exportName(P, view({step: 4}), "step-topk"), "de-en_step4_next-piece-probabilities");
  assert.equal(exportName(P, view({kind: "encoder", display: "walk", query: 3})),
               "de-en_encoder-self-attention_layer2_head1_walk-query3");
  assert.ok(exportName(P, view({hide: true, display: "lines"})).endsWith("_lines_no-special"));
});

test("the softmax walk, by hand: q·k, ÷√d_k, the mask, the softmax over what is visible, Σ softmax · v", () => {
  const w = {kind: "decoder", layer: 1, head: 2, row: 0, query: ["<s>", "\u2581Two"], keys: ["<s>", "\u2581Two"],
             q: [1, 0], k: [[1, 0], [0, 1]], v: [[2, 0], [0, 4]], visible: [true, false]};
  const s = walkStages(w);
  assert.deepEqual(s.scores, [1, 0]);
  assert.ok(Math.abs(s.scaled[0] - Math.SQRT1_2) < 1e-12);
  assert.deepEqual(s.weights, [1, 0]); // the hidden key gets nothing
  assert.deepEqual(s.output, [2, 0]);
  const open = walkStages(Object.assign({}, w, {visible: [true, true]}));
  const e = Math.exp(Math.SQRT1_2);
  assert.ok(Math.abs(open.weights[0] - e / (e + 1)) < 1e-12);
  assert.ok(Math.abs(open.output[1] - 4 / (e + 1)) < 1e-12);
  const fig = walkFigure(w, view({kind: "decoder", head: "2", plain: true}), LOOK, "Decoder masked self-attention");
  const masked = fig.data.find((t) => t.name === "masked");
  assert.ok(Math.abs(masked.z[0][0] - Math.SQRT1_2) < 1e-12 && masked.z[1][0] === null);
  assert.deepEqual(masked.text, [["0.71"], ["\u2212\u221e"]]);
  assert.ok(fig.layout.title.text.startsWith("Decoder masked self-attention · layer 1, head 2<br>query &lt;s&gt; \u25b8 Two:"));
  assert.deepEqual(fig.layout.yaxis2.ticktext, undefined);
  assert.ok(fig.layout.yaxis.domain[0] > fig.layout.yaxis7.domain[1]); // q above the keys
});

test("head importance maps: a row per kind and a column per measure, each cell naming its head; heads off grey", () => {
  const kind = (name, label) => ({name, label, values: [[[0.5, -0.25]], [[1, 0]]], notes: [null, [["same 0.90", "eos 0.10"]]]});
  const m = {title: "Which heads", off: ["cross:1.2", "bogus", "cross:9.9"],
             measures: [{title: "ablation: drop in log p", colorscale: LOOK.diverging, zmin: -1, zmax: 1,
                         legend: ["red: log p drops without it (the head helps)", "blue: <rises>"]},
                        {title: "confidence", colorscale: LOOK.attention, zmin: 0, zmax: 1}],
             kinds: [kind("encoder", "Encoder self-attention"), kind("cross", "<b>Cross</b>")]};
  const fig = importanceMaps(m, LOOK);
  assert.equal(fig.data.length, 4);
  assert.deepEqual(fig.data[2].customdata, [["head=cross:1.1", "head=cross:1.2"]]);
  assert.deepEqual(fig.data[0].text, [["0.50", "-0.25"]]);
  assert.equal(fig.data[1].text[0][0], "1.00<br>same 0.90");
  assert.equal(fig.layout.shapes.length, 2); // cross:1.2 in both columns; the others are no heads of the model
  assert.ok(fig.layout.annotations.some((a) => a.text.startsWith("<b>&lt;b&gt;Cross&lt;/b&gt;</b><br>ablation")));
  // the ablation's legend under its title, in each kind's row, with room for its lines above the maps
  const legends = fig.layout.annotations.filter((a) => a.text.includes("red: log p drops without it (the head helps)")
                                                   && a.text.includes("blue: &lt;rises&gt;"));
  assert.equal(legends.length, 2);
  assert.ok(!fig.layout.annotations.find((a) => a.text.includes("confidence")).text.includes("red:"));
  const plain = importanceMaps(Object.assign({}, m, {measures: m.measures.map((x) => Object.assign({}, x,
                                                                                              {legend: []}))}), LOOK);
  assert.ok(fig.layout.yaxis.domain[1] < plain.layout.yaxis.domain[1]);
  assert.ok(fig.layout.yaxis.domain[0] > fig.layout.yaxis3.domain[1]); // the first kind on top
  const change = logProbChange({pieces: ["\u2581Two", "<b>"], before: [-1, -2], after: [-1.5, -1], title: "t"}, LOOK);
  assert.deepEqual(change.data[0].y, [-0.5, 1]);
  assert.deepEqual(change.data[0].marker.color, ["#dc2626", "#2563eb"]);
  assert.deepEqual(change.data[0].x, ["1 \u2581Two", "2 &lt;b&gt;"]);
});

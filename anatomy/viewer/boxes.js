// What each of the app's figure boxes shows, as a pure function of the data (the shown trace's payload, its
// untrained twin's, the softmax walk the server drew) and the view: the host (host.js) draws them in the page, and
// tests/js/draw.mjs prints them for tests/test_app.py and the others.

import {METHODS, NOTHING_TO_EXPLAIN, explainsPayload, lensStep, lensTranslation, whyAgreement, whyShares, whyStep,
  whyTranslation} from "./explain.js";
import {WEIGHTS, hasNorms} from "./weights.js";
import {differenceFigure, pairedView} from "./compare.js";
import {MEAN, emptyFigure, exportName, fitted, grid, heatmap, importanceMaps, large, logProbChange, positional,
  stepFigures, steps, summary, topkTable, walkFigure} from "./figures.js";

export const PLACEHOLDER = "Translate a sentence to see this";
export const NO_PAIR = "Compare with… a second sentence to see this";
const WALKS_FIRST = "The softmax walk follows sentence 1's query: heatmap or lines show both";
const FIRST = "Sentence 1", SECOND = "Sentence 2";

/**
 * @typedef {import("./figures.js").Look} Look
 * @typedef {import("./figures.js").View} View
 * @typedef {import("./figures.js").Figure} Figure
 * @typedef {import("./figures.js").Vectors} Walk  the q, k, v of a walk, from the server
 * @typedef {{d_model: number, max_len: number, layout: string, dims: number[], source: string[] | null}}
 *   Positional  the chosen model's encoding (`dims`: its default curves) and the shown translation's source, if
 *   of that model
 * @typedef {{maps: Object | null, changes: Object | null, corpus: Object | null, key: string}} Importance  the
 *   translation's head importance, what its heads off changed, the model's corpus importance (figures.js
 *   `importanceMaps`, `logProbChange`), and the direction that names their files
 * @typedef {{payload: Object | null, twin: Object | null, walk: Walk | null, positional: Positional | null,
 *   importance: Importance | null, explain: import("./explain.js").Explain | null,
 *   norms: import("./weights.js").Norms | null, figures: Object<string, Figure | null> | null}} Data  `figures`:
 *   those the server drew, by box
 * @typedef {View & {query: number, method: string, dims?: (string | number)[]}} Shown  a view with the walk's
 *   query (from 1), Why this word's method and the positional encoding's chosen dimensions
 * @typedef {Figure & {asks?: string, asksNorms?: boolean}} Drawing  a figure, or a placeholder whose `asks` or
 *   `asksNorms` says what the server should send for it (walk, norms)
 */

/**
 * The view fitted to the data: its kind's layers and heads, its steps, the walk query within the source.
 * @param {Object} payload
 * @param {Shown} view
 * @returns {Shown}
 */
export function fittedView(payload, view) {
  const {dims, ...shown} = view; // the positional encoding's: no view of the payload depends on them
  const known = (value, all) => all.includes(value) ? value : all[0];
  const v = fitted(payload, Object.assign(shown, {head: view.head === MEAN ? MEAN : String(view.head),
                                                  method: known(view.method, METHODS),
                                                  weights: known(view.weights, WEIGHTS)}));
  return Object.assign(v, {query: Math.min(Math.max(Math.round(+view.query) || 1, 1),
                                           Math.max(payload.pieces.source.length, 1))});
}

const named = (figure, name) => {
  figure.layout.meta = Object.assign({}, figure.layout.meta, {export: name});
  return figure;
};

/**
 * The walk of the view's kind, layer, head (the first for the mean) and query, from the q, k, v the server sent;
 * or, when it has not sent those (yet), a figure saying so whose `asks` names them (the host asks once per walk).
 * @param {Data} d
 * @param {Shown} v
 * @param {Look} look
 * @returns {Figure & {asks?: string}}
 */
function walk(d, v, look) {
  const P = d.payload, kind = P.kinds.find((k) => k.name === v.kind);
  if (kind.stepped ? !steps(P) : !P.pieces.source.length) {
    return emptyFigure(look, "No query to follow: nothing was decoded", 300);
  }
  const want = [v.kind, v.layer, v.head === MEAN ? 1 : +v.head, kind.stepped ? v.step - 1 : v.query - 1];
  const w = d.walk;
  if (w && JSON.stringify([w.kind, w.layer, w.head, w.row]) === JSON.stringify(want)) {
    return named(walkFigure(w, v, look, kind.title), exportName(P, v));
  }
  return Object.assign(emptyFigure(look, "Computing q, k and v for the softmax walk…", 300),
                       {asks: JSON.stringify(want)});
}

// The three step panels of the last payload and view, made together: a view change redraws them one after another.
let lastSteps = {payload: null, view: "", figures: null};
function stepPanels(payload, v, look) {
  const view = JSON.stringify(v);
  if (lastSteps.payload !== payload || lastSteps.view !== view) {
    lastSteps = {payload, view, figures: stepFigures(payload, v, look)};
  }
  return lastSteps.figures;
}

const step = (part) => ({
  depends: (v, versions) => [versions.payload, versions.norms, v.layer, v.head, v.step, v.merge, v.plain, v.hide,
                             v.weights],
  make: (v, d, look) => weighing(d, v, look) ||
    named(stepPanels(d.payload, v, look)[part], exportName(d.payload, v, `step-${part}`))});

export const ASKING_NORMS = "Value-norm weights: asking the model for this translation's value norms…";
/**
 * A placeholder that asks for the value norms while a view wants value-norm weights the viewer has not got (the
 * host asks once per translation); null when there is nothing to wait for.
 * @param {Data} d
 * @param {Shown} v
 * @param {Look} look
 * @returns {(Figure & {asksNorms: boolean}) | null}
 */
function weighing(d, v, look) {
  return v.weights === "value-norm" && !hasNorms(d.payload)
    ? Object.assign(emptyFigure(look, ASKING_NORMS, 300), {asksNorms: true}) : null;
}
const twinned = (v, versions) => [versions.payload, versions.twin, versions.norms, ...Object.values(v)];
/**
 * What Why this word's figures say until the explanation of the shown translation comes: the tab asks for it when it
 * opens and after each translation while it is open (a host without a model hides these figures), so it is on its
 * way; where its progress shows.
 * @param {Object} payload
 * @returns {string}
 */
const explaining = (payload) => {
  const T = payload.pieces.output.length;
  if (!T) return NOTHING_TO_EXPLAIN;
  return `Explaining this translation: each method at each of its ${T} step${T === 1 ? "" : "s"}…` +
    "\n(seconds; the progress shows at the top of this section)";
};
// why the shown translation's pieces, once the server sent it (the Why this word tab asks for it); `fields`: the
// view's fields the drawing reads
const explained = (draw, name, fields) => ({
  depends: (v, versions) => [versions.payload, versions.explain, ...fields.map((f) => v[f])],
  make: (v, d, look) => explainsPayload(d.explain, d.payload)
    ? named(draw(d.explain, d, v, look), exportName(d.payload, v, name))
    : emptyFigure(look, explaining(d.payload), 300)});
const VIEWED = ["step", "method", "merge", "plain", "hide"];
const agreeing = explained((e, d, v, look) => whyAgreement(e, d.payload, v, look), "why-agree", ["step"]);

/**
 * The dimensions drawn as curves: those chosen (the page's dropdown, strings of numbers) that the model has, or its
 * default ones.
 * @param {Positional} p
 * @param {(string | number)[] | null | undefined} chosen
 */
export function curveDims(p, chosen) {
  const dims = [...new Set((chosen || []).map(Number))].filter((d) => Number.isInteger(d) && d >= 0 && d < p.d_model);
  return dims.length ? dims.sort((a, b) => a - b) : p.dims;
}

const encoding = (part) => ({needs: "positional",
  depends: (v, versions) => [versions.positional, part === "curves" && curveDims(v.positional, v.dims)],
  make: (v, d, look) => {
    if (part === "rows" && !d.positional.source) return emptyFigure(look, PLACEHOLDER, 300);
    const p = Object.assign({}, d.positional, {dims: curveDims(d.positional, v.dims)});
    return positional(p, p.source || [], look)[part];
  }});

// a figure the server drew (the architecture, the parameters, the training curves, the pruning curves)
const served = (name) => ({needs: "figures", depends: (v, versions) => [versions.figures],
                           make: (v, d, look) => d.figures[name] || emptyFigure(look, PLACEHOLDER, 300)});

const judged = (part, draw, name) => ({needs: "importance",
  depends: (v, versions) => [versions.importance],
  make: (v, d, look) => d.importance[part]
    ? named(draw(d.importance[part], look), `${d.importance.key}_${name}`)
    : emptyFigure(look, part === "maps" ? "Open this tab again to judge the heads of this translation" : PLACEHOLDER,
                  300)});

/**
 * The boxes by element id: what each one's drawing depends on (the data's versions and the view's fields), and
 * the drawing. A box needs the payload (`v` fitted to it: fittedView) unless it names the data it needs
 * (positional, importance: `v` as the controls give it).
 * The large view's boxes (`large`) are drawn and painted before the others in the window.
 * @type {Object<string, {needs?: string, large?: boolean, depends: function(Shown, Object): Array,
 *   make: function(Shown, Data, Look): Drawing}>}
 */
export const BOXES = {
  heatmap: {large: true,
            depends: (v, versions) => [versions.payload, versions.walk, versions.norms, ...Object.values(v)],
            make: (v, d, look) => v.display === "walk" ? walk(d, v, look)
              : weighing(d, v, look) || (d.payload.pair
                ? named(large(d.payload, Object.assign({}, v, {row: v.query}), look, FIRST), exportName(d.payload, v))
                : named(large(d.payload, v, look), exportName(d.payload, v)))},
  // a pair's second sentence beside the first, on the same colour scale, and their difference
  "heatmap-second": {large: true,
                     depends: (v, versions) => [versions.payload, versions.norms, ...Object.values(v)],
                     make: (v, d, look) => !d.payload.pair ? emptyFigure(look, NO_PAIR, 300)
                       : v.display === "walk" ? emptyFigure(look, WALKS_FIRST, 300)
                       : named(large(d.payload.pair.second, pairedView(d.payload, d.payload.pair, v), look, SECOND),
                               exportName(d.payload.pair.second, v, "second"))},
  "pair-difference": {depends: (v, versions) => [versions.payload, versions.norms, v.kind, v.layer, v.head, v.merge,
                                                 v.plain, v.hide, v.weights],
                      make: (v, d, look) => d.payload.pair
                        ? named(differenceFigure(d.payload, d.payload.pair.second, v, look),
                                exportName(d.payload, v, "difference"))
                        : emptyFigure(look, NO_PAIR, 300)},
  "step-cross": step("cross"), "step-self": step("self"),
  "step-topk": {depends: (v, versions) => [versions.payload, v.step, v.plain],
                make: (v, d, look) => named(stepPanels(d.payload, v, look).topk,
                                            exportName(d.payload, v, "step-topk"))},
  grid: {depends: (v, versions) => [versions.payload, versions.norms, v.kind, v.merge, v.plain, v.hide, v.weights],
         make: (v, d, look) => weighing(d, v, look) || named(grid(d.payload, v, look, "switch this head off/on"),
                                                             exportName(d.payload, v, "grid"))},
  summary: {depends: (v, versions) => [versions.payload, v.kind],
            make: (v, d, look) => summary(d.payload, v.kind, look)},
  "topk-table": {depends: (v, versions) => [versions.payload], make: (v, d, look) => topkTable(d.payload, look)},
  "why-step": explained((e, d, v, look) => whyStep(e, d.payload, v, look), "why", VIEWED),
  "why-shares": explained((e, d, v, look) => whyShares(e, d.payload, v, look), "why-shares", ["step", "plain"]),
  "why-all": explained((e, d, v, look) => whyTranslation(e, d.payload, v, look), "why-all", VIEWED),
  // with the value-norm bars: the norms asked for as the attention views ask
  "why-agree": {depends: (v, versions) => [versions.payload, versions.explain, versions.norms, v.step],
                make: (v, d, look) => explainsPayload(d.explain, d.payload) && !hasNorms(d.payload)
                  ? weighing(d, Object.assign({}, v, {weights: "value-norm"}), look) : agreeing.make(v, d, look)},
  "lens-step": explained((e, d, v, look) => lensStep(e.lens, d.payload, v.step, look), "logit-lens", ["step"]),
  "lens-all": explained((e, d, v, look) => lensTranslation(e.lens, d.payload, v.step, look), "logit-lens-all",
                        ["step"]),
  "compare-trained": {depends: twinned, make: (v, d, look) => d.twin
    ? weighing(d, v, look) || named(heatmap(d.payload, v, look, "Trained"), exportName(d.payload, v, "trained"))
    : emptyFigure(look, PLACEHOLDER, 300)},
  "compare-untrained": {depends: twinned, make: (v, d, look) => d.twin
    ? named(heatmap(d.twin, fitted(d.twin, v), look, "Untrained"), exportName(d.payload, v, "untrained"))
    : emptyFigure(look, PLACEHOLDER, 300)},
  pe: encoding("table"), "pe-curves": encoding("curves"), "pe-similarity": encoding("similarity"),
  "pe-rows": encoding("rows"),
  importance: judged("maps", importanceMaps, "head-importance"),
  "log-probs": judged("changes", logProbChange, "heads-off-log-p"),
  "corpus-importance": judged("corpus", importanceMaps, "corpus-head-importance"),
  architecture: served("architecture"), parameters: served("parameters"), training: served("training"),
  pruning: served("pruning"),
};

// The app's host (ui/static/app.js starts it): the explorer's large view, the decoding steps, the output so far and
// the tabs that show the translation, drawn in the page by figures.js from the payloads the server sends. A view
// change (kind, layer, head, step, words, ▁, special tokens, display, walk query) redraws here, with no request to
// the server; only the softmax walk's q, k, v come from it (a model pass), asked for with a click on a hidden button.

import {MEAN, emptyFigure, exportName, fitted, grid, heatmap, large, stepFigures, steps, summary, topkTable}
  from "./figures.js";
import {readPayload} from "./payload.js";

const PLACEHOLDER = "Translate a sentence to see this";
// The fields of a view that a softmax walk depends on (the server says which view it drew: ui/handlers.py `walk`).
const WALK_FIELDS = ["kind", "layer", "head", "step", "query", "plain", "merge", "hide"];

/**
 * @typedef {import("./figures.js").Look} Look
 * @typedef {import("./figures.js").View} View
 * @typedef {{view: Object, figure: {data: Object[], layout: Object}}} Walk  a walk the server drew, and for which view
 */

/**
 * A host drawing into the page's figure boxes: an element with the box's id holding a `.anatomy-plot` (Plotly
 * draws there) or, for the output so far, `.anatomy-chips`.
 * @param {{look: Look, config: Object, plotly: string, askWalk: function(): void}} options  `plotly`: where
 *   Plotly.js is, loaded when the page has none yet; `askWalk`: asks the server for the walk of the current view
 */
export function createHost(options) {
  const {look, config} = options;
  const data = {payload: null, twin: null, walk: null};
  const versions = {payload: 0, twin: 0, walk: 0};
  /** @type {View & {query: number} | null} */
  let view = null;
  let asked = "";
  const drawn = new WeakMap();

  const empty = (message = PLACEHOLDER, height = 300) => emptyFigure(look, message, height);
  const named = (figure, name) => {
    figure.layout.meta = Object.assign({}, figure.layout.meta, {export: name});
    return figure;
  };

  function fittedView() {
    const P = data.payload, v = fitted(P, view);
    return Object.assign(v, {query: Math.min(Math.max(Math.round(+view.query) || 1, 1),
                                             Math.max(P.pieces.source.length, 1))});
  }

  function walkFigure(v) {
    const P = data.payload, kind = P.kinds.find((k) => k.name === v.kind);
    if (kind.stepped ? !steps(P) : !P.pieces.source.length) {
      return empty("No query to follow: nothing was decoded");
    }
    const want = JSON.stringify(WALK_FIELDS.map((f) => v[f]));
    const w = data.walk;
    if (w && JSON.stringify(WALK_FIELDS.map((f) => w.view[f])) === want) {
      return named({data: w.figure.data, layout: Object.assign({}, w.figure.layout)}, exportName(P, v));
    }
    if (asked !== want) { // once per view: a walk the server cannot make is not asked for again and again
      asked = want;
      options.askWalk();
    }
    return empty("Computing q, k and v for the softmax walk…");
  }

  // Each box: what its drawing depends on, and how to draw it.
  const step = (part) => ({
    key: (v) => [versions.payload, v.layer, v.head, v.step, v.merge, v.plain, v.hide, part === "topk" || v.kind],
    make: (v) => named(stepFigures(data.payload, v, look)[part], exportName(data.payload, v, `step-${part}`))});
  const boxes = {
    heatmap: {key: (v) => [versions.payload, versions.walk, ...Object.values(v)],
              make: (v) => v.display === "walk" ? walkFigure(v) : named(large(data.payload, v, look),
                                                                        exportName(data.payload, v))},
    "step-cross": step("cross"), "step-self": step("self"), "step-topk": step("topk"),
    grid: {key: (v) => [versions.payload, v.kind, v.merge, v.plain, v.hide],
           make: (v) => named(grid(data.payload, v, look, "switch this head off/on"),
                              exportName(data.payload, v, "grid"))},
    summary: {key: (v) => [versions.payload, v.kind], make: (v) => summary(data.payload, v.kind, look)},
    "topk-table": {key: () => [versions.payload], make: () => topkTable(data.payload, look)},
    "compare-trained": {key: (v) => [versions.payload, versions.twin, ...Object.values(v)],
                        make: (v) => data.twin ? named(heatmap(data.payload, v, look, "Trained"),
                                                       exportName(data.payload, v, "trained")) : empty()},
    "compare-untrained": {key: (v) => [versions.payload, versions.twin, ...Object.values(v)],
                          make: (v) => data.twin ? named(heatmap(data.twin, fitted(data.twin, v), look, "Untrained"),
                                                         exportName(data.payload, v, "untrained")) : empty()},
  };

  function chips(box, v) {
    const P = data.payload, out = P ? P.pieces.output.slice(0, v ? v.step : 0) : [];
    box.replaceChildren(...out.map((piece, i) => {
      const span = document.createElement("span");
      span.className = "anatomy-chip" + (i === out.length - 1 ? " current" : "");
      span.textContent = piece;
      return span;
    }));
  }

  let loading = false;
  function plotly() {
    if (window.Plotly) return window.Plotly;
    if (!loading && options.plotly) {
      loading = true;
      const script = Object.assign(document.createElement("script"), {src: options.plotly});
      script.onload = () => refresh();
      document.head.appendChild(script);
    }
    return null;
  }

  /** Draw every box in view whose drawing is not what the data and the view now ask for. */
  function refresh() {
    const Plotly = plotly();
    if (!Plotly) return;
    const v = data.payload && view ? fittedView() : null;
    for (const [id, box] of Object.entries(boxes)) {
      const el = document.querySelector(`#${id} .anatomy-plot`);
      if (!el || !el.offsetParent) continue; // not on the page, or in a closed tab: drawn when it opens
      const key = JSON.stringify(v ? box.key(v) : ["empty"]);
      if (drawn.get(el) === key) continue;
      drawn.set(el, key);
      const figure = v ? box.make(v) : empty();
      Plotly.react(el, figure.data, figure.layout, config);
    }
    const partial = document.querySelector("#partial .anatomy-chips");
    if (partial) {
      const key = JSON.stringify(v ? [versions.payload, v.step] : ["empty"]);
      if (drawn.get(partial) !== key) {
        drawn.set(partial, key);
        chips(partial, v);
      }
    }
  }

  return {
    /**
     * New data from the server: "payload" (the shown translation's), "twin" (its untrained twin's) or "walk".
     * @param {string} name
     * @param {Object | null} value
     */
    set(name, value) {
      if (data[name] === value) return;
      data[name] = value && name !== "walk" ? readPayload(value) : value || null;
      versions[name] += 1;
    },
    /**
     * The view the controls show (layer and step from 1, head "mean" or a number, query from 1).
     * @param {View & {query: number}} next
     */
    view(next) {
      view = Object.assign({}, next, {head: next.head === MEAN ? MEAN : String(next.head)});
    },
    refresh,
  };
}

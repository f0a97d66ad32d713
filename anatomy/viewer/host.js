// The app's host (ui/static/app.js starts it): the explorer's large view, the decoding steps, the output so far and
// the tabs that show the translation, drawn in the page (boxes.js) from the payloads the server sends. A view change
// (kind, layer, head, step, words, ▁, special tokens, display, walk query) redraws here, with no request to the
// server; only the softmax walk's q, k, v come from it (a model pass), asked for with a click on a hidden button.

import {BOXES, PLACEHOLDER, fittedView} from "./boxes.js";
import {emptyFigure} from "./figures.js";
import {readPayload, traceKey} from "./payload.js";
import {setNorms} from "./weights.js";

/**
 * A host drawing into the page's figure boxes: an element with the box's id holding a `.anatomy-plot` (Plotly
 * draws there) or, for the output so far, `.anatomy-chips`.
 * @param {{look: import("./figures.js").Look, config: Object, plotly: string, askWalk: function(): void,
 *   askNorms: function(): void, loaded: function(): void, held?: boolean}} options  `plotly`: where Plotly.js is,
 *   loaded when the page has none yet; `askWalk`: asks the server for the walk of the view; `askNorms`: for the
 *   translation's value norms; `loaded`: called once that Plotly.js has loaded (the page's script then wraps it and
 *   draws); `held`: no placeholders before a translation until `hold(false)`
 */
export function createHost(options) {
  const {look, config} = options;
  const data = {payload: null, twin: null, walk: null, positional: null, importance: null, explain: null, norms: null,
                figures: null};
  const versions = {payload: 0, twin: 0, walk: 0, positional: 0, importance: 0, explain: 0, norms: 0, figures: 0};
  const texts = {};  // each datum as last set, as JSON
  let view = null, asked = "", askedNorms = -1, loading = false, later = false, held = !!options.held;
  const drawn = new WeakMap(), drawnData = new WeakMap();

  function plotly() {
    if (window.Plotly) return window.Plotly;
    if (!loading && options.plotly) {
      loading = true;
      // (a link's page fetched it with the page: ui/__init__.py plotly_early); run after the next paint, so that
      // what the page has just shown (a link's translation, the tour's panel) is seen during its ~0.5 s of evaluating
      const script = Object.assign(document.createElement("script"), {src: options.plotly});
      script.addEventListener("load", () => options.loaded());
      requestAnimationFrame(() => setTimeout(() => document.head.appendChild(script)));
    }
    return null;
  }

  function chips(box, v) {
    const out = v ? data.payload.pieces.output.slice(0, v.step) : [];
    box.replaceChildren(...out.map((piece, i) => {
      const span = document.createElement("span");
      span.className = "anatomy-chip" + (i === out.length - 1 ? " current" : "");
      span.textContent = piece;
      return span;
    }));
  }

  /**
   * What a box should show now: the view it is drawn with (null without its data) and the key of its drawing.
   * @param {Object} box  one of BOXES
   * @param {Object | null} fitted  the view fitted to the payload
   */
  function wanted(box, fitted) {
    const own = box.needs && data[box.needs];
    const v = box.needs ? own && view && Object.assign({}, view, {[box.needs]: own}) : fitted;
    return {v, key: JSON.stringify(v ? box.depends(v, versions) : ["empty"])};
  }

  /**
   * Draw every box in view whose drawing is not what the data and the view now ask for: the large view's in the
   * window first, then (once those are painted) the window's others, then (once those are) the ones below the fold,
   * so that a new translation or view change shows where the visitor looks in the time of the figures there.
   * @param {number} [stage]  0: the window's, a translation's large view alone when others wait; 1: the window's; 2:
   *   all
   */
  function refresh(stage = 0) {
    if (held && !data.payload) return;
    const Plotly = plotly();
    if (!Plotly) return;
    const fitted = data.payload && view ? fittedView(data.payload, view) : null;
    // what each box in view should show, measured before any is drawn: a look after a drawing would lay the page
    // out again
    const due = Object.entries(BOXES).map(([id, box]) => {
      const el = /** @type {HTMLElement | null} */ (document.querySelector(`#${id} .anatomy-plot`));
      if (!el || !el.offsetParent) return null; // not on the page, or in a closed tab: drawn when it opens
      const {v, key} = wanted(box, fitted);
      if (drawn.get(el) === key) return null;
      const r = el.getBoundingClientRect();
      return {box, el, v, key, seen: r.bottom > 0 && r.top < window.innerHeight};
    }).filter(Boolean);
    const seen = due.filter((d) => d.seen), large = seen.filter((d) => d.box.large);
    // (placeholders, before any translation, all at once)
    const now = stage === 2 ? due
      : stage === 0 && data.payload && large.length && large.length < seen.length ? large : seen;
    for (const {box, el, v, key} of now) {
      drawn.set(el, key);
      /** @type {import("./boxes.js").Drawing} */
      const figure = v ? box.make(v, data, look) : emptyFigure(look, PLACEHOLDER, 300);
      if (figure.asks && figure.asks !== asked) { // once per view: a walk the server cannot make is not asked again
        asked = figure.asks;
        options.askWalk();
      }
      if (figure.asksNorms && askedNorms !== versions.payload) { // once per translation
        askedNorms = versions.payload;
        options.askNorms();
      }
      // the traces drawn before, when equal: Plotly compares them by identity, and then redraws only the layout
      // (a step change moves the large view's frame: a tenth of drawing the heatmap again)
      const traces = JSON.stringify(figure.data), before = drawnData.get(el);
      if (before && before.text === traces) figure.data = before.data;
      else drawnData.set(el, {text: traces, data: figure.data});
      Plotly.react(el, figure.data, figure.layout, config);
    }
    if (!later && now.length < due.length) { // after the window's next paint
      later = true;
      const next = now === large ? 1 : 2;
      requestAnimationFrame(() => setTimeout(() => { later = false; refresh(next); }));
    }
    const partial = document.querySelector("#partial .anatomy-chips");
    const key = JSON.stringify(fitted ? [versions.payload, fitted.step] : ["empty"]);
    if (partial && drawn.get(partial) !== key) {
      drawn.set(partial, key);
      chips(partial, fitted);
    }
  }

  return {
    /**
     * New data from the server: "payload" (the shown translation's), "twin" (its untrained twin's), "walk",
     * "positional" (the chosen model's encoding), "importance" (its heads') or "explain" (why its pieces: explain.js).
     * @param {string} name
     * @param {Object | null} value
     */
    set(name, value) {
      // by content: the page may hand the same value over as a new object on each event
      const text = JSON.stringify(value ?? null);
      if (texts[name] === text) return;
      texts[name] = text;
      data[name] = value && (name === "payload" || name === "twin") ? readPayload(value) : value || null;
      versions[name] += 1;
      setNorms(data.payload, data.norms); // kept only with the payload whose translation they are of
    },
    /**
     * The view the controls show (layer and step from 1, head "mean" or a number, query from 1) and the
     * positional encoding's chosen dimensions (`dims`).
     * @param {import("./boxes.js").Shown} next
     */
    view(next) {
      view = next;
    },
    /** Start loading Plotly.js before a figure needs it (a link's page, while its translation is made). */
    preload() {
      plotly();
    },
    /**
     * No placeholders while `on` (a link's page, whose translation is on its way: drawing them would take the main
     * thread from its own); off again, the next refresh draws what is due.
     * @param {boolean} on
     */
    hold(on) {
      held = on;
    },
    /** @returns {number} how many times `name`'s data has changed (a new translation: "payload") */
    version: (name) => versions[name],
    refresh,
    /**
     * Whether the box `id` is drawn with what the data and the view now ask for (a box in a closed tab is drawn
     * when it opens).
     * @param {string} id
     */
    current(id) {
      const el = document.querySelector(`#${id} .anatomy-plot`), box = BOXES[id];
      return !!(el && box && drawn.get(el) ===
                wanted(box, data.payload && view ? fittedView(data.payload, view) : null).key);
    },
    /**
     * Whether `el` is a box's figure that is drawn, but not with what the data and the view now ask for: the next
     * refresh draws it again.
     * @param {Element} el
     */
    stale(el) {
      const id = drawn.has(el) && Object.keys(BOXES).find((name) => el.matches(`#${name} .anatomy-plot`));
      return !!id && !this.current(id);
    },
    /** @returns {string | null} what the shown translation is (payload.js `traceKey`), null before one */
    shownKey: () => (data.payload ? traceKey(data.payload) : null),
  };
}

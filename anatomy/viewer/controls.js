// The view controls of every host (the app, the offline file, a notebook's frame): attention kind, layer, head,
// decoding step, how the large view draws it, the walk's query, the weights and the three label switches, and the
// keys that move them. They hold the view; a host draws it (host.js, page.js) when `changed` tells it.

import {MEAN, fitIn} from "./figures.js";
import {readable} from "./labels.js";

export const FLAGS = ["merge", "plain", "hide"];
export const KIND_ORDER = ["cross", "encoder", "decoder"];
const DISPLAYS = [["heatmap", "heatmap"], ["lines", "lines"], ["softmax walk", "walk"]];
const FLAG_LABELS = {merge: ["Merge pieces into words", ""],
                     plain: ["Hide ▁ marker", "a piece inside a word starts with ·"],
                     hide: ["Hide special tokens", "<s>, </s>, <pad>; rows renormalised"]};
// ← / → step, [ / ] layer, , / . head
/** @type {Object<string, ["step" | "layer" | "head", number]>} */
export const KEYS = {ArrowLeft: ["step", -1], ArrowRight: ["step", 1], "[": ["layer", -1], "]": ["layer", 1],
                     ",": ["head", -1], ".": ["head", 1]};
const range = (n) => Array.from({length: n}, (_, i) => i + 1);

/**
 * @typedef {{kind: string, layer: number, head: string, step: number, merge: boolean, plain: boolean,
 *   hide: boolean, display: string, weights: string, query: number}} ViewState  layer, step and query from 1
 *   (step 0: nothing decoded); head "mean" or "1", "2", ...
 * @typedef {{kinds: {name: string, title: string, layers: number, heads: number}[], steps: number,
 *   source: string[], target: string[], output: string[], pair?: boolean}} Shape  what the controls offer: a
 *   translation's (shapeOf) or, before one, a model's (no pieces); `pair`: a second sentence beside it
 */

/**
 * What the controls offer for a read trace payload (payload.js readPayload): its kinds in the page's order, their
 * layers and heads, and its pieces.
 * @param {Object} payload
 * @returns {Shape}
 */
export function shapeOf(payload) {
  const kinds = payload.kinds.slice().sort((a, b) => KIND_ORDER.indexOf(a.name) - KIND_ORDER.indexOf(b.name));
  return {kinds: kinds.map((k) => ({name: k.name, title: k.title, layers: k.attention.shape[0],
                                    heads: k.attention.shape[1]})),
          steps: payload.pieces.output.length, source: payload.pieces.source, target: payload.pieces.target,
          output: payload.pieces.output, pair: !!payload.pair};
}

/**
 * The view within a shape: its kind's layers and heads, its steps (the last when unset), the query within the
 * source, a display and weights the page offers.
 * @param {ViewState} view
 * @param {Shape} shape
 * @param {{walk: boolean, weights: string[]}} offer
 * @returns {ViewState}
 */
export function fitView(view, shape, offer) {
  const kind = shape.kinds.find((k) => k.name === view.kind) || shape.kinds[0];
  const v = fitIn(view, kind, shape.steps);
  const displays = DISPLAYS.map(([, d]) => d).filter((d) => offer.walk || d !== "walk");
  return Object.assign(v, {
    step: shape.steps ? v.step : 0,
    display: displays.includes(view.display) ? view.display : displays[0],
    weights: offer.weights.includes(view.weights) ? view.weights : offer.weights[0],
    query: Math.min(Math.max(Math.round(+view.query) || 1, 1), Math.max(shape.source.length, 1)),
  });
}

/**
 * Make the controls in `root` and return what a host moves them with.
 * @param {Element} root
 * @param {{walk: boolean, weights: [string, string][], shape: Shape, view?: Partial<ViewState>,
 *   changed: function(ViewState, string): void}} options  `walk`: the softmax walk is offered (it needs the app's
 *   model); `weights`: the weights offered ([label, value]); `shape`: what is offered before a translation;
 *   `changed`: a visitor (or a key) changed the field it names
 */
export function createControls(root, options) {
  const doc = root.ownerDocument;
  let shape = options.shape, weights = options.weights;
  let state = fitView(Object.assign({kind: "cross", layer: 99, head: MEAN, step: 0, merge: false, plain: false,
                                     hide: false, display: "heatmap", weights: "attention", query: 1},
                                    options.view || {}), shape, offer());
  const el = (tag, props, ...children) => {
    const e = Object.assign(doc.createElement(tag), props || {});
    e.append(...children);
    return e;
  };
  const labelled = (text, control, id) => el("label", id ? {id} : {}, el("span", {className: "anatomy-label"}, text),
                                             " ", control);
  const select = (id) => el("select", {id});
  const fields = {kind: select("kind"), layer: select("layer"), head: select("head"), display: select("display"),
                  weights: select("weights"),
                  step: el("input", {id: "step", type: "range", min: 1, max: 1, value: 1}),
                  query: el("input", {id: "query", type: "range", min: 1, max: 1, value: 1})};
  const stepValue = el("output", {id: "step-value"}), queryValue = el("output", {id: "query-value"});
  const walkStep = el("span", {id: "walk-step", className: "anatomy-muted"},
                      "Walk query: the decoding step t (← / →)");
  const flags = Object.fromEntries(FLAGS.map((f) => [f, el("input", {id: f, type: "checkbox"})]));
  const queryBox = labelled("Walk query (source piece)", el("span", {}, fields.query, " ", queryValue), "query-box");
  const queryName = queryBox.querySelector(".anatomy-label");
  root.replaceChildren(el("div", {className: "anatomy-view-controls"},
    labelled("Attention", fields.kind), labelled("Layer", fields.layer), labelled("Head", fields.head),
    labelled("Decoding step", el("span", {className: "anatomy-step"}, fields.step, " ", stepValue), "step-box"),
    labelled("Show as", fields.display), queryBox, walkStep, labelled("Weights", fields.weights),
    ...FLAGS.map((f) => el("label", {title: FLAG_LABELS[f][1]}, flags[f], " ", FLAG_LABELS[f][0]))));

  function offer() {
    return {walk: options.walk, weights: weights.map(([, w]) => w)};
  }

  function choose(select, items, chosen) {
    const same = select.options.length === items.length &&
      items.every(([text, value], i) => select.options[i].value === String(value) && select.options[i].text === text);
    if (!same) select.replaceChildren(...items.map(([text, value]) => new doc.defaultView.Option(text, value)));
    select.value = String(chosen);
  }

  // The controls as the state says, the state first fitted to the shape.
  function render() {
    state = fitView(state, shape, offer());
    const kind = shape.kinds.find((k) => k.name === state.kind);
    choose(fields.kind, shape.kinds.map((k) => [k.title, k.name]), state.kind);
    choose(fields.layer, range(kind.layers).map((l) => [String(l), l]), state.layer);
    choose(fields.head, [["mean of heads", MEAN], ...range(kind.heads).map((h) => [String(h), String(h)])],
             state.head);
    choose(fields.display, DISPLAYS.filter(([, d]) => options.walk || d !== "walk"), state.display);
    choose(fields.weights, weights, state.weights);
    const T = shape.steps;
    Object.assign(fields.step, {max: Math.max(T, 1), value: state.step || 1, disabled: !T});
    stepValue.textContent = T ? `${state.step} of ${T}` + (shape.target.length
      ? `: ${readable(shape.target[state.step - 1], 14)} \u25b8 ${readable(shape.output[state.step - 1], 14)}` : "")
      : "no step";
    const S = Math.max(shape.source.length, 1);
    Object.assign(fields.query, {max: S, value: state.query});
    queryValue.textContent = shape.source.length ? `${state.query}: ${readable(shape.source[state.query - 1], 14)}`
      : String(state.query);
    const walking = state.display === "walk";
    // a pair frames a source row in both sentences' encoder views: this one
    queryBox.hidden = !(state.kind === "encoder" && (walking || shape.pair));
    queryName.textContent = walking ? "Walk query (source piece)" : "Framed row (source piece)";
    walkStep.hidden = !(walking && state.kind !== "encoder");
    for (const f of FLAGS) flags[f].checked = state[f];
  }

  function read(event) {
    const id = event.target.id;
    if (FLAGS.includes(id)) state[id] = flags[id].checked;
    else if (["layer", "step", "query"].includes(id)) state[id] = +fields[id].value;
    else state[id] = fields[id].value;
    render();
    options.changed(view(), id);
  }
  for (const [id, f] of Object.entries(fields)) {
    f.addEventListener(id === "step" || id === "query" ? "input" : "change", read);
  }
  for (const f of FLAGS) flags[f].addEventListener("change", read);

  const view = () => Object.assign({}, state);
  render();
  return {
    /** @returns {ViewState} the view the controls show */
    view,
    /**
     * What the controls offer: a translation's shape (shapeOf) or a model's, and the weights.
     * @param {Shape} next
     * @param {[string, string][]} [offered]
     */
    fit(next, offered) {
      shape = next;
      if (offered) weights = offered;
      render();
    },
    /** Set some fields (a link, the tour, a head opened from a figure): fitted, with no `changed`. */
    set(changes) {
      Object.assign(state, changes);
      render();
    },
    /**
     * Move the step, layer or head by `delta` (a key), as a visitor would.
     * @param {"step" | "layer" | "head"} name
     * @param {number} delta
     */
    nudge(name, delta) {
      const select = name === "step" ? null : fields[name];
      if (select) {
        const i = Math.min(Math.max(select.selectedIndex + delta, 0), select.options.length - 1);
        /** @type {Object} */ (state)[name] = name === "layer" ? +select.options[i].value : select.options[i].value;
      } else {
        if (!shape.steps) return;
        state.step = Math.min(Math.max(state.step + delta, 1), shape.steps);
      }
      render();
      options.changed(view(), name);
    },
  };
}

/**
 * The view keys on a document: ← / → step, [ / ] layer, , / . head, and a host's `extra` keys; never while typing.
 * A focused slider keeps its arrows (the step slider is the step); from any other control (a list, a checkbox, a
 * button) ← / → move the step: browsers move a focused list with them on some systems only (never on a Mac), and an
 * open list of Chromium's takes them and moves nothing, so the step would move or not by chance. A list keeps
 * ↑ / ↓.
 * @param {Document} doc
 * @param {{nudge: function(string, number): void}} controls
 * @param {Object<string, function(): void>} [extra]
 */
export function bindKeys(doc, controls, extra = {}) {
  doc.addEventListener("keydown", (e) => {
    const t = /** @type {Element} */ (e.target), move = KEYS[e.key], act = extra[e.key];
    if ((!move && !act) || e.ctrlKey || e.metaKey || e.altKey || !t || !t.matches) return;
    if (t.matches("textarea, [contenteditable], input:not([type=checkbox]):not([type=radio]):not([type=range])" +
                  ":not([type=button])")) return;
    if (e.key.startsWith("Arrow") && t.matches("input[type=range]")) return;
    e.preventDefault();
    if (move) controls.nudge(...move);
    else act();
  });
}

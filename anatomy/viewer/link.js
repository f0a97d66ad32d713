// The view part of a link to a translation: attention kind (`view`), layer, head, merge, step, hide, display, the
// walk's query, presenter mode and the tour's stop. Read against the shown translation (its kinds' layers, its
// heads, steps and source pieces): a value out of range becomes the nearest allowed one and a malformed one the
// default, and the notices name each with the range this translation allows. anatomy/inputs.py `parse_link` reads
// the rest of a link (direction, text and the decoding request) and reads these as this module does
// (tests/test_links.py holds the two equal).

export const DISPLAYS = ["heatmap", "lines", "walk"];
export const VIEW_PARAMS = ["view", "layer", "head", "merge", "step", "hide", "display", "query", "presenter",
  "tour"];
export const MAX_TOUR = 20;
const MEAN = "mean";
const TRUE = ["1", "true", "yes", "on"], FALSE = ["0", "false", "no", "off"];
// Gradio's own pages take ?view=api, settings or api-recorder: a link leaves those alone
const GRADIO_VIEWS = ["api", "settings", "api-recorder"];

/**
 * @typedef {{kinds: {name: string, label: string, layers: number}[], heads: number, steps: number,
 *   sources: number}} Shape  what a link's view is read against: each kind's layers, the heads, the translation's
 *   steps and source pieces (kinds in the order the page lists them)
 * @typedef {{kind: string, layer: number, head: string, merge: boolean, step: number | null, hide: boolean,
 *   display: string, query: number}} LinkView  step null: the last; head "mean" or "1", "2", ...
 * @typedef {{view: LinkView, presenter: boolean | null, tour: number | null, outside: string[], unread: string[]}}
 *   ReadView  presenter null: leave the page's setting; `outside`: "name=value (allowed: ...)" of the values
 *   changed to the nearest allowed, `unread`: of those not understood (the default used)
 */

const short = (text) => (text.length <= 20 ? text : text.slice(0, 19) + "\u2026");

/**
 * A float as Python's float() reads a link's number (whitespace around it, inf, 1e3, .5); null for anything else
 * and NaN.
 * @param {string} text
 * @returns {number | null}
 */
export function linkNumber(text) {
  const t = text.trim().toLowerCase().replace(/_/g, "");
  if (/^[+-]?(inf|infinity)$/.test(t)) return t.startsWith("-") ? -Infinity : Infinity;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/.test(t)) return null;
  return Number(t);
}

/** Python's round() of a float to a whole number: halves to the even neighbour. */
function roundHalfEven(x) {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * The view a link's query asks for, read against a translation's shape.
 * @param {Object<string, string>} query  the link's parameters (the last value of each)
 * @param {Shape} shape
 * @returns {ReadView}
 */
export function readView(query, shape) {
  const outside = [], unread = [];
  const given = (name) => (typeof query[name] === "string" && query[name].trim()) || null;
  const number = (name, lo, hi, allowed) => {
    const raw = given(name);
    if (raw === null) return null;
    const n = linkNumber(raw);
    if (n === null) {
      unread.push(`${name}=${short(raw)} (allowed: ${allowed})`);
      return null;
    }
    const kept = roundHalfEven(Math.min(Math.max(n, lo), hi));
    if (kept !== n) outside.push(`${name}=${short(raw)} (allowed: ${allowed}${lo <= n && n <= hi ? ", whole numbers" : ""})`);
    return kept;
  };
  const flag = (name) => {
    const raw = given(name);
    if (raw === null) return null;
    if (TRUE.includes(raw.toLowerCase())) return true;
    if (FALSE.includes(raw.toLowerCase())) return false;
    unread.push(`${name}=${short(raw)} (allowed: 1 or 0)`);
    return null;
  };
  const choice = (name, options, silent = []) => {
    const raw = given(name);
    if (raw === null || options.includes(raw) || silent.includes(raw)) return options.includes(raw) ? raw : null;
    unread.push(`${name}=${short(raw)} (allowed: ${options.join(", ")})`);
    return null;
  };
  const named = choice("view", shape.kinds.map((k) => k.name), GRADIO_VIEWS);
  const kind = shape.kinds.find((k) => k.name === named) || shape.kinds[0];
  const layer = number("layer", 1, kind.layers, `1 to ${kind.layers}, this model's ${kind.label} layers`);
  const head = given("head") === MEAN ? MEAN
    : number("head", 1, shape.heads, `${MEAN} or 1 to ${shape.heads}, this model's heads`);
  const merge = flag("merge"), hide = flag("hide"), presenter = flag("presenter");
  const tour = number("tour", 1, MAX_TOUR, `1 to ${MAX_TOUR}, a stop of the tour`);
  const display = choice("display", DISPLAYS);
  const steps = Math.max(shape.steps, 1), sources = Math.max(shape.sources, 1);
  const step = number("step", 1, steps, `1 to ${steps}, its output pieces`);
  const query_ = number("query", 1, sources, `1 to ${sources}, its source pieces`);
  return {view: {kind: kind.name, layer: layer || kind.layers, head: String(head || MEAN), merge: !!merge, step,
                 hide: !!hide, display: display || DISPLAYS[0], query: query_ || 1},
          presenter, tour, outside, unread};
}

/**
 * The shape of a trace payload (anatomy/payload.py), kinds in the page's order (cross, encoder, decoder).
 * @param {Object} payload
 * @returns {Shape}
 */
export function shapeOf(payload) {
  const order = ["cross", "encoder", "decoder"];
  const kinds = payload.kinds.slice().sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name));
  return {kinds: kinds.map((k) => ({name: k.name, label: k.label, layers: k.attention.shape[0]})),
          heads: kinds[0].attention.shape[1], steps: payload.pieces.output.length,
          sources: payload.pieces.source.length};
}

/**
 * The query of a link to a view, as the app's links write it (anatomy/inputs.py build_link's view part) and
 * readView reads it.
 * @param {LinkView} view
 * @returns {string}
 */
export function viewQuery(view) {
  const params = {view: view.kind, layer: view.layer, head: view.head, merge: view.merge ? 1 : 0};
  if (view.step) params.step = view.step;
  if (view.hide) params.hide = 1;
  if (view.display !== DISPLAYS[0]) Object.assign(params, {display: view.display, query: view.query});
  // URLSearchParams writes each number as String does
  return "?" + new URLSearchParams(/** @type {Object<string, *>} */ (params)).toString();
}

// Reading a trace payload (anatomy/payload.py, docs/payload.md): its schema version checked, its attention decoded
// from base64 uint8 to weights. Pure: no DOM, no Plotly.

/**
 * @typedef {{shape: number[], scale: number, weights: string}} Packed  uint8 round(w × scale), base64, C order
 * @typedef {{rows: number[], cols: number[], queries: (string|string[])[], keys: string[],
 *   query_groups: number[][], key_groups: number[][], query_words: (string|string[])[], key_words: string[],
 *   key_prefix_words?: string[]}} Axes  `key_prefix_words` (a causal kind's): each key's word cut at that key
 * @typedef {{name: string, label: string, title: string, queries: string, keys: string, causal: boolean,
 *   stepped: boolean, query_title: string, key_title: string, step_color: string | null, off: number[][],
 *   attention: Packed, axes: {all: Axes, hidden: Axes}}} Kind
 * @typedef {{source: string[], target: string[], output: string[]}} Pieces
 * @typedef {{schema: string, model: Object, settings: Object, text: string, translation: string,
 *   cut_by_limit: boolean, notices: string[], pieces: Pieces, piece_texts: Object<string, string[]>,
 *   top_k: [string, number][][], log_probs: number[], log_prob: number | null, candidates: Object[],
 *   kinds: Kind[], stats: Object[]}} TracePayload  (settings.mode "branch": settings.prefix, settings.parts_at)
 * @typedef {{kind: Kind, shape: number[], scale: number, bytes: Uint8Array | Float32Array}} Attention  shape:
 *   (L, H, Tq, Tk); `bytes`: round(w × scale) as read, or (weights.js) weights reweighed, scale 1
 */

export const SCHEMA_NAME = "anatomy.trace";
export const MAJOR = 1;
export const SCHEMA = `${SCHEMA_NAME}/${MAJOR}`;

/**
 * The major version of a schema string "anatomy.trace/MAJOR[.MINOR]"; an Error for anything else.
 * @param {unknown} schema
 * @returns {number}
 */
export function schemaMajor(schema) {
  const match = typeof schema === "string" && /^anatomy\.trace\/(\d+)(?:\.\d+)?$/.exec(schema);
  if (!match) throw new Error(`not a trace payload: schema ${JSON.stringify(schema)}, expected "${SCHEMA}"`);
  return Number(match[1]);
}

/**
 * A payload (JSON text or parsed) whose major version this viewer reads; an Error naming both versions otherwise.
 * A newer minor version only adds fields, which are ignored.
 * @param {string | Object} value
 * @returns {TracePayload}
 */
export function readPayload(value) {
  const payload = typeof value === "string" ? JSON.parse(value) : value;
  const major = schemaMajor(payload && payload.schema);
  if (major !== MAJOR) {
    throw new Error(`this viewer reads ${SCHEMA} payloads, not ${payload.schema}: ` +
                    (major > MAJOR ? "update the viewer" : "make the payload again"));
  }
  return payload;
}

/**
 * Base64 text as bytes.
 * @param {string} text
 * @returns {Uint8Array}
 */
export function decodeBase64(text) {
  const chars = atob(text);
  const bytes = new Uint8Array(chars.length);
  for (let i = 0; i < chars.length; i++) bytes[i] = chars.charCodeAt(i);
  return bytes;
}

/**
 * What the payload's translation is, as the optional parts say what they are of (anatomy/payload.py `trace_key`):
 * direction, heads off, source and output pieces.
 * @param {TracePayload} payload
 * @returns {string}
 */
export const traceKey = (payload) => JSON.stringify([payload.settings.direction || "", payload.settings.heads_off,
                                                     payload.pieces.source, payload.pieces.output]);

/** @type {WeakMap<Kind, Attention>} */
const decoded = new WeakMap();

/**
 * The attention of the kind called `name`, decoded once per payload.
 * @param {TracePayload} payload
 * @param {string} name  "encoder", "decoder" or "cross"
 * @returns {Attention}
 */
export function attention(payload, name) {
  const kind = payload.kinds.find((k) => k.name === name);
  if (!kind) throw new Error(`unknown attention kind ${JSON.stringify(name)}`);
  if (!decoded.has(kind)) {
    const {shape, scale, weights} = kind.attention;
    const bytes = decodeBase64(weights);
    if (bytes.length !== shape.reduce((a, b) => a * b, 1)) {
      throw new Error(`${name}: ${bytes.length} bytes for shape ${shape.join("×")}`);
    }
    decoded.set(kind, {kind, shape, scale, bytes});
  }
  return /** @type {Attention} */ (decoded.get(kind));
}

/**
 * One head's (Tq, Tk) weights as rows; layer and head from 0.
 * @param {Attention} att
 * @param {number} layer
 * @param {number} head
 * @returns {Float32Array[]}
 */
export function headWeights(att, layer, head) {
  const [L, H, Tq, Tk] = att.shape;
  if (!(layer >= 0 && layer < L && head >= 0 && head < H)) {
    throw new RangeError(`layer ${layer}, head ${head} outside ${L} layers × ${H} heads (counted from 0)`);
  }
  const start = (layer * H + head) * Tq * Tk;
  return Array.from({length: Tq}, (_, i) => {
    const row = new Float32Array(Tk);
    for (let j = 0; j < Tk; j++) row[j] = att.bytes[start + i * Tk + j] / att.scale;
    return row;
  });
}

/**
 * The mean over a layer's heads of (Tq, Tk) matrices given as rows (each head's, as `headWeights` makes them).
 * @param {ArrayLike<number>[][]} heads
 * @returns {Float32Array[]}
 */
export function meanOf(heads) {
  return heads[0].map((row, i) => Float32Array.from(row, (_, j) => {
    let sum = 0;
    for (const m of heads) sum += m[i][j];
    return sum / heads.length;
  }));
}

/**
 * The mean over a layer's heads (layer from 0), as rows.
 * @param {Attention} att
 * @param {number} layer
 * @returns {Float32Array[]}
 */
export function meanWeights(att, layer) {
  return meanOf(Array.from({length: att.shape[1]}, (_, h) => headWeights(att, layer, h)));
}

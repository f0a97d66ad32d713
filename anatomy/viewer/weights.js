// Attention as the views weigh it: the softmax's own weights α; value-norm weights, α_ij · ‖v_j W_o^h‖ renormalised
// over each row (Kobayashi et al. 2020), from the value norms the server computes once per translation (the
// optional part `norms`, anatomy/payload.py `norms_payload`); or, for the encoder's self-attention, attention
// rollout (Abnar & Zuidema 2020): layer l's rollout is Â_l Â_{l−1} … Â_1 with Â = ½ (mean of the heads) + ½ I.
// Each returns an Attention as payload.js reads it, so every view draws it as it draws α. Pure: no DOM, no Plotly.

import {attention, traceKey} from "./payload.js";

/**
 * @typedef {import("./payload.js").Attention} Attention
 * @typedef {import("./payload.js").TracePayload} TracePayload
 * @typedef {{of: Array, kinds: Object<string, number[][][]>}} Norms  per kind (L, h, T_k) ‖v_j W_o^h‖, and the
 *   translation they are of (payload.js `traceKey`)
 */

export const WEIGHTS = ["attention", "value-norm", "rollout"];

/** @type {WeakMap<TracePayload, Norms>} */
const normsOf = new WeakMap();
/** @type {WeakMap<Attention, {rollout: Attention | null, norms: Norms | null, normed: Attention | null}>} */
const made = new WeakMap();  // each payload kind's weighed attention, made once

/**
 * Hands the viewer a translation's value norms; kept only for the payload whose translation they are of.
 * @param {TracePayload | null} payload
 * @param {Norms | null} norms
 */
export function setNorms(payload, norms) {
  if (payload && norms && JSON.stringify(norms.of) === traceKey(payload)) {
    normsOf.set(payload, norms);
  }
}

/** Whether the payload's value norms are at hand. */
export const hasNorms = (payload) => normsOf.has(payload);

/**
 * Whether weighing by `mode` changes the kind called `name`: value norms every kind, rollout only the encoder's.
 * @param {string} mode
 * @param {string} name
 */
export const weighs = (mode, name) => mode === "value-norm" || (mode === "rollout" && name === "encoder");

/**
 * α_ij · n_j over Σ_j α_ij · n_j for each head's rows (n: that head's value norms); a row left with nothing stays 0.
 * @param {Attention} att
 * @param {number[][][]} norms  (L, h, T_k)
 * @returns {Attention}
 */
export function valueNormed(att, norms) {
  const [L, H, Tq, Tk] = att.shape, out = new Float32Array(L * H * Tq * Tk);
  for (let l = 0; l < L; l++) {
    for (let h = 0; h < H; h++) {
      const n = norms[l][h];
      for (let i = 0; i < Tq; i++) {
        const start = ((l * H + h) * Tq + i) * Tk;
        let total = 0;
        for (let j = 0; j < Tk; j++) total += att.bytes[start + j] * n[j];
        for (let j = 0; j < Tk; j++) out[start + j] = total > 0 ? att.bytes[start + j] * n[j] / total : 0;
      }
    }
  }
  return {kind: att.kind, shape: att.shape, scale: 1, bytes: out};
}

/**
 * The rollout of a square (L, H, S, S) attention: every head of layer l holds Â_l … Â_1, Â = ½ (mean of the layer's
 * heads, rows renormalised) + ½ I; its rows sum to 1.
 * @param {Attention} att
 * @returns {Attention}
 */
export function rolledOut(att) {
  const [L, H, S] = att.shape, out = new Float32Array(L * H * S * S);
  let rolled = Array.from({length: S}, (_, i) => Float64Array.from({length: S}, (_, j) => i === j ? 1 : 0));
  for (let l = 0; l < L; l++) {
    const step = Array.from({length: S}, (_, i) => {
      const row = new Float64Array(S);
      for (let h = 0; h < H; h++) {
        const start = ((l * H + h) * S + i) * S;
        for (let j = 0; j < S; j++) row[j] += att.bytes[start + j];
      }
      const total = row.reduce((a, b) => a + b, 0);
      return row.map((x, j) => 0.5 * (total > 0 ? x / total : 0) + (i === j ? 0.5 : 0));
    });
    rolled = step.map((row) => Float64Array.from({length: S}, (_, j) => {
      let sum = 0;
      for (let k = 0; k < S; k++) sum += row[k] * rolled[k][j];
      return sum;
    }));
    for (let h = 0; h < H; h++) {
      for (let i = 0; i < S; i++) out.set(rolled[i], ((l * H + h) * S + i) * S);
    }
  }
  return {kind: att.kind, shape: att.shape, scale: 1, bytes: out};
}

/**
 * The attention of the kind called `name` as `mode` weighs it (α itself where the mode does not apply to the kind,
 * or while the value norms are not at hand: `shownWeights` says which), made once per payload and mode.
 * @param {TracePayload} payload
 * @param {string} name
 * @param {string} [mode]
 * @returns {Attention}
 */
export function weighted(payload, name, mode = "attention") {
  const att = attention(payload, name);
  const shown = shownWeights(payload, name, mode);
  if (shown === "attention") return att;
  if (!made.has(att)) made.set(att, {rollout: null, norms: null, normed: null});
  const mine = made.get(att), norms = normsOf.get(payload);
  if (shown === "rollout") return mine.rollout || (mine.rollout = rolledOut(att));
  if (mine.norms !== norms) Object.assign(mine, {norms, normed: valueNormed(att, norms.kinds[name])});
  return mine.normed;
}

/**
 * The weights a view of kind `name` shows under `mode`: "attention", "value-norm" or "rollout".
 * @param {TracePayload} payload
 * @param {string} name
 * @param {string} [mode]
 */
export function shownWeights(payload, name, mode = "attention") {
  if (!weighs(mode, name)) return "attention";
  if (mode === "value-norm" && !normsOf.has(payload)) return "attention";
  return mode;
}

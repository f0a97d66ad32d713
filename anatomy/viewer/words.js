// One kind's weights as the views show them: special tokens hidden with each row renormalised (anatomy/views.py
// `arrays`, `_renormalised`), one head or the mean of a layer's heads (attention_views.pick), and pieces merged
// into the payload's words (viz.merge_attention). The word groups come from the payload: nothing here splits or
// joins pieces.

import {headWeights, meanOf} from "./payload.js";

/**
 * @typedef {import("./payload.js").Axes} Axes
 * @typedef {import("./payload.js").Kind} Kind
 * @typedef {import("./payload.js").Attention} Attention
 * @typedef {{w: number[][], hidden: boolean[][] | null}} Shown  hidden: cells a mask hides, null when none is
 */

/**
 * The axes a view shows: every piece, or (hide) those that are not start, end or pad.
 * @param {Kind} kind
 * @param {boolean} hide
 * @returns {Axes}
 */
export const axesOf = (kind, hide) => hide ? kind.axes.hidden : kind.axes.all;

/**
 * viz.causal_mask on the shown rows and columns: key j hidden from query i when j > i; null for a kind without a
 * mask.
 * @param {Axes} axes
 * @param {boolean} causal
 * @returns {boolean[][] | null}
 */
export function hiddenCells(axes, causal) {
  return causal ? axes.rows.map((i) => axes.cols.map((j) => j > i)) : null;
}

/**
 * A row rescaled to sum to 1; a row with nothing left stays all zero.
 * @param {ArrayLike<number>} row
 * @returns {number[]}
 */
export function renormalised(row) {
  const values = Array.from(row);
  const total = values.reduce((a, b) => a + b, 0);
  return values.map((x) => total > 0 ? x / total : 0);
}

/**
 * One (Tq, Tk) matrix of the trace as views.arrays shows it: the axes' rows and columns; with `hide`, the hidden
 * cells zeroed and every row renormalised over the keys left.
 * @param {ArrayLike<number>[]} w  the trace's rows
 * @param {Axes} axes
 * @param {boolean} causal
 * @param {boolean} hide
 * @returns {Shown}
 */
export function shownWeights(w, axes, causal, hide) {
  const hidden = hiddenCells(axes, causal);
  const rows = axes.rows.map((i, r) => {
    const row = axes.cols.map((j, c) => hide && hidden && hidden[r][c] ? 0 : w[i][j]);
    return hide ? renormalised(row) : row;
  });
  return {w: rows, hidden};
}

/**
 * A layer's head (from 0), or the mean of its heads ("mean"), as shown: each head's rows hidden and renormalised
 * first, then the mean taken (views.arrays, then attention_views.pick).
 * @param {Attention} att
 * @param {number} layer  from 0
 * @param {number | "mean"} head
 * @param {boolean} hide
 * @returns {Shown}
 */
export function picked(att, layer, head, hide) {
  const axes = axesOf(att.kind, hide), causal = att.kind.causal;
  const heads = head === "mean" ? Array.from({length: att.shape[1]}, (_, h) => h) : [head];
  const each = heads.map((h) => shownWeights(headWeights(att, layer, h), axes, causal, hide));
  return {w: meanOf(each.map((s) => s.w)).map((row) => Array.from(row)), hidden: each[0].hidden};
}

/**
 * viz.merge_attention: attention to a word is the sum over its pieces (keys), from a word the mean over its pieces'
 * rows (queries); a row that sees no key is left out of its word's mean unless no row of the word sees one. A word
 * cell is hidden only when all of its piece cells are.
 * @param {ArrayLike<number>[]} w  (queries, keys) as shown
 * @param {number[][]} queryGroups  positions in the shown rows
 * @param {number[][]} keyGroups  positions in the shown columns
 * @param {boolean[][] | null} hidden
 * @returns {Shown}
 */
export function merge(w, queryGroups, keyGroups, hidden) {
  const keySum = Array.from(w, (row) => keyGroups.map((g) => g.reduce((s, j) => s + row[j], 0)));
  const sees = keySum.map((_, i) => !hidden || !hidden[i].every(Boolean));
  const merged = queryGroups.map((g) => {
    const seeing = g.filter((i) => sees[i]);
    const rows = seeing.length ? seeing : g;
    return keyGroups.map((_, c) => rows.reduce((s, i) => s + keySum[i][c], 0) / rows.length);
  });
  const mergedHidden = hidden && queryGroups.map((gq) =>
    keyGroups.map((gk) => gq.every((i) => gk.every((j) => hidden[i][j]))));
  return {w: merged, hidden: mergedHidden};
}

/**
 * A shown matrix merged into the words of its axes.
 * @param {Shown} shown
 * @param {Axes} axes
 * @returns {Shown}
 */
export const mergedWords = (shown, axes) => merge(shown.w, axes.query_groups, axes.key_groups, shown.hidden);

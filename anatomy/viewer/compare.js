// Two sentences side by side (the payload's `pair`, docs/payload.md): the words two translations share, matched in
// order as a diff of the two word lists (anatomy/compare.py `matched` does the same in Python; tests hold them
// equal), the second sentence's view of the first's (the same output word where the outputs match, else its own
// step), and the difference of a view, second − first, over the words (or pieces) the two share. Pure: no DOM.

import {emptyFigure, figure, kindOf, shownMatrix} from "./figures.js";
import {label, queryLabel} from "./labels.js";

/**
 * @typedef {import("./figures.js").View} View
 * @typedef {import("./figures.js").Look} Look
 * @typedef {{text: string, second: Object, matching: {source: number[][], output: number[][]}}} Pair
 */

/** The kind and axes field whose words are a side's (anatomy/compare.py SIDES). */
export const SIDES = {source: ["encoder", "key_words"], output: ["cross", "query_words"]};

/**
 * What two labels are compared by: a decoder position's [read, written] by the word it writes.
 * @param {string | string[]} token
 */
export const tokenKey = (token) => Array.isArray(token) ? token[1] : token;

/**
 * The positions [i in a, j in b] of a longest common subsequence of two label lists, in order (a diff of the
 * lists); ties go to the earliest match in `a`, as compare.py breaks them.
 * @param {(string | string[])[]} a
 * @param {(string | string[])[]} b
 * @returns {number[][]}
 */
export function matched(a, b) {
  const x = a.map(tokenKey), y = b.map(tokenKey), n = x.length, m = y.length;
  // after[i][j]: the longest common subsequence of x[i:], y[j:]
  const after = Array.from({length: n + 1}, () => new Int32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      after[i][j] = x[i] === y[j] ? after[i + 1][j + 1] + 1 : Math.max(after[i + 1][j], after[i][j + 1]);
    }
  }
  const pairs = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) pairs.push([i++, j++]);
    else if (after[i + 1][j] >= after[i][j + 1]) i++;
    else j++;
  }
  return pairs;
}

/**
 * The second list's position for the first's `i` (n: the second's length): its match, else as far past the last
 * match before it as `i` is, never at or past the next match (compare.py `counterpart`).
 * @param {number} i
 * @param {number[][]} pairs
 * @param {number} n
 */
export function counterpart(i, pairs, n) {
  let before = [-1, -1], next = n;
  for (const [a, b] of pairs) {
    if (a === i) return b;
    if (a < i) before = [a, b];
    else if (next === n) next = b;
  }
  return Math.max(0, Math.min(before[1] + i - before[0], next - 1, n - 1));
}

/**
 * A payload's words of one side, every piece's, as its axes label them.
 * @param {Object} payload
 * @param {"source" | "output"} side
 */
export function sideWords(payload, side) {
  const [kind, field] = SIDES[side];
  return kindOf(payload, kind).axes.all[field];
}

/**
 * The words two payloads share, by side (what the payload's `pair.matching` holds).
 * @param {Object} first
 * @param {Object} second
 * @returns {{source: number[][], output: number[][]}}
 */
export const matching = (first, second) => ({source: matched(sideWords(first, "source"), sideWords(second, "source")),
                                             output: matched(sideWords(first, "output"), sideWords(second, "output"))});

/**
 * A piece position (from 0) of one side in the second payload for the first's: the piece at the same place in the
 * counterpart of its word.
 * @param {Object} first
 * @param {Object} second
 * @param {number[][]} pairs  the side's word matching
 * @param {"source" | "output"} side
 * @param {number} piece
 */
function pieceFor(first, second, pairs, side, piece) {
  const groupsOf = (p) => side === "source" ? kindOf(p, "encoder").axes.all.query_groups
    : kindOf(p, "cross").axes.all.query_groups;
  const mine = groupsOf(first), theirs = groupsOf(second);
  const k = mine.findIndex((g) => g.includes(piece));
  if (k < 0 || !theirs.length) return -1;
  const word = theirs[counterpart(k, pairs, theirs.length)];
  return word[Math.min(mine[k].indexOf(piece), word.length - 1)];
}

/**
 * The second sentence's view for the first's: the same kind, layer, head and labels; the step at the same output
 * word where the outputs match (else its own step: as far past the last shared word), the framed source row
 * (`row`, from 1: the walk query) likewise.
 * @template {View & {query?: number}} V
 * @param {Object} first
 * @param {Pair} pair
 * @param {V} view  fitted to the first
 * @returns {V & {row: number}}
 */
export function pairedView(first, pair, view) {
  const second = pair.second, T = second.pieces.output.length;
  const step = view.step && T ? pieceFor(first, second, pair.matching.output, "output", view.step - 1) + 1 : 0;
  const row = pieceFor(first, second, pair.matching.source, "source", (view.query || 1) - 1) + 1;
  return Object.assign({}, view, {step: T ? Math.max(step, 1) : 0, row: Math.max(row, 1)});
}

/**
 * The view's weights as drawn (not renormalised again), second − first, over the labels (words or pieces) the two
 * share (`matched`); null where a mask hides the cell in either; and each side's labels that are not shared.
 * @param {Object} first
 * @param {Object} second
 * @param {View} view  fitted
 */
export function difference(first, second, view) {
  const a = shownMatrix(first, view), b = shownMatrix(second, view);
  const rows = matched(a.queries, b.queries), cols = matched(a.keys, b.keys);
  const hidden = (s, i, j) => !!(s.hidden && s.hidden[i][j]);
  const w = rows.map(([ia, ib]) => cols.map(([ja, jb]) =>
    hidden(a, ia, ja) || hidden(b, ib, jb) ? null : b.w[ib][jb] - a.w[ia][ja]));
  const unshared = (labels, kept) => labels.filter((_, i) => !kept.has(i)).map((x) => String(tokenKey(x)));
  const kept = (pairs, k) => new Set(pairs.map((p) => p[k]));
  return {w, rows, cols, queries: rows.map(([i]) => a.queries[i]), keys: cols.map(([j]) => a.keys[j]),
          caption: a.caption,
          differ: {queries: [unshared(a.queries, kept(rows, 0)), unshared(b.queries, kept(rows, 1))],
                   keys: [unshared(a.keys, kept(cols, 0)), unshared(b.keys, kept(cols, 1))]}};
}

export const NOTHING_SHARED = "The two sentences share no word on these axes: there is no difference to draw.";

/**
 * What differs, in words: each side's labels that the other lacks ("only in sentence 1: tired · only in sentence 2:
 * wide").
 * @param {{queries: string[][], keys: string[][]}} differ
 * @param {boolean} sameSide  queries and keys are the same words (self-attention): named once
 */
function differing(differ, sameSide) {
  const words = (i) => [...new Set([...differ.queries[i], ...(sameSide ? [] : differ.keys[i])])];
  const [first, second] = [words(0), words(1)];
  if (!first.length && !second.length) return "the same words";
  const say = (list) => list.length ? list.map((w) => label(w, 14)).join(", ") : "–";
  return `only in sentence 1: ${say(first)} · only in sentence 2: ${say(second)}`;
}

/**
 * The difference figure: second − first on a diverging scale (−1 to 1), the shared words as axes, the words that
 * differ named; a figure saying so when the two share no word.
 * @param {Object} first
 * @param {Object} second
 * @param {View} view  fitted
 * @param {Look} look
 */
export function differenceFigure(first, second, view, look) {
  const d = difference(first, second, view), kind = kindOf(first, view.kind);
  if (!d.w.length || !d.keys.length) return emptyFigure(look, NOTHING_SHARED, 300);
  const qLab = d.queries.map((q) => queryLabel(q)), kLab = d.keys.map((k) => label(k));
  const text = d.w.map((row, i) => row.map((x, j) =>
    `${qLab[i]} \u2192 ${kLab[j]}: ` + (x === null ? "masked" : (x >= 0 ? "+" : "") + x.toFixed(3))));
  const range = (n) => Array.from({length: n}, (_, i) => i);
  const data = [{type: "heatmap", z: d.w, x: range(kLab.length), y: range(qLab.length), text, zmin: -1, zmax: 1,
                 zmid: 0, colorscale: look.diverging, hoverongaps: false, hovertemplate: "%{text}<extra></extra>",
                 colorbar: {title: {text: "2 − 1", side: "right"}, thickness: 12, len: 0.8}}];
  const sameSide = kind.queries === kind.keys;
  const layout = {
    xaxis: {tickmode: "array", tickvals: range(kLab.length), ticktext: kLab, tickangle: -50,
            title: {text: kind.key_title + " (shared)"}, showline: false},
    yaxis: {tickmode: "array", tickvals: range(qLab.length), ticktext: qLab, autorange: "reversed",
            title: {text: kind.query_title + " (shared)"}, showline: false},
    plot_bgcolor: look.masked,
    annotations: [{text: differing(d.differ, sameSide), x: 1, y: 1, xref: "paper", yref: "paper", xanchor: "right",
                   yanchor: "bottom", showarrow: false, font: {size: 11, color: "#52525b"}}],
    meta: {difference: {rows: d.rows, cols: d.cols}}};
  const title = `Sentence 2 − sentence 1 · ${kind.title} · ${d.caption} · the ${view.merge ? "words" : "pieces"} both have`;
  const lk = Math.min(Math.max(...kLab.map((s) => s.length)), 24), lq = Math.min(Math.max(...qLab.map((s) => s.length)), 32);
  const height = Math.min(1400, Math.max(300, qLab.length * 30 + 110 + 6 * lk));
  return figure(look, data, layout, height, title, {l: 56 + 7 * lq, b: 50 + 6 * lk});
}

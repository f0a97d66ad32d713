// anatomy/viewer/words.js, by hand: hiding special tokens renormalises each row over the keys left (rows that
// see none stay zero), the mean of heads is taken after, merging sums keys and averages the rows that see a key.
import assert from "node:assert/strict";
import {test} from "node:test";

import {axesOf, hiddenCells, merge, mergedWords, picked, renormalised, shownWeights}
  from "../../anatomy/viewer/words.js";

const close = (actual, expected) => {
  assert.equal(actual.length, expected.length);
  actual.forEach((row, i) => row.forEach((x, j) => assert.ok(Math.abs(x - expected[i][j]) < 1e-6,
                                                              `[${i}][${j}] ${x} != ${expected[i][j]}`)));
};

test("a row is rescaled to sum to 1, a row of zeros stays zero", () => {
  assert.deepEqual(renormalised([1, 3]), [0.25, 0.75]);
  assert.deepEqual(renormalised([0, 0]), [0, 0]);
  assert.deepEqual(renormalised([]), []);
});

// a decoder kind over target pieces <s> ▁a b ▁c: rows 1..3 and columns 1..3 once <s> is hidden
const DECODER = {all: {rows: [0, 1, 2, 3], cols: [0, 1, 2, 3]}, hidden: {rows: [1, 2, 3], cols: [1, 2, 3]}};

test("the causal mask hides the keys after each shown query", () => {
  assert.deepEqual(hiddenCells(DECODER.hidden, true), [[false, true, true], [false, false, true],
                                                       [false, false, false]]);
  assert.equal(hiddenCells(DECODER.hidden, false), null);
});

test("hiding drops the special rows and keys and renormalises what is left", () => {
  const w = [[1, 0, 0, 0], [0.5, 0.5, 0, 0], [0.2, 0.2, 0.6, 0], [0.4, 0.3, 0.2, 0.1]];
  const shown = shownWeights(w, DECODER.hidden, true, true);
  close(shown.w, [[1, 0, 0], [0.25, 0.75, 0], [0.5, 1 / 3, 1 / 6]]);
  const all = shownWeights(w, DECODER.all, true, false);
  assert.deepEqual(all.w, w); // nothing hidden: the trace's rows as they are
  assert.equal(all.hidden[0][1], true);
  // a row that sees only hidden keys (decoder row 1 sees only <s>) stays, all zero
  close(shownWeights(w, {rows: [0, 1], cols: [1, 2, 3]}, true, true).w, [[0, 0, 0], [1, 0, 0]]);
});

test("the mean of heads comes after each head's renormalisation", () => {
  // two heads over keys [</s>, ▁x, ▁y] (row 0 only): hiding </s> then averaging, not averaging then renormalising
  const bytes = Buffer.from([51, 102, 102, 204, 0, 51]); // head 0 [0.2, 0.4, 0.4], head 1 [0.8, 0, 0.2]
  const kind = {causal: false, axes: {all: {rows: [0], cols: [0, 1, 2]}, hidden: {rows: [0], cols: [1, 2]}}};
  const att = {kind, shape: [1, 2, 1, 3], scale: 255, bytes};
  close(picked(att, 0, "mean", true).w, [[0.25, 0.75]]); // ([0.5, 0.5] + [0, 1]) / 2
  close(picked(att, 0, 1, true).w, [[0, 1]]);
  close(picked(att, 0, "mean", false).w, [[0.5, 0.2, 0.3]]); // nothing hidden: the plain mean
  assert.equal(axesOf(kind, true), kind.axes.hidden);
});

test("merging sums a word's keys and averages its rows", () => {
  // queries ▁a b ▁c (words [0, 1] and [2]); keys ▁x y z ▁w (words [0, 1, 2] and [3])
  const w = [[0.1, 0.2, 0.3, 0.4], [0.3, 0.3, 0.3, 0.1], [0.25, 0.25, 0.25, 0.25]];
  const m = merge(w, [[0, 1], [2]], [[0, 1, 2], [3]], null);
  close(m.w, [[0.75, 0.25], [0.75, 0.25]]);
  assert.equal(m.hidden, null);
});

test("a merged cell is hidden only when all its piece cells are; rows that see nothing leave the mean", () => {
  const hidden = [[true, true], [false, true]];
  const m = merge([[0, 0], [1, 0]], [[0, 1]], [[0], [1]], hidden);
  close(m.w, [[1, 0]]); // row 0 sees no key: only row 1 counts
  assert.deepEqual(m.hidden, [[false, true]]);
  const none = merge([[0, 0]], [[0]], [[0], [1]], [[true, true]]);
  close(none.w, [[0, 0]]); // no row of the word sees a key: all of them count
  const axes = {query_groups: [[0, 1]], key_groups: [[0, 1]]};
  close(mergedWords({w: [[0.5, 0.5], [1, 0]], hidden: null}, axes).w, [[1]]);
});

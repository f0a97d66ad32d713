// anatomy/viewer/branch.js (a branch beside the model's own translation) and screen.js's branchOf (which next piece
// a click on a step's bars or the predictions names).
import assert from "node:assert/strict";
import {test} from "node:test";

import {branchLines, logText} from "../../anatomy/viewer/branch.js";
import {branchOf} from "../../anatomy/viewer/screen.js";

const payload = (settings, extra) => Object.assign({
  settings, pieces: {output: ["▁A", "▁small", "▁dog", "</s>"]},
  piece_texts: {output: [" A", " small", " dog", ""]}, log_probs: [-0.1, -2.5, -0.3, -0.05], log_prob: -2.95,
}, extra);

test("a branch's lines: its forced pieces, where it parts, each piece's log p and the model's own beside it", () => {
  const own = {pieces: ["▁A", "▁little", "▁dog", "</s>"], piece_texts: [" A", " little", " dog", ""],
               log_probs: [-0.1, -0.2, -0.3, -0.05], log_prob: -0.65};
  const b = branchLines(payload({mode: "branch", prefix: ["▁A", "▁small"], parts_at: 1}, {own}));
  assert.deepEqual([b.forced, b.partsAt, b.branch.logProb, b.own.logProb], [2, 1, -2.95, -0.65]);
  assert.deepEqual(b.branch.texts, [" A", " small", " dog", ""]);
  assert.deepEqual(b.own.pieces, own.pieces);
  // a file saved without the model's own: the branch alone
  assert.equal(branchLines(payload({mode: "branch", prefix: ["▁A"], parts_at: 1})).own, null);
});

test("any other trace is no branch", () => {
  assert.equal(branchLines(payload({mode: "greedy", prefix: [], parts_at: null})), null);
  assert.equal(branchLines(null), null);
});

test("log p is written with two decimals and a real minus sign; unknown is empty", () => {
  assert.deepEqual([logText(-1.544), logText(0), logText(null), logText(NaN)], ["\u22121.54", "0.00", "", ""]);
});

test("a click on a step's bar or a predictions cell names the step and rank; any other point nothing", () => {
  assert.deepEqual(branchOf({data: {meta: "branch=3"}, pointIndex: 2}), {step: 3, rank: 2});
  assert.deepEqual(branchOf({data: {meta: "branch"}, pointIndex: [4, 1]}), {step: 4, rank: 1});
  assert.equal(branchOf({data: {meta: "head=cross:1.2"}, pointIndex: 0}), null);
  assert.equal(branchOf({data: {meta: "branch=x"}, pointIndex: 0}), null);
  assert.equal(branchOf({data: {}, pointIndex: 0}), null);
});

// anatomy/viewer/weights.js: value-norm weights and attention rollout, by hand.
import assert from "node:assert/strict";
import {test} from "node:test";

import {hasNorms, rolledOut, setNorms, shownWeights, valueNormed, weighs} from "../../anatomy/viewer/weights.js";

const close = (got, want) => got.forEach((x, i) => assert.ok(Math.abs(x - want[i]) < 1e-6, `${got} vs ${want}`));
const att = (shape, values, scale = 1) => ({kind: {name: "encoder"}, shape, scale, bytes: Float32Array.from(values)});

test("value-norm weights: α times the key's norm, each row renormalised; a row of nothing stays 0", () => {
  // one layer, one head, rows [0.5, 0.5] and [0, 0]; keys' norms 1 and 3
  const w = valueNormed(att([1, 1, 2, 2], [0.5, 0.5, 0, 0]), [[[1, 3]]]);
  close(Array.from(w.bytes), [0.25, 0.75, 0, 0]);
  assert.equal(w.scale, 1);
  // uint8 weights (scale 255) read the same: the scale cancels
  close(Array.from(valueNormed(att([1, 1, 1, 2], [51, 204], 255), [[[2, 1]]]).bytes), [1 / 3, 2 / 3]);
});

test("rollout: ½A + ½I multiplied up the layers, worked by hand; every head of a layer the same, rows sum to 1", () => {
  // layer 1: both rows attend to key 0; layer 2: both to key 1 (one head each)
  const r = rolledOut(att([2, 1, 2, 2], [1, 0, 1, 0, 0, 1, 0, 1]));
  // Â1 = [[1, 0], [.5, .5]], Â2 = [[.5, .5], [0, 1]]; R2 = Â2 Â1 = [[.75, .25], [.5, .5]]
  close(Array.from(r.bytes), [1, 0, 0.5, 0.5, 0.75, 0.25, 0.5, 0.5]);
  // two heads: their mean is rolled out, and both heads hold it
  const two = rolledOut(att([1, 2, 2, 2], [1, 0, 1, 0, 0, 1, 0, 1]));
  close(Array.from(two.bytes), [0.75, 0.25, 0.25, 0.75, 0.75, 0.25, 0.25, 0.75]);
});

test("which weights a view shows: rollout only for the encoder, value norms only once at hand", () => {
  assert.ok(weighs("rollout", "encoder") && !weighs("rollout", "cross") && weighs("value-norm", "decoder"));
  const payload = {settings: {direction: "de-en", heads_off: ""}, pieces: {source: ["▁x", "</s>"],
                                                                          output: ["▁a", "</s>"]}, kinds: []};
  assert.equal(shownWeights(payload, "cross", "value-norm"), "attention");
  setNorms(payload, {of: ["de-en", "", ["▁x", "</s>"], ["▁b", "</s>"]], kinds: {}}); // another translation's
  setNorms(payload, {of: ["de-en", "cross:1.1", ["▁x", "</s>"], ["▁a", "</s>"]], kinds: {}}); // heads off then
  assert.ok(!hasNorms(payload));
  setNorms(payload, {of: ["de-en", "", ["▁x", "</s>"], ["▁a", "</s>"]], kinds: {}});
  assert.equal(shownWeights(payload, "cross", "value-norm"), "value-norm");
  assert.equal(shownWeights(payload, "cross", "rollout"), "attention");
  assert.equal(shownWeights(payload, "encoder", "rollout"), "rollout");
});

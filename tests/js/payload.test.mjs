// anatomy/viewer/payload.js: schema versions, base64 uint8 decoding, one head's weights and the mean of heads.
import assert from "node:assert/strict";
import {test} from "node:test";

import {SCHEMA, attention, decodeBase64, headWeights, meanWeights, readPayload, schemaMajor}
  from "../../anatomy/viewer/payload.js";

// (L=1, H=2, Tq=2, Tk=2): head 0 [[255, 0], [51, 204]], head 1 [[0, 255], [153, 102]]
const BYTES = [255, 0, 51, 204, 0, 255, 153, 102];
const base64 = (bytes) => Buffer.from(bytes).toString("base64");
const kind = {name: "encoder", causal: false, attention: {shape: [1, 2, 2, 2], scale: 255, weights: base64(BYTES)}};
const payload = (schema = SCHEMA) => ({schema, kinds: [kind]});

test("base64 decodes to the bytes it was made from, every value 0..255", () => {
  const all = Array.from({length: 256}, (_, i) => i);
  assert.deepEqual(Array.from(decodeBase64(base64(all))), all);
  assert.deepEqual(Array.from(decodeBase64("/wAz")), [255, 0, 51]);
});

test("a payload of this major version is read, text or parsed, newer minor versions too", () => {
  assert.equal(readPayload(JSON.stringify(payload())).schema, "anatomy.trace/1");
  assert.equal(readPayload(payload("anatomy.trace/1.3")).kinds.length, 1);
  assert.equal(schemaMajor("anatomy.trace/12.0"), 12);
});

test("another major version or no schema is refused, saying which versions", () => {
  assert.throws(() => readPayload(payload("anatomy.trace/2")),
                {message: "this viewer reads anatomy.trace/1 payloads, not anatomy.trace/2: update the viewer"});
  assert.throws(() => readPayload(payload("anatomy.trace/0")), /not anatomy.trace\/0: make the payload again/);
  assert.throws(() => readPayload({kinds: []}), /not a trace payload: schema undefined, expected "anatomy.trace\/1"/);
  assert.throws(() => readPayload(payload("other/1")), /not a trace payload: schema "other\/1"/);
});

test("a head's weights are its bytes over the scale, row by row; the mean averages the heads", () => {
  const read = payload(), att = attention(read, "encoder");
  assert.equal(attention(read, "encoder"), att); // decoded once
  assert.deepEqual(headWeights(att, 0, 0).map((r) => Array.from(r)), [[1, 0], [0.2, 0.8]].map((r) => r.map(f32)));
  assert.deepEqual(headWeights(att, 0, 1).map((r) => Array.from(r)), [[0, 1], [0.6, 0.4]].map((r) => r.map(f32)));
  assert.deepEqual(meanWeights(att, 0).map((r) => Array.from(r)), [[0.5, 0.5], [0.4, 0.6]].map((r) => r.map(f32)));
  assert.throws(() => headWeights(att, 0, 2), RangeError);
  assert.throws(() => attention(payload(), "lateral"), /unknown attention kind "lateral"/);
});

test("bytes that do not fill the shape are refused", () => {
  const short = {name: "cross", attention: {shape: [1, 1, 2, 2], scale: 255, weights: base64([1, 2, 3])}};
  assert.throws(() => attention({schema: SCHEMA, kinds: [short]}, "cross"), /cross: 3 bytes for shape 1×1×2×2/);
});

function f32(x) {
  return Math.fround(x);
}

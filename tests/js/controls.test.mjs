// anatomy/viewer/controls.js: the view fitted to what a translation or a model offers (each kind its own layers,
// the heads, the steps, the walk's query, the displays and weights a host offers), and the shape of a payload.
import assert from "node:assert/strict";
import {test} from "node:test";

import {fitView, shapeOf} from "../../anatomy/viewer/controls.js";

const kind = (name, layers, heads) => ({name, title: name, layers, heads});
// an encoder deeper than its decoder, as tests/test_links.py's model
const UNEVEN = {kinds: [kind("cross", 2, 2), kind("encoder", 3, 2), kind("decoder", 2, 2)], steps: 4,
                source: ["▁Zwei", "▁Hunde", "</s>"], target: [], output: []};
const APP = {walk: true, weights: ["attention", "value-norm", "rollout"]};
const view = (fields) => Object.assign({kind: "cross", layer: 99, head: "mean", step: 0, merge: false, plain: false,
                                        hide: false, display: "heatmap", weights: "attention", query: 1}, fields);

test("each kind keeps its own layers: a deep layer of the encoder is the decoder's last", () => {
  assert.equal(fitView(view({kind: "encoder", layer: 3}), UNEVEN, APP).layer, 3);
  assert.equal(fitView(view({kind: "cross", layer: 3}), UNEVEN, APP).layer, 2);
  assert.equal(fitView(view({kind: "decoder", layer: 99}), UNEVEN, APP).layer, 2);
  assert.equal(fitView(view({kind: "nonsense", layer: 1}), UNEVEN, APP).kind, "cross");
});

test("heads, steps and the walk's query are clamped; an unset step is the last", () => {
  const v = fitView(view({head: "9", step: 0, query: 40}), UNEVEN, APP);
  assert.deepEqual([v.head, v.step, v.query], ["2", 4, 3]);
  assert.equal(fitView(view({head: "mean", step: 2}), UNEVEN, APP).head, "mean");
  assert.equal(fitView(view({step: 3}), Object.assign({}, UNEVEN, {steps: 0}), APP).step, 0);
});

test("a host offers its own displays and weights: the offline page has no walk", () => {
  const offline = {walk: false, weights: ["attention", "rollout"]};
  const v = fitView(view({display: "walk", weights: "value-norm"}), UNEVEN, offline);
  assert.deepEqual([v.display, v.weights], ["heatmap", "attention"]);
  assert.equal(fitView(view({display: "walk"}), UNEVEN, APP).display, "walk");
});

test("a payload's shape lists its kinds in the page's order with their layers and heads", () => {
  const attention = (L, H) => ({shape: [L, H, 1, 1]});
  const payload = {kinds: [{name: "encoder", title: "E", attention: attention(3, 2)},
                           {name: "decoder", title: "D", attention: attention(2, 2)},
                           {name: "cross", title: "C", attention: attention(2, 2)}],
                   pieces: {source: ["a"], target: ["<s>", "b"], output: ["b", "</s>"]}};
  const shape = shapeOf(payload);
  assert.deepEqual(shape.kinds.map((k) => [k.name, k.layers, k.heads]),
                   [["cross", 2, 2], ["encoder", 3, 2], ["decoder", 2, 2]]);
  assert.equal(shape.steps, 2);
});

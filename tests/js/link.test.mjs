// anatomy/viewer/link.js: a link's view read against a translation's shape, every value changed or not understood
// named with the range this translation allows.
import assert from "node:assert/strict";
import {test} from "node:test";

import {linkNumber, readView, viewQuery} from "../../anatomy/viewer/link.js";

const SHAPE = {kinds: [{name: "cross", label: "cross-attention", layers: 2},
                       {name: "encoder", label: "encoder self-attention", layers: 3},
                       {name: "decoder", label: "decoder self-attention", layers: 2}],
               heads: 4, steps: 6, sources: 9};

test("a link's view within range is read as it is", () => {
  const r = readView({view: "encoder", layer: "3", head: "2", merge: "1", step: "4", hide: "true",
                      display: "lines", query: "9", presenter: "0", tour: "5"}, SHAPE);
  assert.deepEqual(r.view, {kind: "encoder", layer: 3, head: "2", merge: true, step: 4, hide: true,
                            display: "lines", query: 9});
  assert.equal(r.presenter, false);
  assert.equal(r.tour, 5);
  assert.deepEqual([r.outside, r.unread], [[], []]);
});

test("nothing given: the last layer of cross-attention, the mean of heads, the last step", () => {
  const r = readView({}, SHAPE);
  assert.deepEqual(r.view, {kind: "cross", layer: 2, head: "mean", merge: false, step: null, hide: false,
                            display: "heatmap", query: 1});
  assert.equal(r.presenter, null);
  assert.equal(r.tour, null);
});

test("out of range: the nearest allowed value, named with this translation's range", () => {
  const r = readView({view: "decoder", layer: "7", head: "0", step: "2.5", query: "1e9", tour: "-inf"}, SHAPE);
  assert.deepEqual([r.view.layer, r.view.head, r.view.step, r.view.query, r.tour], [2, "1", 2, 9, 1]);
  assert.deepEqual(r.outside, [
    "layer=7 (allowed: 1 to 2, this model's decoder self-attention layers)",
    "head=0 (allowed: mean or 1 to 4, this model's heads)",
    "tour=-inf (allowed: 1 to 20, a stop of the tour)",
    "step=2.5 (allowed: 1 to 6, its output pieces, whole numbers)",
    "query=1e9 (allowed: 1 to 9, its source pieces)"]);
});

test("not understood: the default, named; Gradio's own views left alone", () => {
  const r = readView({view: "<script>", layer: "abc", merge: "maybe", display: "3d", step: "x"}, SHAPE);
  assert.deepEqual(r.view, {kind: "cross", layer: 2, head: "mean", merge: false, step: null, hide: false,
                            display: "heatmap", query: 1});
  assert.deepEqual(r.unread, ["view=<script> (allowed: cross, encoder, decoder)",
                              "layer=abc (allowed: 1 to 2, this model's cross-attention layers)",
                              "merge=maybe (allowed: 1 or 0)", "display=3d (allowed: heatmap, lines, walk)",
                              "step=x (allowed: 1 to 6, its output pieces)"]);
  assert.deepEqual(readView({view: "api"}, SHAPE).unread, []);
});

test("numbers are read as Python's float reads them", () => {
  assert.deepEqual([" 3 ", "1e3", ".5", "2.", "-Infinity", "nan", "0x10", "", "1_000"].map(linkNumber),
                   [3, 1000, 0.5, 2, -Infinity, null, null, null, 1000]);
});

test("a view's link query (the offline file's Link to this view) reads back as that view", () => {
  const views = [{kind: "encoder", layer: 3, head: "2", merge: true, step: 4, hide: true, display: "lines", query: 9},
                 {kind: "cross", layer: 1, head: "mean", merge: false, step: 6, hide: false, display: "heatmap",
                  query: 1}];
  for (const view of views) {
    const query = viewQuery(view);
    assert.ok(query.startsWith("?view=" + view.kind));
    const r = readView(Object.fromEntries(new URLSearchParams(query)), SHAPE);
    assert.deepEqual(r.view, view);
    assert.deepEqual([r.outside, r.unread], [[], []]);
  }
});

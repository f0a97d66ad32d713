// anatomy/viewer/explain.js: Spearman's ρ by hand (transformer.explain.spearman's cases), and which translation an
// explanation is of.
import assert from "node:assert/strict";
import {test} from "node:test";

import {explainsPayload, spearman} from "../../anatomy/viewer/explain.js";

test("Spearman's rho: monotone, reversed, ties at their mean rank, undefined when constant", () => {
  assert.equal(spearman([1, 2, 3], [10, 20, 30]), 1);
  assert.equal(spearman([1, 2, 3], [3, 2, 1]), -1);
  // ranks (0.5, 0.5, 2) against (0, 1, 2): cov 1.5, variances 1.5 and 2
  assert.ok(Math.abs(spearman([5, 5, 7], [1, 2, 3]) - 1.5 / Math.sqrt(1.5 * 2)) < 1e-12);
  assert.equal(spearman([1, 1, 1], [1, 2, 3]), null);
  assert.equal(spearman([1], [2]), null);
});

test("an explanation is drawn only with its own translation: the same pieces with other heads off are another", () => {
  const payload = {settings: {direction: "de-en", heads_off: ""}, pieces: {source: ["▁x", "</s>"], output: ["▁a"]}};
  assert.ok(explainsPayload({of: ["de-en", "", ["▁x", "</s>"], ["▁a"]]}, payload));
  assert.ok(!explainsPayload({of: ["de-en", "cross:1.1", ["▁x", "</s>"], ["▁a"]]}, payload));
  assert.ok(!explainsPayload({of: ["en-de", "", ["▁x", "</s>"], ["▁a"]]}, payload));
  assert.ok(!explainsPayload(null, payload));
});

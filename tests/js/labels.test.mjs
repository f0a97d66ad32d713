// anatomy/viewer/labels.js: labels as viz/text.py and viz/words.py make them, and the tokens each axis shows.
import assert from "node:assert/strict";
import {test} from "node:test";

import {axisTokens, escape, label, plainLabel, plainLabels, positioned, queryLabel, readable}
  from "../../anatomy/viewer/labels.js";

test("labels are readable and escaped: control characters shown, empty as ∅, long ones cut", () => {
  assert.equal(escape("<s> & </s>"), "&lt;s&gt; &amp; &lt;/s&gt;");
  assert.equal(label("<unk>"), "&lt;unk&gt;");
  assert.equal(readable("a\tb\u200bc\u00a0d e"), "a\\x09b\\x200bc\\xa0d e");
  assert.equal(readable(""), "\u2205");
  assert.equal(readable("abcdefghijklmnopqrstuvwxyz"), "abcdefghijklmnopqrstuvw\u2026"); // 24 characters
  assert.equal(readable("\u{1F600}".repeat(5), 4), "\u{1F600}\u{1F600}\u{1F600}\u2026"); // characters, not units
});

test("a decoder position reads ▸ produces, each side cut at 14; a piece query at 24", () => {
  assert.equal(queryLabel(["<s>", "\u2581Zwei"]), "&lt;s&gt; \u25b8 \u2581Zwei");
  assert.equal(queryLabel(["a", "abcdefghijklmnop"]), "a \u25b8 abcdefghijklm\u2026");
  assert.equal(queryLabel("abcdefghijklmnop"), "abcdefghijklmnop");
  assert.deepEqual(positioned(["\u2581dog", "\u2581dog"]), ["1 \u2581dog", "2 \u2581dog"]);
});

test("plain labels drop ▁, mark a piece inside a word with ·, leave special pieces", () => {
  assert.deepEqual(["\u2581Schn", "ee", "\u2581", "</s>", "<unk>"].map(plainLabel),
                   ["Schn", "\u00b7ee", "\u2423", "</s>", "<unk>"]);
  assert.deepEqual(plainLabels([["<s>", "\u2581a"], ["\u2581a", "b"]]), [["<s>", "a"], ["a", "\u00b7b"]]);
});

test("an axis shows the payload's words when merging, else its pieces, plain or not", () => {
  const axes = {queries: [["<s>", "\u2581Hun"], ["\u2581Hun", "de"]], keys: ["\u2581Hun", "de", "</s>"],
                query_words: [["<s>", "Hunde"]], key_words: ["Hunde", "</s>"]};
  assert.deepEqual(axisTokens(axes, true, true), {queries: [["<s>", "Hunde"]], keys: ["Hunde", "</s>"]});
  assert.deepEqual(axisTokens(axes, false, true), {queries: [["<s>", "Hun"], ["Hun", "\u00b7de"]],
                                                   keys: ["Hun", "\u00b7de", "</s>"]});
  assert.deepEqual(axisTokens(axes, false, false), {queries: axes.queries, keys: axes.keys});
});

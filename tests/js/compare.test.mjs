// anatomy/viewer/compare.js, by hand: the words two sentences share, matched in order (a longest common
// subsequence; a decoder position by the word it writes), and an unmatched word's counterpart in the other sentence.
// tests/test_compare.py holds them equal to anatomy/compare.py on real payloads.
import assert from "node:assert/strict";
import {test} from "node:test";

import {counterpart, matched, tokenKey} from "../../anatomy/viewer/compare.js";

test("the shared words, in order: the longest common subsequence of the two lists", () => {
  const a = "The animal didn't cross the street because it was too tired.".split(" ");
  const b = "The animal didn't cross the street because it was too wide.".split(" ");
  assert.deepEqual(matched(a, b), a.slice(0, -1).map((_, i) => [i, i]));
  assert.deepEqual(matched(["es", "zu", "müde"], ["sie", "zu", "breit"]), [[1, 1]]);
  const pairs = matched([..."abcbdab"], [..."bdcaba"]);
  assert.equal(pairs.length, 4);
  assert.deepEqual(matched([], ["a"]), []);
});

test("a decoder position is matched by the word it writes, whatever it read", () => {
  assert.equal(tokenKey(["weil", "es"]), "es");
  assert.deepEqual(matched([["weil", "es"], ["es", "zu"]], [["weil", "sie"], ["sie", "zu"]]), [[1, 1]]);
});

test("an unmatched word's counterpart is as far past the last shared word, before the next one", () => {
  const pairs = [[0, 0], [1, 1], [3, 4]];
  assert.deepEqual([0, 1, 2, 3, 4].map((i) => counterpart(i, pairs, 6)), [0, 1, 2, 4, 5]);
  assert.equal(counterpart(2, [[0, 0], [3, 1]], 3), 0);  // nothing between the two shared words
  assert.equal(counterpart(5, [], 2), 1);  // never past the end
});

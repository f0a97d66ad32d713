// For tests/test_compare.py: a pair of payloads as the viewer reads it (node tests/js/compare.mjs PAIR.json, the
// file {"first", "second", "views", "lists"}): the words they share (compare.js `matching`), each view's difference
// and the second sentence's view, and the matching of each pair of label lists; one JSON record.
import {readFileSync} from "node:fs";

import {difference, matched, matching, pairedView} from "../../anatomy/viewer/compare.js";
import {fitted} from "../../anatomy/viewer/figures.js";
import {readPayload} from "../../anatomy/viewer/payload.js";

const {first, second, views, lists} = JSON.parse(readFileSync(process.argv[2], "utf-8"));
const a = readPayload(first), b = readPayload(second), pair = {second: b, matching: matching(a, b)};
console.log(JSON.stringify({
  matching: pair.matching,
  differences: views.map((v) => difference(a, b, fitted(a, v))),
  paired: views.map((v) => pairedView(a, pair, fitted(a, v))),
  lists: lists.map(([x, y]) => matched(x, y)),
}));

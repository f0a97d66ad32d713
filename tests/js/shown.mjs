// For tests/test_payload.py: every view of every kind of a payload file (node tests/js/shown.mjs PAYLOAD.json), as
// the viewer's pure modules compute it (weights, hidden cells and labels), then every step panel's row; one JSON
// record per line.
import {readFileSync} from "node:fs";

import {axisTokens, label, queryLabel} from "../../anatomy/viewer/labels.js";
import {attention, readPayload} from "../../anatomy/viewer/payload.js";
import {axesOf, mergedWords, picked} from "../../anatomy/viewer/words.js";
import {stepRow} from "../../anatomy/viewer/figures.js";

const payload = readPayload(readFileSync(process.argv[2], "utf-8"));
for (const kind of payload.kinds) {
  const att = attention(payload, kind.name), [L, H] = att.shape;
  for (const hide of [false, true]) {
    const axes = axesOf(kind, hide);
    for (let layer = 0; layer < L; layer++) {
      for (const head of ["mean", ...Array.from({length: H}, (_, h) => h)]) {
        for (const [merge, plain] of [[false, false], [false, true], [true, false]]) {
          const shown = picked(att, layer, head, hide), view = merge ? mergedWords(shown, axes) : shown;
          const tokens = axisTokens(axes, merge, plain);
          console.log(JSON.stringify({kind: kind.name, layer: layer + 1, head: head === "mean" ? head : `${head + 1}`,
                                      merge, plain, hide, weights: view.w, hidden: view.hidden,
                                      queries: tokens.queries.map((q) => queryLabel(q)),
                                      keys: tokens.keys.map((k) => label(k))}));
        }
      }
    }
  }
}
// then each decoding step's rows of the two kinds whose queries are steps (figures.js `stepRow`)
for (const name of ["cross", "decoder"]) {
  const [L, H] = attention(payload, name).shape;
  for (let t = 0; t < payload.pieces.output.length; t++) {
    for (let layer = 1; layer <= L; layer++) {
      for (const head of ["mean", ...Array.from({length: H}, (_, h) => `${h + 1}`)]) {
        for (const hide of [false, true]) {
          for (const [merge, plain] of [[false, false], [false, true], [true, false]]) {
            const view = {kind: name, layer, head, step: t + 1, merge, plain, hide, display: "heatmap"};
            const r = stepRow(payload, view, name, t);
            console.log(JSON.stringify({kind: name, step: t + 1, layer, head, merge, plain, hide, row: r.row,
                                        keys: r.keys, query: r.query}));
          }
        }
      }
    }
  }
}

// anatomy/viewer/result.js: the translation's part drawn from what the host sent (only the parts it sent), the
// chips coloured by class, the candidates' table hidden when empty and its rows picked by click or Enter (a small
// stand-in for the DOM: result.js makes elements, sets their text and listens for clicks and keys).
import assert from "node:assert/strict";
import {test} from "node:test";

import {showResult} from "../../anatomy/viewer/result.js";

function fakeElement(tag, doc) {
  const el = {
    tag, ownerDocument: doc, children: [], style: {}, listeners: {}, hidden: false, textContent: "", innerHTML: "",
    title: "", className: "", classList: {on: new Set(), toggle(c, on) { on ? this.on.add(c) : this.on.delete(c); }},
    append(...children) { el.children.push(...children); },
    appendChild(child) { el.children.push(child); return child; },
    replaceChildren(...children) { el.children = children; },
    addEventListener(type, fn) { el.listeners[type] = fn; },
    querySelector: (selector) => (selector === "textarea" ? el.text : null),
    // a table's
    createTHead() { const head = fakeElement("thead", doc); el.children.push(head); return head; },
    createTBody() { const body = fakeElement("tbody", doc); el.children.push(body); return body; },
    insertRow() { const row = fakeElement("tr", doc); el.children.push(row); return row; },
    insertCell() { const cell = fakeElement("td", doc); el.children.push(cell); return cell; },
  };
  return el;
}

function fakeDocument() {
  const doc = {createElement: (tag) => fakeElement(tag, doc)};
  const ids = ["translation", "run-info", "source-pieces", "output-pieces", "confidence-legend", "candidates-box",
               "candidates", "ablation"];
  const els = Object.fromEntries(ids.map((id) => [id, fakeElement("div", doc)]));
  els.translation.text = fakeElement("textarea", doc);
  doc.getElementById = (id) => els[id] || null;
  return {doc, els};
}

const HOW = {confidence: {high: "#bfdbfe", low: "#fecaca"}};

test("only the parts the host sent change: a streamed piece leaves the notes and candidates as they are", () => {
  const {doc, els} = fakeDocument();
  showResult(doc, {translation: "A dog", info: "<p>Translating…</p>", source: [["▁Ein", "piece"], ["▁Hund", "piece"]],
                   output: [["▁A", "high"]], candidates: [], ablation: ""}, HOW);
  assert.equal(els.translation.text.textContent, "A dog");
  assert.deepEqual(els["source-pieces"].children.map((c) => [c.textContent, c.title]), [["▁Ein", ""], ["▁Hund", ""]]);
  assert.equal(els["output-pieces"].children[0].style.background, "#bfdbfe");
  assert.deepEqual(els["confidence-legend"].children.map((c) => c.textContent), ["high", "low"]);
  assert.ok(els["candidates-box"].hidden && els.ablation.hidden);
  showResult(doc, {translation: "A dog runs", output: [["▁A", "high"], ["▁dog", "low"]]}, HOW);
  assert.equal(els.translation.text.textContent, "A dog runs");
  assert.equal(els["output-pieces"].children[1].style.background, "#fecaca");
  assert.equal(els["run-info"].innerHTML, "<p>Translating…</p>");
  assert.equal(els["source-pieces"].children.length, 2);
  showResult(doc, {ablation: "<div class='anatomy-ablation'></div>"}, HOW);
  assert.ok(!els.ablation.hidden);
});

test("a candidate's row is picked by a click or Enter where the host can show it, and not elsewhere", () => {
  const {doc, els} = fakeDocument();
  const picked = [];
  const rows = [[1, "A dog.", -0.1, -1.2, 3], [2, "∅ (empty)", -0.5, -2.0, 1]];
  showResult(doc, {candidates: rows}, Object.assign({pick: (i) => picked.push(i)}, HOW));
  assert.ok(!els["candidates-box"].hidden);
  const [head, body] = els.candidates.children;
  assert.deepEqual(head.children[0].children.map((c) => c.textContent), ["#", "candidate", "score", "log p", "pieces"]);
  assert.deepEqual(body.children[1].children.map((c) => c.textContent), ["2", "∅ (empty)", "-0.5", "-2", "1"]);
  body.children[1].listeners.click();
  body.children[0].listeners.keydown({key: "Enter"});
  body.children[0].listeners.keydown({key: "a"});
  assert.deepEqual(picked, [1, 0]);
  showResult(doc, {candidates: rows}, HOW);  // the offline file's: no model to show another candidate
  assert.deepEqual(els.candidates.children[1].children[0].listeners, {});
  showResult(doc, {candidates: []}, HOW);
  assert.ok(els["candidates-box"].hidden && els.candidates.children.length === 0);
});

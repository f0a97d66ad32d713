// anatomy/viewer/fit.js: tick labels fitted to their pixels, worked by hand.
import assert from "node:assert/strict";
import {test} from "node:test";

import {labelsFitted, short, spaced, ticksOf, titleFitted, titleLines} from "../../anatomy/viewer/fit.js";

const ticks = (n) => ({vals: Array.from({length: n}, (_, i) => i), text: Array.from({length: n}, (_, i) => `p${i}`)});
const rows = (f) => 1.15 * f;

test("labels that have room keep their size and all show", () => {
  const t = ticks(10), s = spaced(t, t.text, 200, 12, 10, rows); // 20 px a row, 13.8 needed
  assert.deepEqual([s.size, s.vals.length], [12, 10]);
});

test("crowded labels shrink, down to the least size", () => {
  const t = ticks(20), s = spaced(t, t.text, 240, 12, 10, rows); // 12 px a row: 12 × 12 / 13.8 → 10
  assert.deepEqual([s.size, s.vals.length], [10, 20]);
});

test("then every k-th label shows, the text with its tick", () => {
  const t = ticks(100), s = spaced(t, t.text, 400, 12, 10, rows); // 4 px a row; 11.5 needed at 10 px: k = 3
  assert.equal(s.size, 10);
  assert.deepEqual(s.vals.slice(0, 3), [0, 3, 6]);
  assert.deepEqual(s.text.slice(0, 3), ["p0", "p3", "p6"]);
  assert.equal(s.vals.length, 34);
});

test("slanted columns stand a label's height apart across their slant", () => {
  const x = ticks(40), u = labelsFitted({x, y: null, angle: -90, colorbar: false},
    {height: 300, width: 460, margin: {l: 40, r: 20, t: 40, b: 40}, font: 12, least: 10, narrow: false});
  // 400 px for 40 columns: 10 px each, 11.5 needed at 10 px → every second label
  assert.deepEqual([u["xaxis.tickfont.size"], u["xaxis.tickvals"].length], [10, 20]);
  const slanted = labelsFitted({x, y: null, angle: -50, colorbar: true},
    {height: 300, width: 870, margin: {l: 40, r: 20, t: 40, b: 40}, font: 12, least: 10, narrow: false});
  // 740 px (a colorbar takes 70): 18.5 px each; at -50° a 12 px label needs 13.8 / sin 50° = 18.0: all, at 12 px
  assert.deepEqual([slanted["xaxis.tickfont.size"], slanted["xaxis.tickvals"].length], [12, 40]);
});

test("only labelled axes are fitted", () => {
  assert.equal(ticksOf({tickmode: "auto", tickvals: [0], ticktext: ["a"]}), null);
  assert.equal(ticksOf({tickmode: "array", tickvals: [0, 1], ticktext: ["a"]}), null);
  assert.deepEqual(labelsFitted({x: null, y: null, angle: 0, colorbar: false},
    {height: 300, width: 400, margin: {l: 0, r: 0, t: 0, b: 0}, font: 12, least: 10, narrow: false}), {});
});

test("a phone's row label keeps both pieces, each cut, never half an entity", () => {
  assert.equal(short("\u2581while \u25b8 \u2581table"), "\u2581whi\u2026 \u25b8 \u2581tab\u2026");
  assert.equal(short("&lt;/s&gt; \u25b8 \u2581a"), "&lt;/s&gt; \u25b8 \u2581a");  // </s>: 4 characters shown
  assert.equal(short("&lt;unk&gt;x \u25b8 &amp;"), "&lt;unk&gt;x \u25b8 &amp;");
  assert.equal(short("\u2581Sonnenaufgang"), "\u2581Sonnenaufga\u2026");
  // a short word stays whole: only the longer side is cut
  assert.equal(short("\u2581runs \u25b8 \u2581in"), "\u2581runs \u25b8 \u2581in");
  assert.equal(short("\u2581a \u25b8 \u2581Sonnenaufgang"), "\u2581a \u25b8 \u2581Sonnen\u2026");
  assert.equal(short("&lt;unk&gt;xyzuvw \u25b8 &amp;"), "&lt;unk&gt;xyz\u2026 \u25b8 &amp;");
});

test("a title too wide breaks at its separators, as few times as it must", () => {
  const title = "Cross-attention · layer 3, head 1 · query 4";  // 43 characters: 43 × 0.55 × 10 = 236.5 px
  assert.equal(titleLines(title, 240, 10), title);
  assert.equal(titleLines(title, 200, 10), "Cross-attention · layer 3, head 1<br>query 4");
  assert.equal(titleLines(title, 100, 10), "Cross-attention<br>layer 3, head 1<br>query 4");
  // lines it had stay; a part still too long breaks at its spaces, never inside a tag; a word longer than the
  // line stands alone
  assert.equal(titleLines("a · b<br>c", 10, 10), "a<br>b<br>c");
  assert.equal(titleLines("Step 5 · decoder masked self-attention", 100, 10),
               "Step 5<br>decoder masked<br>self-attention");
  assert.equal(titleLines('one <span style="color:red">two</span> three', 30, 10),
               'one<br><span style="color:red">two</span><br>three');
});

test("an axis title runs on one line, else two at its bracket, else none", () => {
  const t = "query: decoder position (read \u25b8 produced)";  // 41 characters, 24 before " ("
  assert.equal(titleFitted(t, 41 * 0.58 * 10, 10), t);
  assert.equal(titleFitted(t, 200, 10), "query: decoder position<br>(read \u25b8 produced)");
  assert.equal(titleFitted(t, 100, 10), "");
});

// anatomy/viewer/screen.js's pure parts (a figure's sizes for a mode, the line view's kept lines, a clicked head),
// and anatomy/bundle.py's bundle of several entries that import the same module.
import assert from "node:assert/strict";
import {spawnSync} from "node:child_process";
import {dirname, join} from "node:path";
import {test} from "node:test";
import {fileURLToPath} from "node:url";
import vm from "node:vm";

import {base, boxed, headOf, linesThrough, pieceKey, update, wrapped} from "../../anatomy/viewer/screen.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const mode = (over) => Object.assign({key: "", narrow: false, room: 900, large: false, fold: Infinity, width: 800},
                                     over);
const rows = (n) => ({height: 600, margin: {l: 100, r: 20, t: 60, b: 40}, yaxis: {tickmode: "array",
  tickvals: Array.from({length: n}, (_, i) => i), ticktext: Array.from({length: n}, (_, i) => `p${i}`)}});

test("a figure keeps its own height where it has room, and fills its width", () => {
  const u = update(base([{type: "heatmap"}], rows(10)), mode(), false, 1.5).layout;
  assert.deepEqual([u.height, u.autosize, u.width, u["margin.l"], u["font.size"]], [600, true, null, 100, 12]);
});

test("the large view ends at the fold but never leaves its rows too low for their labels", () => {
  const few = update(base([], rows(10)), mode({large: true, fold: 400}), false, 1.5).layout;
  assert.equal(few.height, 400);
  const many = update(base([], rows(40)), mode({large: true, fold: 400}), false, 1.5).layout;
  assert.equal(many.height, 40 * 11.5 + 100); // rows of 11.5 px and its margins, under its own 600
});

test("presenter mode scales type and margins; the large view fills the first screen", () => {
  const u = update(base([], rows(10)), mode({large: true, fold: 700}), true, 1.5).layout;
  assert.deepEqual([u.height, u["font.size"], u["margin.l"], u["title.font.size"]], [700, 18, 150, 17 * 1.5]); // the title 1.4 times the font
});

test("narrow: small type and margins, row labels cut, no y title", () => {
  const layout = Object.assign(rows(3), {yaxis: Object.assign(rows(3).yaxis, {title: {text: "queries"},
                                                                             ticktext: ["averyverylongpiece", "a", "b"]})});
  const u = update(base([], layout), mode({narrow: true, width: 360}), true, 1.5).layout;
  assert.deepEqual([u["font.size"], u["margin.r"], u["yaxis.title.text"]], [10, 10, ""]);
  assert.equal(u["yaxis.ticktext"][0], "averyverylon\u2026");
});

test("a title wider than its figure breaks at its ' · ' and widens the top margin", () => {
  const layout = {title: {text: "Cross-attention · layer 3, head 2 · words · special tokens hidden"}, height: 300};
  const u = update(base([], layout), mode({width: 300}), false, 1.5).layout;
  assert.ok(u["title.text"].includes("<br>"));
  assert.ok(u["margin.t"] > 100);
});

test("labels left out for room are said under the title, which widens the top margin", () => {
  const columns = (n) => ({title: {text: "Cross-attention · layer 3"}, height: 400, margin: {l: 80, r: 20, t: 60, b: 80},
                           xaxis: {tickmode: "array", tickangle: -50, tickvals: Array.from({length: n}, (_, i) => i),
                                   ticktext: Array.from({length: n}, (_, i) => `piece${i}`)}});
  const all = update(base([], columns(10)), mode({width: 800}), false, 1.5).layout;
  assert.equal(all["xaxis.tickvals"].length, 10);
  assert.equal(all["title.text"], "Cross-attention · layer 3");
  const long = update(base([], columns(120)), mode({width: 800}), false, 1.5).layout;
  const k = long["xaxis.tickvals"][1];
  assert.ok(k > 1 && long["xaxis.tickvals"].length < 120);
  assert.ok(long["title.text"].startsWith("Cross-attention · layer 3<br>"));
  assert.ok(long["title.text"].includes(`every ${k === 2 ? "2nd" : k === 3 ? "3rd" : k + "th"} column labelled, ` +
                                        "hover for the others"), long["title.text"]);
  assert.ok(long["margin.t"] > all["margin.t"]);
  const tall = update(base([], Object.assign(rows(300), {title: {text: "T"}})), mode({width: 800}), false, 1.5).layout;
  assert.match(tall["title.text"], /^T<br>.*every \d+(nd|rd|th) row labelled/);
});

test("on a phone, a title with no room beside Plotly's toolbar goes under it, with the margin for it", () => {
  const layout = {title: {text: "Cross-attention · layer 3, mean of 4 heads"}, height: 300, margin: {t: 40}};
  const beside = update(base([], layout), mode({width: 800, bar: 200}), false, 1.5).layout;
  assert.deepEqual([beside["title.y"], beside["margin.t"]], ["auto", 40]);
  // elsewhere it keeps its height (the toolbar shows under the pointer only)
  const kept = update(base([], layout), mode({width: 500, bar: 216}), false, 1.5).layout;
  assert.deepEqual([kept["title.y"], kept["margin.t"], kept["title.text"].includes("<br>")], ["auto", 40, false]);
  const under = update(base([], layout), mode({width: 500, bar: 216, narrow: true}), false, 1.5).layout;
  assert.deepEqual([under["title.y"], under["title.yanchor"], under["title.pad.t"]], [1, "top", 32]);
  assert.equal(under["margin.t"], 40 + 32);
  assert.ok(!under["title.text"].includes("<br>"));
});

test("a diagram's type grows as far as its boxes hold, and its height with it; narrower, it keeps a width", () => {
  const b = base([], {height: 700, margin: {l: 10, r: 10, t: 40, b: 10}, meta: {fit: {width: 600}}});
  assert.deepEqual(boxed(b, 1.5, 1240), {notes: 1.5, height: 650 * 1.5 + 50 * 1.5, minWidth: 0});
  assert.deepEqual(boxed(b, 1.5, 800), {notes: 780 / 600, height: Math.round(650 * 780 / 600 + 75), minWidth: 0});
  assert.equal(boxed(b, 1, 500).notes, 0.8);  // smaller type down to 0.8 of its own
  assert.equal(boxed(b, 1, 400).minWidth, 0.8 * 600 + 20);  // then the figure keeps its width: its box scrolls
  const u = update(b, mode({width: 1240}), true, 1.5);
  assert.equal(u.layout.height, 1050);  // taller than the room of 900: its text stays in its boxes
});

test("cell text shrinks to what its cells hold, and is left out where they cannot hold it", () => {
  const cells = (n) => ({type: "heatmap", z: [Array(n).fill(0.5)], texttemplate: "%{z:.2f}", textfont: {size: 10}});
  const layout = {height: 300, margin: {l: 40, r: 10, t: 40, b: 40}};
  const fits = update(base([cells(4)], layout), mode({width: 800}), false, 1.5);
  assert.deepEqual([fits.text[0], fits.templates[0]], [10, "%{z:.2f}"]);
  const small = update(base([cells(30)], layout), mode({width: 800}), false, 1.5);  // 25 px cells: 4 characters
  assert.deepEqual([small.text[0], small.templates[0]], [Math.floor(750 / 30 / (0.62 * 4)), "%{z:.2f}"]);
  const none = update(base([cells(100)], layout), mode({width: 800}), false, 1.5);
  assert.equal(none.templates[0], "");
});

test("a piece's lines are those that start (query) or end (key) at its row", () => {
  const full = [{x: [0, 1, null, 0, 1, null, 0, 1, null], y: [0, 0, null, 0, -1, null, -1, -1, null]}];
  assert.deepEqual(linesThrough(full, 0, 0), {x: [[0, 1, null, 0, 1, null]], y: [[0, 0, null, 0, -1, null]]});
  assert.deepEqual(linesThrough(full, 1, -1), {x: [[0, 1, null, 0, 1, null]], y: [[0, -1, null, -1, -1, null]]});
  assert.deepEqual(linesThrough(full, null, null), {x: [full[0].x], y: [full[0].y]});
});

test("a thumbnail's meta or a cell's customdata names a head; a line view's marker a piece", () => {
  assert.equal(headOf({data: {meta: "head=cross:2.1"}}), "cross:2.1");
  assert.equal(headOf({data: {}, customdata: "head=encoder:1.3"}), "encoder:1.3");
  assert.equal(headOf({data: {meta: "lines"}, customdata: 0.5}), null);
  assert.equal(pieceKey({data: {meta: "keys"}, pointIndex: 4}), "keys:4");
  assert.equal(pieceKey({data: {meta: "lines"}, pointIndex: 4}), null);
});

test("one bundle of several entries holds a module they share once, and runs", () => {
  const made = spawnSync("python", ["-c", "import sys; from anatomy import bundle; "
                                    + "sys.stdout.write(bundle.script('screen', 'fit', 'host', 'tour'))"],
                         {cwd: ROOT, encoding: "utf-8"});
  assert.equal(made.status, 0, made.stderr);
  assert.equal(made.stdout.match(/^const viewer_fit = /gm).length, 1);
  const context = vm.createContext({});
  vm.runInContext(made.stdout + "this.made = {screen: viewer_screen, fit: viewer_fit, host: viewer_host};", context);
  const {screen, fit, host} = context.made;
  assert.equal(typeof screen.createScreen, "function");
  assert.equal(typeof host.createHost, "function");
  assert.deepEqual(screen.base([], {}).l, fit.frameOf({}).l);
});

test("a note wider than its figure takes more lines, words whole", () => {
  const note = "every 2nd column and every 2nd row labelled, hover for the others";
  assert.deepEqual(wrapped(note, 2000, 10), [note]);
  const lines = wrapped(note, 330, 10);  // a phone's figure: 60 characters a line
  assert.ok(lines.length >= 2 && lines.every((l) => l.length <= 60), lines);
  assert.equal(lines.join(" "), note);
});

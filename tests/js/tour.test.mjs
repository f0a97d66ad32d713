// anatomy/viewer/tour.js: which keys move the tour, stop numbers clamped, and the panel driving its host (a small
// stand-in for the DOM: the tour only makes elements, sets their text and listens for keys).
import assert from "node:assert/strict";
import {test} from "node:test";

import {TARGET_CLASS, createTour, stopIndex, tourKey} from "../../anatomy/viewer/tour.js";

function fakeElement(tag) {
  const classes = new Set();
  const el = {
    tag, children: [], dataset: {}, attributes: {}, textContent: "", listeners: {}, removed: false,
    classList: {add: (c) => classes.add(c), remove: (c) => classes.delete(c), contains: (c) => classes.has(c)},
    set className(value) { classes.clear(); value.split(" ").filter(Boolean).forEach((c) => classes.add(c)); },
    get className() { return [...classes].join(" "); },
    setAttribute(name, value) { el.attributes[name] = value; },
    appendChild(child) { el.children.push(child); return child; },
    append(...children) { el.children.push(...children); },
    replaceChildren(...children) { el.children = children; },
    addEventListener(type, fn) { el.listeners[type] = fn; },
    remove() { el.removed = true; },
    getBoundingClientRect: () => ({top: 10}),
    scrollIntoView() {},
  };
  return el;
}

function fakeDocument() {
  const listeners = [];
  const body = fakeElement("body");
  const view = {
    innerHeight: 720,
    addEventListener: (type, fn, capture) => listeners.push({type, fn, capture}),
    removeEventListener: (type, fn) => listeners.splice(listeners.findIndex((l) => l.fn === fn), 1),
    dispatchEvent() {},
  };
  const doc = {body, defaultView: view, createElement: fakeElement, listeners};
  doc.press = (key, target = {matches: () => false}) => {
    const event = {key, target, prevented: false, stopped: false, preventDefault() { event.prevented = true; },
                   stopImmediatePropagation() { event.stopped = true; }};
    listeners.filter((l) => l.type === "keydown").forEach((l) => l.fn(event));
    return event;
  };
  return doc;
}

const stop = (key, step, target = "heatmap") => ({key, title: key, text: `About ${key}.`, paper: "§3", equation: "",
                                                  target, view: {tab: "heads", kind: "cross", layer: 1, head: "1",
                                                                 step, display: "heatmap"}});
const TOUR = {of: [], stops: [stop("a", 1), stop("b", 2, "step-topk"), stop("c", 3)], left_out: ["no beam"],
              start: 1, query: "?text=x"};

function tourIn(doc) {
  const applied = [], targets = {heatmap: fakeElement("div"), "step-topk": fakeElement("div")};
  const t = createTour(doc, {apply: (v) => applied.push(v.step), target: (name) => targets[name] || null,
                             link: (k) => `?tour=${k}`});
  return {t, applied, targets};
}

test("the arrows and page keys (a presentation clicker's) move between stops, Esc leaves, nothing else", () => {
  assert.equal(tourKey("ArrowRight"), "next");
  assert.equal(tourKey("PageDown"), "next");
  assert.equal(tourKey("ArrowLeft"), "prev");
  assert.equal(tourKey("PageUp"), "prev");
  assert.equal(tourKey("Escape"), "close");
  assert.equal(tourKey("["), null);
  assert.equal(tourKey("a"), null);
});

test("a stop number from a link is clamped to the tour's stops", () => {
  assert.equal(stopIndex(TOUR, 1), 0);
  assert.equal(stopIndex(TOUR, 3), 2);
  assert.equal(stopIndex(TOUR, 9), 2);
  assert.equal(stopIndex(TOUR, 0), 0);
  assert.equal(stopIndex(TOUR, "x"), 0);
});

test("each stop sets the viewer and marks its place; the keys move only while the tour is open", () => {
  const doc = fakeDocument(), {t, applied, targets} = tourIn(doc);
  t.open(TOUR, 2);
  assert.equal(t.stop(), 2);
  assert.deepEqual(applied, [2]);
  assert.ok(targets["step-topk"].classList.contains(TARGET_CLASS));
  assert.ok(doc.body.classList.contains("anatomy-touring"));
  const right = doc.press("ArrowRight");
  assert.ok(right.prevented && right.stopped); // the page's own step keys never see it
  assert.equal(t.stop(), 3);
  assert.ok(!targets["step-topk"].classList.contains(TARGET_CLASS) && targets.heatmap.classList.contains(TARGET_CLASS));
  doc.press("ArrowRight"); // the last stop: nowhere further
  assert.equal(t.stop(), 3);
  doc.press("ArrowLeft");
  doc.press("ArrowLeft");
  doc.press("ArrowLeft");
  assert.equal(t.stop(), 1);
  assert.deepEqual(applied, [2, 3, 2, 1]);
  const typing = doc.press("ArrowRight", {matches: (sel) => sel.includes("textarea")});
  assert.ok(!typing.prevented && t.stop() === 1); // typing stays typing
  doc.press("Escape");
  assert.ok(!t.isOpen() && t.stop() === 0 && doc.body.children[0].removed);
  assert.ok(!doc.body.classList.contains("anatomy-touring") && !targets.heatmap.classList.contains(TARGET_CLASS));
  assert.equal(doc.listeners.length, 0); // the step keys are the page's again
});

test("the panel says where it is, links to its stop and lists what was left out on the last stop", () => {
  const doc = fakeDocument(), {t} = tourIn(doc);
  t.open(TOUR, 3);
  const panel = doc.body.children[0], texts = (el) => [el.textContent, ...el.children.flatMap(texts)];
  assert.equal(panel.dataset.stop, "3");
  assert.ok(texts(panel).includes("Stop 3 of 3 · §3"));
  assert.ok(texts(panel).includes("no beam"));
  assert.equal(panel.children.find((c) => c.tag === "a").href, "?tour=3");
  t.open(TOUR, 1);
  assert.ok(!texts(doc.body.children[0]).includes("no beam"));
  const frame = fakeDocument(), nowhere = createTour(frame, {apply() {}, target: () => null, link: () => ""});
  nowhere.open(TOUR, 1); // a page with no address of its own (a notebook's frame): no link
  assert.ok(nowhere.isOpen() && !frame.body.children[0].children.some((c) => c.tag === "a"));
});

test("a stop's place is kept at the window's top while the page settles, until the visitor scrolls", (t) => {
  t.mock.timers.enable({apis: ["setTimeout", "Date"]});
  const doc = fakeDocument();
  let top = -200, scrolls = 0;
  const place = Object.assign(fakeElement("div"), {getBoundingClientRect: () => ({top}),
                                                   scrollIntoView() { scrolls += 1; top = 0; }});
  const tour = createTour(doc, {apply() {}, target: () => place, link: (k) => `?tour=${k}`});
  tour.open(TOUR, 1);
  assert.equal(scrolls, 1);  // out of sight: brought to the top
  top = -30;  // the view drawn for the stop shrinks what is above it
  t.mock.timers.tick(100);
  assert.ok(scrolls === 2 && top === 0);
  t.mock.timers.tick(100);
  assert.equal(scrolls, 2);  // where it should be: left alone
  doc.listeners.filter((l) => l.type === "wheel").forEach((l) => l.fn({}));
  top = -300;  // the visitor scrolled down the page
  t.mock.timers.tick(1000);
  assert.equal(scrolls, 2);
  tour.close();
  assert.equal(doc.listeners.length, 0);
});

test("a stop's place already in sight lower down is not moved", (t) => {
  t.mock.timers.enable({apis: ["setTimeout", "Date"]});
  const doc = fakeDocument();
  let scrolls = 0;
  const place = Object.assign(fakeElement("div"), {getBoundingClientRect: () => ({top: 300}),
                                                   scrollIntoView() { scrolls += 1; }});
  createTour(doc, {apply() {}, target: () => place, link: (k) => `?tour=${k}`}).open(TOUR, 1);
  t.mock.timers.tick(3000);
  assert.equal(scrolls, 0);
});

// The offline page's host (anatomy/viewer/offline.html): the translation, the controls and the keys, each figure
// drawn by figures.js from the page's data with Plotly.js, with no server and no network. The data is the trace
// payload and what the page shows besides it (anatomy/offline.py `payload`), with Why this word's explanation and
// the value norms when they were made before the page was saved.

import {METHODS, explainsPayload, lensStep, lensTranslation, whyAgreement, whyShares, whyStep, whyTranslation}
  from "./explain.js";
import {bindKeys, createControls, shapeOf as controlsShape} from "./controls.js";
import {fitted, grid, large, positional, stepFigures, steps, summary, topkTable} from "./figures.js";
import {readPayload} from "./payload.js";
import {WEIGHTS, hasNorms, setNorms} from "./weights.js";
import {readView, shapeOf} from "./link.js";
import {createScreen} from "./screen.js";
import {statsTable} from "./tabs.js";
import {createTour} from "./tour.js";

// no `responsive`: Plotly's own resize drops a figure's height (it fell to its div's 40 px); screen.js fits each
// figure to its width and height on every resize
const CONFIG = {displaylogo: false};
const NO_EXPLANATION = "This page was saved without Why this word: in the app, open the Why this word tab (and choose " +
  "value-norm weights, for those) before Download page; in a notebook, show(..., explain=True).";
const $ = (id) => document.getElementById(id);
// The tour's places (anatomy/tour.py TARGETS) where this page names them otherwise; a stop's tab is the section
// that holds its target.
const TOUR_PLACES = {architecture: "architecture-figure"};
const range = (n) => Array.from({length: n}, (_, i) => i);

/**
 * Draw a page's data into this document: every section, then the figures; `document.body.dataset.ready` is "1"
 * once all are drawn ("error" if one failed), and `dataset.drawn` counts the redraws of the views.
 * @param {{payload: Object, page: Object}} data
 */
export function showPage(data) {
  const P = readPayload(data.payload), G = data.page, look = G.look, T = steps(P);
  const start = Object.assign({weights: WEIGHTS[0]}, G.view);
  let method = METHODS[0];
  // The view this file's address names (?view=encoder&layer=2&step=3&presenter=1&tour=4, as the app's links do),
  // read as the app reads a link (link.js); a notebook's frame (about:srcdoc) has no address of its own.
  const query = location.protocol === "about:" ? {} : Object.fromEntries(new URLSearchParams(location.search));
  const linked = readView(query, shapeOf(P));
  const FIELDS = {view: "kind", layer: "layer", head: "head", merge: "merge", step: "step", hide: "hide",
                  display: "display"};
  for (const [param, field] of Object.entries(FIELDS)) {
    const value = linked.view[field];
    // the softmax walk needs the app's model: this page draws heatmaps and lines
    if (query[param] && value !== null && !(field === "display" && value === "walk")) start[field] = value;
  }
  // every figure fitted to where it is drawn as in the app (screen.js), from its first drawing; a click on a head's
  // thumbnail or cell opens it in the large view
  const screen = createScreen(document, {
    figures: ".figure",
    room: (gd) => gd,
    head: (named) => {
      const [, kind, layer, head] = /^(\w+):(\d+)\.(\d+)$/.exec(named) || [];
      if (kind) open({kind, layer: +layer, head}, kind !== view.view().kind);
      return !!kind;
    },
  });
  screen.presenter(!!linked.presenter);
  const draw = (id, f) => Plotly.react($(id), f.data, f.layout, CONFIG);
  const E = explainsPayload(data.explain, P) ? data.explain : null;
  setNorms(P, data.norms || null);
  const weightChoices = [["attention α", "attention"], ...(hasNorms(P) ? [["value-norm ‖α·v·W_o‖", "value-norm"]] : []),
                         ["rollout (encoder)", "rollout"]];

  function chips(id, items, colors = {}) {
    $(id).replaceChildren(...items.map(([piece, category]) => {
      const span = document.createElement("span");
      span.className = "chip" + (category === "current" ? " current" : "");
      span.textContent = piece;
      if (colors[category]) span.style.background = colors[category];
      if (category && category !== "current") span.title = category;
      return span;
    }));
  }

  function table(element, headers, rows) {
    const head = element.createTHead().insertRow();
    headers.forEach((h) => { head.appendChild(document.createElement("th")).textContent = h; });
    const body = element.createTBody();
    rows.forEach((row) => {
      const tr = body.insertRow();
      row.forEach((x) => { tr.insertCell().textContent = x === null ? "" : String(x); });
    });
  }

  function translation() {
    $("source-text").textContent = P.text;
    $("translation").textContent = P.translation || "∅ (empty)";
    $("notices").replaceChildren(...P.notices.map((n) => {
      const li = document.createElement("li");
      li.textContent = "⚠️ " + n;
      return li;
    }));
    chips("source-pieces", P.pieces.source.map((p) => [p, ""]));
    chips("output-pieces", G.chips, G.confidence);
    chips("confidence-legend", Object.keys(G.confidence).map((c) => [c, c]), G.confidence);
    document.title = `${P.model.key}: ${P.translation || P.text} · Transformer Anatomy`;
    if (G.candidates.length) {
      $("candidates-box").hidden = false;
      table($("candidates"), ["#", "candidate", "score", "log p", "pieces"], G.candidates);
    }
    $("definitions").replaceChildren(...G.stats.definitions.map(([name, text]) => {
      const li = document.createElement("li");
      li.appendChild(document.createElement("b")).textContent = name;
      li.append(": " + text);
      return li;
    }));
    const scale = P.kinds[0].attention.scale;
    $("quantised").textContent = `Attention is stored in this page as whole 1/${scale}ths (each weight within ` +
                                 `1/${2 * scale} of the model's); the mean of heads is the mean of those.`;
    // HTML made by anatomy/offline.py from the app's markdown, raw HTML escaped
    $("architecture").innerHTML = G.architecture;
    $("card").innerHTML = G.card;
    return Promise.all([draw("architecture-figure", G.figures.architecture), draw("parameters", G.figures.parameters)]);
  }

  // ---- the head statistics table (tabs.js): sorted by a click on a column, a row opens its head ----

  const stats = statsTable($("stats"), (v) => open(v, true));

  // ---- the views ----

  // the view controls (controls.js), as the app has them: this page has no softmax walk (it needs the model)
  const view = createControls($("view-controls"), {
    walk: false, weights: weightChoices, shape: controlsShape(P), view: start,
    changed: (v, field) => {
      $("kind-help").innerHTML = G.help[v.kind];
      update(["kind", "merge", "plain", "hide", "weights"].includes(field));
    }});
  function controls() {
    if (E) options($("method"), METHODS.map((m) => [E.methods[m].label, m]), method);
    $("kind-help").innerHTML = G.help[view.view().kind];
  }

  function options(select, items, chosen) {
    select.replaceChildren(...items.map(([text, val]) => new Option(text, val)));
    select.value = String(chosen);
  }

  let drawn = 0;

  // Redraw what the view controls change; `all`: the grid and the head statistics too (kind, words, tokens).
  function update(all) {
    const v = Object.assign(view.view(), {method});
    const s = stepFigures(P, v, look);
    chips("partial", P.pieces.output.slice(0, v.step).map((piece, i) => [piece, i === v.step - 1 ? "current" : ""]));
    const jobs = [draw("heatmap", large(P, v, look)), draw("step-cross", s.cross), draw("step-self", s.self),
                  draw("step-topk", s.topk)];
    if (all) {
      jobs.push(draw("grid", grid(P, v, look, "open in the large view")),
                draw("summary", summary(P, v.kind, look)));
    }
    if (E && T) {
      const f = fitted(P, v);
      jobs.push(draw("why-step", whyStep(E, P, f, look)), draw("why-shares", whyShares(E, P, f, look)),
                draw("why-agree", whyAgreement(E, P, f, look)), draw("why-all", whyTranslation(E, P, f, look)),
                draw("lens-step", lensStep(E.lens, P, f.step, look)),
                draw("lens-all", lensTranslation(E.lens, P, f.step, look)));
    }
    return Promise.all(jobs).then(() => { document.body.dataset.drawn = String(++drawn); });
  }

  function open(v, all) {
    view.set(v);
    controls();
    update(all);
    $("explorer-section").scrollIntoView();
  }

  translation().catch(console.error);
  const said = [[linked.outside, "Out of range in the link, so the nearest allowed value was used"],
                [linked.unread, "Not understood in the link, so the default was used"]];
  $("notices").append(...said.filter(([items]) => items.length).map(([items, what]) => {
    const li = document.createElement("li");
    li.textContent = `\u26a0\ufe0f ${what}: ${items.join(", ")}.`;
    return li;
  }));
  controls();
  $("method").addEventListener("change", () => {
    method = $("method").value;
    update(false);
  });
  if (!E) {
    $("why-views").hidden = true;
    Object.assign($("why-none"), {hidden: false,
                                  textContent: T ? NO_EXPLANATION : "Nothing was decoded: no piece to explain."});
  }
  $("presenter").checked = !!linked.presenter;
  $("presenter").addEventListener("change", () => screen.presenter($("presenter").checked));
  bindKeys(document, view);
  stats.show(G.stats, P.kinds);
  const tour = createTour(document, {
    apply: (v) => {
      view.set({kind: v.kind, layer: v.layer, head: v.head, step: v.step, display: v.display});
      controls();
      update(false);
    },
    target: (name) => $(TOUR_PLACES[name] || name),
    // a file's own address; a notebook's frame (about:srcdoc) has none to link to
    link: (k) => (location.protocol === "about:" ? "" : `${location.pathname}?tour=${k}`),
  });
  if (data.tour && data.tour.stops.length) {
    $("tour-start").hidden = false;
    $("tour-start").addEventListener("click", () => tour.open(data.tour, 1));
  }
  const p = positional(G.positional, P.pieces.source, look);
  return Promise.all([update(true), draw("topk-table", topkTable(P, look)), draw("pe", p.curves),
                      draw("pe-similarity", p.similarity), draw("pe-rows", p.rows)]).then(
    () => {
      // a link to a stop (?tour=K) opens the tour there
      if (linked.tour && data.tour) tour.open(data.tour, linked.tour);
      document.body.dataset.ready = "1";
    },
    (err) => {
      document.body.dataset.ready = "error";
      throw err;
    });
}


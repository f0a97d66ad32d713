// The offline file's host (anatomy/viewer/offline.html, also a notebook's frame): the viewer's page (page.js) on
// the data the file carries (anatomy/offline.py `payload`), with no server and no network, and the file's own
// translation part. What the app asks its model for, this host answers from the file when the file carries it
// (the tabs' tables and figures, Why this word and the value norms when they were made before the file was saved)
// and otherwise with a note, in place, saying how to get it in the app.

import {NOTHING_TO_EXPLAIN} from "./explain.js";
import {createPage} from "./page.js";
import {readView, shapeOf, viewQuery} from "./link.js";
import {readPayload} from "./payload.js";
import {showResult} from "./result.js";

// no `responsive`: Plotly's own resize drops a figure's height (it fell to its div's 40 px); screen.js fits each
// figure to its width and height on every resize
const CONFIG = {displaylogo: false};
const IN_THE_APP = "needs the app's model: open this translation in Transformer Anatomy (the app) to see it.";
const NO_ADDRESS = "This page, in a notebook's frame, has no address to link to: save it (shown.save(path)) and " +
  "open the file, or open the translation in the app.";
const NO_EXPLANATION = "This page was saved without Why this word: in the app, open the Why this word tab " +
  "(and choose value-norm weights, for those) before Download page; in a notebook, show(..., explain=True).";

/**
 * Draw a file's data into this document; `document.body.dataset.ready` is "1" once the large view is drawn
 * ("error" if the page failed).
 * @param {{payload: Object, page: Object, tab: Object, positional: Object, explain: Object | null,
 *   norms: Object | null, tour: Object | null}} data
 */
export function showOffline(data) {
  const $ = (id) => document.getElementById(id);
  const P = readPayload(data.payload), G = data.page;
  const note = (id, what) => {
    const el = $(id);
    el.textContent = `${what} ${IN_THE_APP}`;
    el.hidden = false;
  };
  const page = createPage(document, {look: G.look, config: CONFIG, confidence: G.confidence, server: {
    ask(name) {
      const tab = page.tabs.open();
      if (name === "tab") page.data({tab: data.tab});
      else if (name === "make" && tab === "why") {
        if (data.explain) page.data({explain: data.explain});
      } else if (name === "make" && tab === "importance") {
        page.tabData({importance_list: `<p>Head importance ${IN_THE_APP}</p>`});
      } else if (name === "make" && tab === "compare") {
        page.tabData({compare: `<p>The untrained twin ${IN_THE_APP}</p>`});
      } else if (name === "contrast") note("why-none", "Comparing with another word");
      else if (name === "norms") note("why-none", "Value-norm weights for this translation");
      else if (name === "animation") note("animation-note", "The animation");
      else if (name === "branch") page.branchNote(`Continuing from another word ${IN_THE_APP}`);
      else if (name === "candidate") note("candidates-note", "Another candidate's attention");
      else if (name === "share") {
        if (location.protocol === "about:") {  // a notebook's frame
          page.shared("");
          $("share-url").querySelector("textarea").value = NO_ADDRESS;
        } else page.shared(viewQuery(page.state()));
      }
      else if (name === "toggle") {  // a head clicked: here, opened in the large view
        const [, kind, layer, head] = /^(\w+):(\d+)\.(\d+)$/.exec(page.clickedHead) || [];
        if (kind) {
          page.open({kind, layer: +layer, head});
          page.reveal("heatmap");
        }
      }
    },
  }});

  translation(P, G);
  page.mount();
  if (!data.explain) {
    $("why-none").textContent = P.pieces.output.length ? NO_EXPLANATION : NOTHING_TO_EXPLAIN;
    $("why-none").hidden = false;
    const parts = $("why-none").parentElement.querySelectorAll(".anatomy-box, #why-controls, #lens-help");
    for (const el of /** @type {NodeListOf<HTMLElement>} */ (parts)) {
      el.hidden = true;
    }
  }
  // The view this file's address names (?view=encoder&layer=2&step=3&presenter=1&tour=4, as the app's links do),
  // read as the app reads a link (link.js); a notebook's frame (about:srcdoc) has no address of its own.
  const query = location.protocol === "about:" ? {} : Object.fromEntries(new URLSearchParams(location.search));
  const linked = readView(query, shapeOf(P));
  const start = Object.assign({}, G.view);
  const FIELDS = {view: "kind", layer: "layer", head: "head", merge: "merge", step: "step", hide: "hide",
                  display: "display", query: "query"};
  for (const [param, field] of Object.entries(FIELDS)) {
    const value = linked.view[field];
    // the softmax walk needs the app's model: this page draws heatmaps and lines
    if (query[param] && value !== null && !(field === "display" && value === "walk")) start[field] = value;
  }
  /** @type {[string[], string][]} */
  const said = [[linked.outside, "Out of range in the link, so the nearest allowed value was used"],
                [linked.unread, "Not understood in the link, so the default was used"]];
  $("notices").append(...said.filter(([items]) => items.length).map(([items, what]) => {
    const li = document.createElement("li");
    li.textContent = `\u26a0\ufe0f ${what}: ${items.join(", ")}.`;
    return li;
  }));
  page.data({payload: data.payload, positional: data.positional, explain: data.explain, norms: data.norms,
             tab: data.tab, open: Object.assign(start, linked.presenter ? {presenter: true} : {})});
  if (data.tour && data.tour.stops.length) {
    $("tour-start").hidden = false;
    $("tour-start").addEventListener("click", () => page.tour(Object.assign({}, data.tour, {start: 1})));
  }
  // the large view drawn: the page is ready, and a link to a stop (?tour=K) opens the tour there
  const ready = () => {
    const gd = /** @type {PlotlyDiv} */ (document.querySelector("#heatmap .anatomy-plot"));
    if (!gd._fullLayout) {
      setTimeout(ready, 50);
      return;
    }
    if (linked.tour && data.tour && data.tour.stops.length) page.tour(Object.assign({}, data.tour, {start: linked.tour}));
    document.body.dataset.ready = "1";
  };
  ready();
  return page;
}

/** The file's translation part: the texts, notices, pieces, candidates and how its attention is stored. */
function translation(P, G) {
  const $ = (id) => document.getElementById(id);
  $("source-text").textContent = P.text;
  $("notices").replaceChildren(...P.notices.map((n) => {
    const li = document.createElement("li");
    li.textContent = "⚠️ " + n;
    return li;
  }));
  showResult(document, {translation: P.translation || "∅ (empty)", source: P.pieces.source.map((p) => [p, ""]),
                        output: G.chips, candidates: G.candidates}, {confidence: G.confidence});
  document.title = `${P.model.key}: ${P.translation || P.text} · Transformer Anatomy`;
  const scale = P.kinds[0].attention.scale;
  $("quantised").textContent = `Attention is stored in this page as whole 1/${scale}ths (each weight within ` +
                               `1/${2 * scale} of the model's); the mean of heads is the mean of those.`;
}

// The viewer's page, one host for every page that shows it (the app's, the offline file's, a notebook's frame):
// the view controls and the keys, the large view, the decoding steps and the tabs, the tour's panel, presenter
// mode and the fitting of the figures (screen.js), the line view's hover, figure export and Link to this view, laid
// out by anatomy/layout.py. What only a model or a server makes (the softmax walk, value norms, why this word, head
// importance, the untrained twin, heads off, the animation, a share link's query) the page asks its host for
// through one small interface (`Server`); the host answers through `data`.

import {branchLines, drawLine} from "./branch.js";
import {createHost} from "./host.js";
import {showResult} from "./result.js";
import {bindKeys, createControls, shapeOf} from "./controls.js";
import {createScreen} from "./screen.js";
import {createTabs} from "./tabs.js";
import {createTour} from "./tour.js";

// the translation's part of the data (result.js)
const RESULT = ["translation", "info", "source", "output", "candidates", "ablation"];

/**
 * What a page asks of its host.
 * @typedef {Object} Server
 * @property {function(string): void} ask  one of the offer's asks (anatomy/layout.py explorer_html: "walk",
 *   "norms", "make", "contrast", "toggle", "branch", "tab", "animation", "share", and the app's "link", "address",
 *   "own"); the answer,
 *   if any, comes back through the page's `data`, and the page's state (`state`) says what it is asked with
 */

/**
 * The page in `document`, drawn with `options.look` and Plotly's `options.config` (Plotly.js from `options.plotly`
 * when the page has none); `options.server` answers what it asks. Nothing is drawn before `mount` or the first
 * `data`.
 * @param {Document} document
 * @param {{look: Object, config: Object, plotly?: string, server: Server, confidence: Object<string, string>,
 *   held?: boolean}} options
 *   `confidence`: the output pieces' colour by their probability's class (anatomy/views.py CONFIDENCE); `held`: no
 *   placeholders drawn until a translation comes or the host lets go (viewer.hold)
 */
export function createPage(document, options) {
  const window = document.defaultView, server = options.server;
  const $ = (id) => document.getElementById(id);
  const value = (id) => /** @type {HTMLInputElement | HTMLSelectElement} */ ($(id)).value;
  const checked = (id) => /** @type {HTMLInputElement} */ ($(id)).checked;
  const viewer = createHost({look: options.look, config: options.config, plotly: options.plotly, held: options.held,
                             askWalk: () => A.ask("walk"), askNorms: () => A.ask("norms"),
                             loaded: () => A.scan()});
  // the page's figures; a click on a head asks the host (the app switches it off or on)
  const screen = createScreen(document, {
    figures: "[data-testid=plotly]",
    refresh: () => viewer.refresh(),
    stale: (gd) => viewer.stale(gd),
    head(named) {
      A.clickedHead = named;
      A.toggled = true;
      A.ask("toggle");
      return true;
    },
    branch(step, rank) {
      const row = A.payload && A.payload.top_k[step], next = row && row[rank];
      if (next) A.branch(step, next[0], "");
      return !!next;
    },
  });
  const A = {
    viewer, screen,
    // The data the host sent, by channel: the viewer draws what changed (anything not in view, once it comes into
    // view: scan); a new translation fits the view controls and opens at its own view; the open tab's own data, a
    // view to open and a tour follow.
    data(d) {
      if (!d) return;
      if (A.preloading) {
        A.preloading = false;
        if (window.requestIdleCallback) window.requestIdleCallback(() => viewer.preload(), {timeout: 2000});
        else setTimeout(() => viewer.preload()); // no idle callbacks (Safari): at once
      }
      const part = Object.fromEntries(RESULT.filter((k) => k in d).map((k) => [k, d[k]]));
      if (Object.keys(part).length) showResult(document, part, {confidence: options.confidence, pick: A.pick});
      const before = viewer.version("payload");
      const drawn = ["payload", "twin", "walk", "positional", "importance", "explain", "norms"].filter((n) => n in d);
      drawn.forEach((name) => viewer.set(name, d[name]));
      const view = A.mount();
      const {payload, importance, positional} = d;
      if (payload && viewer.version("payload") !== before) {
        A.payload = payload;
        A.showBranch(payload);
        A.shape = shapeOf(payload);
        A.kinds = payload.kinds.map((k) => ({name: k.name, label: k.label}));
        view.fit(A.shape);
        if (payload.opens_at) view.set(payload.opens_at);
        A.showPair(payload);
        A.showTranslation();
      }
      // Head importance's parts that are there only for some translations and models
      if ("importance" in d) {
        $("log-probs").hidden = !(importance && importance.changes);
        $("corpus-row").hidden = !(importance && importance.corpus);
      }
      // another model's encoding: its own default curves
      if (positional && positional.d_model !== A.dModel) {
        A.dModel = positional.d_model;
        A.tabView.dims = null;
        A.tabs.showDims(positional.dims);
      }
      // a tour is of one translation: another one on the page ends it
      if (A.guide && A.guide.isOpen() && JSON.stringify(A.tourData.of) !== viewer.shownKey()) A.guide.close();
      if (drawn.length) A.changed(view.view());
      if ("tab" in d) A.tabData(d.tab);
      if ("open" in d) A.open(d.open);
      if ("tour" in d) A.tour(d.tour);
      if ("link" in d) A.shared(d.link);
    },
    // A translation the visitor asked for (the app's Translate button, an example): the translation and the large
    // view after it brought into sight when either is out of it (a phone's one column puts the large view screens
    // below the button); a page opened by a link stays at its top.
    showTranslation() {
      if (!A.asked) return;
      A.asked = false;
      const el = $("translation"), r = el && el.getBoundingClientRect(), view = $("heatmap");
      if (r && (r.top < 0 || r.bottom > window.innerHeight || (view && view.getBoundingClientRect().top
                                                                 > window.innerHeight))) {
        el.scrollIntoView({block: "start"});
      }
    },
    // Continue the shown translation from another piece at a step (from 0): a step's next piece clicked (its bars,
    // the predictions) or a word typed; the host makes the branch (the app: one model event) or says why it cannot.
    branch(step, piece, word) {
      A.branching = {step, piece, word};
      A.branchAsked = true;
      A.branchNote("");
      A.ask("branch");
    },
    // A beam candidate clicked (its row, from 0): the host shows its attention (the app: one model event).
    pick(row) {
      A.candidate = row;
      A.picked = true;
      A.ask("candidate");
    },
    // A branch beside the model's own translation (branch.js), above the large view; hidden for any other trace.
    // Back to the model's own is offered where the host keeps it (the app's ask "own"). A branch the visitor asked
    // for is brought into sight, the large view below it (it was asked from the step panels, a screen further down).
    showBranch(payload) {
      const box = $("branch"), lines = branchLines(payload), asked = A.branchAsked;
      A.branchAsked = false;
      if (!box) return;
      box.hidden = !lines;
      if (!lines) return;
      const own = $("branch-own");
      own.hidden = !lines.own;
      if (lines.own) drawLine(document, own, "Model's own", lines.own, 0, lines.partsAt);
      drawLine(document, $("branch-line"), "Branch", lines.branch, lines.forced, lines.partsAt);
      $("branch-back").hidden = !(A.offer && Object.values(A.offer.asks).some((names) => names.includes("own")));
      const r = box.getBoundingClientRect();
      if (asked && (r.top < 0 || r.bottom > window.innerHeight)) box.scrollIntoView({block: "start"});
    },
    // What a host says of a branch it cannot make (the offline file, a word the model cannot write).
    branchNote(text) {
      const note = $("branch-note");
      note.textContent = text;
      note.hidden = !text;
    },
    // A pair (Compare with…: the payload's `pair`): the second sentence's large view beside the first's, their
    // difference below, both texts with their translations above them, and a note that what follows is the first
    // sentence's; a single translation hides them.
    showPair(payload) {
      const pair = payload.pair, texts = $("pair-texts");
      $("large-view").classList.toggle("anatomy-pair", !!pair);
      document.body.classList.toggle("anatomy-paired", !!pair);  // the host gives the explorer the page's width
      $("heatmap-second").hidden = $("pair-difference").hidden = texts.hidden = !pair;
      const line = (n, text, translation) => Object.assign(document.createElement("span"), {
        textContent: `Sentence ${n}: ${text} \u2192 ${translation || "\u2205 (empty)"}`});
      texts.replaceChildren(...(pair ? [line(1, payload.text, payload.translation),
                                        line(2, pair.text, pair.second.translation)] : []));
      // what is below the large view is the first sentence's alone: said where it starts
      const note = $("pair-note");
      note.hidden = !pair;
      note.textContent = pair ? `The decoding steps and the tabs below are sentence 1's (\u201c${payload.text}\u201d); ` +
                                "the large view above draws both." : "";
    },
    // A link to the shown view (its query from the host), over the page, with Copy.
    shared(query) {
      const box = $("share-url");
      box.querySelector("textarea").value = A.link(query);
      box.hidden = false;
    },
    // The view controls (controls.js), made in the page's #view-controls, offering before a translation what the
    // page says there (anatomy/layout.py explorer_html), and every control of the page bound.
    mount() {
      if (A.view) return A.view;
      const root = $("view-controls");
      A.offer = JSON.parse(root.dataset.offer);
      A.shape = A.offer.shape;
      A.view = createControls(root, {walk: A.offer.walk, weights: A.offer.weights, shape: A.shape,
                                     changed: A.changed});
      const redraw = () => A.changed(A.view.view());
      A.tabs = createTabs($("anatomy-tabs"), {
        opened: A.openedTab,
        openHead: (v) => { A.open(v); A.reveal("heatmap"); },
        dims: (dims) => { A.tabView.dims = dims; redraw(); },
        method: (method) => { A.tabView.method = method; redraw(); },
        contrast: (foil) => { A.foil = foil; A.ask("contrast"); },
      });
      bindKeys(document, A.view, {v: () => screen.on && A.toggleView()});
      document.addEventListener("click", (e) => {
        const target = /** @type {Element} */ (e.target);
        if (target.closest && target.closest("#translate, #examples")) A.asked = true;
        if (target.closest && target.closest("#translation .anatomy-copy")) {
          window.navigator.clipboard?.writeText(/** @type {HTMLTextAreaElement} */ (
            document.querySelector("#translation textarea")).value);
        }
      }, true);
      $("view-toggle").addEventListener("click", () => A.toggleView());
      // the tools (anatomy/layout.py tools_html): presenter mode, a figure's export, the animation's
      const presenter = $("presenter").querySelector("input");
      presenter.addEventListener("change", () => A.presenter(presenter.checked));
      for (const format of /** @type {const} */ (["png", "svg"])) {
        $("export-" + format).addEventListener("click", () => A.exportFigure(
          value("export-figure"), format, checked("export-frame"), checked("export-wide")));
      }
      $("share").addEventListener("click", () => A.ask("share"));
      $("branch-back").addEventListener("click", () => A.ask("own"));
      $("branch-form").addEventListener("submit", (e) => {
        e.preventDefault();
        const word = value("branch-word").trim();
        if (word) A.branch(Math.max(0, A.view.view().step - 1), "", word);
      });
      $("share-url").addEventListener("click", (e) => {
        const target = /** @type {HTMLElement} */ (e.target);
        const act = target.dataset && target.dataset.do, box = $("share-url");
        if (act === "copy") window.navigator.clipboard?.writeText(box.querySelector("textarea").value);
        if (act === "close") box.hidden = true;
      });
      $("animation-make").addEventListener("click", () => {
        A.animation = {layout: value("animation-layout"), size: value("animation-size"),
                       seconds: Number(value("animation-seconds")), suffix: value("animation-format")};
        A.ask("animation");
      });
      A.changed(A.view.view());
      return A.view;
    },
    // The view as the controls show it (with the tabs' own: the positional encoding's dimensions, the attribution
    // method): drawn, and its kind's help shown.
    changed(v) {
      viewer.view(Object.assign({}, v, A.tabView));
      const help = $("kind-help");
      if (help && A.offer) help.innerHTML = A.offer.help[v.kind] || "";
      // the all-heads picker offers the shown kind's heads
      const kind = A.shape.kinds.find((k) => k.name === v.kind);
      const picks = kind && `${kind.layers}:${kind.heads}`;
      if (picks && picks !== A.picks) {
        A.picks = picks;
        A.tabs.pickHeads(kind.layers, kind.heads);
      }
      A.draw();
    },
    // The tabs' own view controls: Positional encoding's dimensions, Why this word's method.
    tabView: {dims: null, method: null},
    // A tab opened: its contents asked for, after what it shows of a model (the untrained twin, head importance,
    // why each piece) when it needs one (anatomy/layout.py Tab.needs_model).
    openedTab(tab) {
      const button = document.querySelector(`#anatomy-tabs [role=tab][data-tab="${tab}"]`);
      A.ask(button && button.hasAttribute("data-model") ? "make" : "tab");
      A.draw();
    },
    // The open tab's tables, texts and figures drawn elsewhere, each kept until replaced.
    tabData(d) {
      if (!d) return;
      const html = {importance_list: "importance-list", compare: "compare-text", card: "model-card",
                    training_card: "training-card"};
      for (const [key, id] of Object.entries(html)) {
        if (key in d) $(id).innerHTML = d[key];
      }
      if (d.stats) A.tabs.stats(d.stats, A.kinds || []);
      if (d.figures) {
        A.figures = Object.assign({}, A.figures, d.figures);
        viewer.set("figures", A.figures);
      }
      A.draw();
    },
    ask(name) {
      A.mount();
      server.ask(name);
    },
    // What an ask is asked with: the view and the page's own choices.
    state() {
      return Object.assign(A.mount().view(), {tab: A.tabs.open(), foil: A.foil || "", animation: A.animation || {},
                                              clicked: A.clickedHead || "", branch: A.branching || null,
                                              candidate: A.candidate || 0});
    },
    // The host's answer to a click on a head or a beam candidate came: the comparison where the visitor looks, and Why this word of
    // the new translation when its tab is open.
    answered() {
      if (A.picked) {
        A.picked = false;
        A.explainIfOpen();
      }
      if (!A.toggled) return;
      A.toggled = false;
      A.echo("ablation");
      A.explainIfOpen();
    },
    // A view to open (a link, a head picked below): the controls set, then drawn.
    open(v) {
      if (!v) return;
      // `asked`: a new value each time, so that the same view opens again; `presenter`: a link's
      const {asked, presenter, ...fields} = v;
      const view = A.mount();
      if (presenter !== undefined) {
        $("presenter").querySelector("input").checked = presenter;
        A.presenter(presenter);
      }
      view.set(fields);
      A.changed(view.view());
    },
    // A tour (anatomy/payload.py tour_payload), opened at its start stop; each stop opens its tab and view.
    tour(data) {
      if (!data || !data.stops) return;
      A.tourData = data;
      A.guide = A.guide || createTour(document, {
        apply: (v) => A.applyView(v),
        target: (name) => $(name),
        link: (k) => A.link((A.tourData.query || "?") + "&tour=" + k) + (screen.on ? "&presenter=1" : ""),
      });
      A.guide.open(data, data.start);
    },
    applyView(v) {
      A.mount();
      A.tabs.select(v.tab);
      A.open({kind: v.kind, layer: v.layer, head: v.head, step: v.step, display: v.display});
    },
    // One drawing for the changes that come in one task (the viewer reads a new translation's own step, layer and
    // head from its payload: their controls' own change events may come later and then change nothing).
    draw() {
      if (!A.drawing) A.drawing = Promise.resolve().then(() => { A.drawing = null; A.scan(); });
    },
    // Presenter mode (a talk must not wait on a server): the page's class and every figure's type and margins
    // scaled (screen.js); the first call starts fitting the figures, whenever one is replaced or the page changes.
    presenter: screen.presenter,
    // Presenter mode's view controls, folded away so that the first screen holds the large view: shown or folded.
    toggleView() {
      document.body.classList.toggle("anatomy-view-open");
    },
    // what the viewer's Plotly.js (once loaded) calls
    scan: screen.scan,
    /**
     * A figure exported (screen.js) as it shows now: one in a closed tab opens that tab, which draws it (and asks
     * the host for what it needs), and is exported once drawn; one that cannot be drawn says why (#export-note).
     * @param {string} id  the figure's box
     * @param {"png" | "svg"} format
     * @param {boolean} frame
     * @param {boolean} wide
     */
    exportFigure(id, format, frame, wide) {
      const box = $(id), note = $("export-note");
      const option = Array.from(/** @type {HTMLSelectElement} */ ($("export-figure")).options)
        .find((o) => o.value === id);
      const name = option ? option.text : id, started = Date.now();
      const say = (text) => { note.textContent = text; note.hidden = !text; };
      clearTimeout(A.exporting);
      const panel = box && /** @type {HTMLElement | null} */ (box.closest("[role=tabpanel]"));
      if (panel && panel.hidden) A.tabs.select(panel.dataset.tab);
      if (!box || box.closest("[hidden]")) {
        say(`${name}: not shown for this translation (or this model), so there is nothing to export.`);
        return;
      }
      const attempt = () => {
        const gd = /** @type {PlotlyDiv | null} */ (box.querySelector(".js-plotly-plot")), drawn = gd && gd._fullLayout && viewer.current(id);
        const empty = drawn && gd.layout.meta && gd.layout.meta.empty;
        if (drawn && !empty && window.Plotly) {
          say("");
          screen.exportFigure(id, format, frame, wide);
          return;
        }
        // a figure on its way says "…" (an explanation, a model's answer); what the host has not sent yet comes
        // within seconds; anything else is why it cannot be drawn
        const waited = Date.now() - started, working = empty && empty.includes("\u2026");
        if (waited > (working ? 120000 : 5000)) {
          say(`${name} cannot be exported: ${empty ? empty.replace(/\n/g, " ") : "it was not drawn"}.`);
          return;
        }
        say(`Drawing ${name} to export it…`);
        A.exporting = setTimeout(attempt, 100);
      };
      attempt();
    },
    // A new translation while Why this word is open: its explanation asked for (only then: a closed tab asks
    // nothing).
    explainIfOpen() {
      if (A.tabs && A.tabs.open() === "why") A.ask("make");
    },
    // A click far below that opened a head in the large view: the view comes into sight, with a flash.
    reveal(id) {
      const el = $(id);
      if (!el) return;
      const r = el.getBoundingClientRect();
      if (r.top < 0 || r.bottom > window.innerHeight) el.scrollIntoView({behavior: "smooth", block: "start"});
      el.classList.remove("anatomy-flash");
      void el.offsetWidth;  // the animation starts again
      el.classList.add("anatomy-flash");
    },
    // Heads switched off or on by a click far below (All heads, Head importance): the comparison beside the view,
    // when out of sight, also at the bottom of the window for a while, with a way up to it.
    echo(id) {
      const el = $(id), r = el && el.getBoundingClientRect();
      if (!el || (r.height && r.bottom > 0 && r.top < window.innerHeight)) return;
      const shown = el.querySelectorAll(".anatomy-ablation > p");
      const translation = /** @type {HTMLTextAreaElement} */ ($("translation").querySelector("textarea")).value;
      if (!shown.length && !translation) return;
      const note = $("anatomy-echo") || document.body.appendChild(
        Object.assign(document.createElement("div"), {id: "anatomy-echo", role: "status"}));
      const parts = shown.length ? Array.from(shown).slice(0, 2).map((p) => p.cloneNode(true))
        : [Object.assign(document.createElement("p"), {textContent: "Every head on again: " + translation})];
      const up = Object.assign(document.createElement("button"), {textContent: "Show beside the view"});
      up.onclick = () => { note.remove(); A.reveal(el.offsetHeight ? id : "translation"); };
      note.replaceChildren(...parts, up);
      clearTimeout(A.echoTimer);
      A.echoTimer = setTimeout(() => note.remove(), 9000);
    },
    // The page's own address with `query`: a link that works behind any proxy or Space, and for a file; a
    // notebook's frame (about:srcdoc) has none.
    link(query) {
      return query && window.location.protocol !== "about:"
        ? window.location.href.replace(/[?#].*$/, "") + query : "";
    },
  };
  A.presenter(false);  // starts watching the figures: the narrow (phone) layout applies outside presenter mode too
  return A;
}

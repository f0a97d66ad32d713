// The guided tour (anatomy/tour.py makes its stops from one translation): a panel beside the page that walks through
// the stops, setting the viewer at each and marking the place to look at. The same panel in the app (ui/static/app.js
// sets its controls) and in the offline page (page.js); ←/→ (what presentation clickers send), Page Up/Down and the
// panel's buttons move between stops, Esc leaves.

/**
 * @typedef {{tab: string, kind: string, layer: number, head: string, step: number, display: string}} StopView
 * @typedef {{key: string, title: string, text: string, view: StopView, target: string, paper: string,
 *   equation: string}} Stop
 * @typedef {{of: Array, stops: Stop[], left_out: string[], start: number}} TourPayload  anatomy/payload.py
 * @typedef {{apply: function(StopView): void, target: function(string): (Element|null),
 *   link: function(number): string}} TourHost  link: the address of stop k, "" for none
 */

export const TARGET_CLASS = "anatomy-tour-target";

/**
 * What a key does while the tour is open: "next", "prev", "close" or null (the page's own).
 * @param {string} key  KeyboardEvent.key
 * @returns {string | null}
 */
export function tourKey(key) {
  return {ArrowRight: "next", PageDown: "next", ArrowLeft: "prev", PageUp: "prev", Escape: "close"}[key] || null;
}

/**
 * A stop's index (from 0) for a stop number from 1, clamped to the tour's stops.
 * @param {TourPayload} tour
 * @param {number} k
 * @returns {number}
 */
export function stopIndex(tour, k) {
  const n = tour.stops.length;
  return Math.min(Math.max(Math.round(Number(k) || 1), 1), Math.max(n, 1)) - 1;
}

/**
 * The tour's panel in `doc`, driven by `host`: open(tour, k) shows stop k (from 1) and sets the viewer there.
 * @param {Document} doc
 * @param {TourHost} host
 */
export function createTour(doc, host) {
  let tour = null, index = 0, panel = null, marked = null;
  // when the visitor last scrolled, touched, clicked or pressed a key: a place the tour keeps is theirs after that
  let moved = 0;
  const onInput = () => { moved = Date.now(); };
  const INPUTS = ["wheel", "touchstart", "pointerdown", "keydown"];

  function element(tag, className, text) {
    const el = doc.createElement(tag);
    if (className) el.className = className;
    if (text !== undefined) el.textContent = text;
    return el;
  }

  function button(label, go, disabled) {
    const b = element("button", "anatomy-tour-" + go, label);
    b.type = "button";
    b.disabled = disabled;
    b.addEventListener("click", () => act(go));
    return b;
  }

  // The stop's place marked and brought into sight; a place a tab that just opened has not drawn yet is looked for
  // again for a few seconds (until another stop is shown).
  function mark(name, tries = 30) {
    if (marked) marked.classList.remove(TARGET_CLASS);
    const shown = index;
    marked = name ? host.target(name) : null;
    if (!marked) {
      if (name && tries > 0) setTimeout(() => { if (tour && index === shown) mark(name, tries - 1); }, 100);
      return;
    }
    marked.classList.add(TARGET_CLASS);
    place(shown, tries);
  }

  // The marked place brought to the window's top when out of sight (or at the top), and kept there for a few seconds
  // while the page settles, until the visitor scrolls, touches or clicks: a page too short below it (a tab's figure
  // not drawn yet: the architecture's box in the app) stops the scroll short, and the view drawn for the stop can
  // shrink what is above it (a phone's step panels). A place already in sight lower down stays where it is.
  function place(shown, tries, since = 0) {
    const r = marked.getBoundingClientRect(), view = doc.defaultView;
    if (!since) {
      if (r.top > 1 && r.top <= 0.7 * view.innerHeight) return;
      since = Date.now();
    } else if (moved > since) return;
    if (Math.abs(r.top) > 1) marked.scrollIntoView({block: "start"});
    if (tries > 0) setTimeout(() => { if (tour && index === shown && marked) place(shown, tries - 1, since); }, 100);
  }

  function show() {
    const stop = tour.stops[index], n = tour.stops.length;
    if (!panel) {
      panel = element("aside");
      panel.id = "anatomy-tour";
      panel.setAttribute("role", "dialog");
      panel.setAttribute("aria-label", "Tour of this translation");
      doc.body.appendChild(panel);
    }
    if (!doc.body.classList.contains("anatomy-touring")) {
      doc.body.classList.add("anatomy-touring");
      doc.defaultView.dispatchEvent(new Event("resize")); // the page is narrower: its figures fit again
    }
    const heading = element("h2", "anatomy-tour-title", stop.title);
    heading.id = "anatomy-tour-title";
    const parts = [element("p", "anatomy-tour-count", `Stop ${index + 1} of ${n}` +
                                                     (stop.paper ? ` · ${stop.paper}` : "")),
                   heading, element("p", "anatomy-tour-text", stop.text)];
    if (stop.equation) parts.push(element("pre", "anatomy-tour-equation", stop.equation));
    if (index === n - 1 && tour.left_out.length) {
      const notes = element("ul", "anatomy-tour-left");
      tour.left_out.forEach((note) => notes.appendChild(element("li", "", note)));
      parts.push(element("p", "anatomy-tour-note", "Not in this tour:"), notes);
    }
    const buttons = element("div", "anatomy-tour-buttons");
    buttons.append(button("← Back", "prev", index === 0), button(index === n - 1 ? "Done" : "Next →",
                                                                    index === n - 1 ? "close" : "next", false),
                   button("Close (Esc)", "close", false));
    parts.push(buttons);
    const address = host.link(index + 1); // "" where the page has no address of its own to link to
    if (address) {
      const link = element("a", "anatomy-tour-link", "Link to this stop");
      link.href = address;
      parts.push(link);
    }
    panel.replaceChildren(...parts);
    panel.dataset.stop = String(index + 1);
    panel.dataset.key = stop.key;
    host.apply(stop.view);
    mark(stop.target);
  }

  function act(go) {
    if (!tour) return;
    if (go === "close") {
      close();
      return;
    }
    const next = index + (go === "next" ? 1 : -1);
    if (next < 0 || next >= tour.stops.length) return;
    index = next;
    show();
  }

  function onKey(event) {
    const go = tourKey(event.key), t = event.target;
    if (!go || event.ctrlKey || event.metaKey || event.altKey) return;
    // typing stays typing
    if (t && t.matches && t.matches("textarea, [contenteditable], input[type=text], input:not([type])")) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    act(go);
  }

  function close() {
    if (!tour) return;
    tour = null;
    mark(null);
    if (panel) panel.remove();
    panel = null;
    doc.body.classList.remove("anatomy-touring");
    doc.defaultView.dispatchEvent(new Event("resize"));
    doc.defaultView.removeEventListener("keydown", onKey, true);
    for (const type of INPUTS) doc.defaultView.removeEventListener(type, onInput, true);
  }

  return {
    /**
     * Show stop k (from 1, clamped) of a tour.
     * @param {TourPayload} next
     * @param {number} k
     */
    open(next, k) {
      if (!next || !next.stops || !next.stops.length) return;
      if (!tour) {
        doc.defaultView.addEventListener("keydown", onKey, true);
        for (const type of INPUTS) doc.defaultView.addEventListener(type, onInput, true);
      }
      tour = next;
      index = stopIndex(next, k);
      show();
    },
    close,
    /** @returns {boolean} */
    isOpen: () => tour !== null,
    /** @returns {number} the stop shown, from 1 (0 when closed) */
    stop: () => (tour ? index + 1 : 0),
  };
}

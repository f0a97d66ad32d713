// Every Plotly figure of a page fitted to where it is drawn, for both hosts (the app's ui/static/app.js, the offline
// page's page.js): presenter mode's large type, phones and narrow boxes, the large view filling the first screen,
// titles wrapped and tick labels fitted (fit.js), re-fitted whenever a figure is replaced, the window resized or the
// page's layout changes (a tab, the tour's panel). Besides: the line view's hover, pin and tap, a click on a head
// and a figure's export. Plotly.react is wrapped so that a new figure is drawn fitted, not drawn twice.

import {frameOf, labelsFitted, pathKeys, put, ticksOf, titleFitted, titleLines} from "./fit.js";

/** The name viz/attention.py and figures.js give the large view's orange step frame (left out of an export). */
export const STEP_FRAME = "step-frame";
const NARROW = 560; // px: a figure narrower than this (a phone) gets small margins and short labels
const TOOLBAR = 32; // px: the height of Plotly's toolbar, which a title goes under where it has no room beside it
const PHONE = 700; // px: a window narrower than this is a phone's (the pages' CSS stacks their columns below it)

/**
 * @typedef {Object} Base  a figure's own sizes, from its layout before any mode changed it
 * @property {number} font
 * @property {number} title
 * @property {number} height
 * @property {number} l
 * @property {number} r
 * @property {number} t
 * @property {number} b
 * @property {number[]} notes  each annotation's font size
 * @property {(number | null)[]} text  each trace's text size
 * @property {(Object | null)[]} colorbars  each trace's colorbar
 * @property {boolean} bar  a colorbar beside the plot (a trace's or a shared colour axis's), which takes its width
 * @property {({chars: number, share: number} | null)[]} cells  each heatmap's cell text (cellText)
 * @property {(string | null)[]} templates  each trace's texttemplate
 * @property {number | undefined} xangle
 * @property {[string, number][]} axes  sizes the figure sets on its own axes, by Plotly path
 * @property {import("./fit.js").Ticks | null} x
 * @property {import("./fit.js").Ticks | null} y
 * @property {string | undefined} ytitle
 * @property {*} titleText
 * @property {number | null} fit  the plot width at which a diagram's text fits its boxes at the figure's own sizes,
 *   its y axis in pixels at those sizes (layout.meta.fit, viz/architecture.py); null for other figures
 */

/**
 * @typedef {Object} Mode  where a figure is drawn
 * @property {string} key  the mode as one value: a figure is fitted again when it changes
 * @property {boolean} narrow  a phone's width
 * @property {number} room  the height a figure may take (the window's)
 * @property {boolean} large  the large view
 * @property {number} fold  the large view's height to the bottom of the first screen (Infinity further down)
 * @property {number} width
 * @property {number} [bar]  the width of Plotly's toolbar (none before the figure's first drawing)
 */

/**
 * @typedef {PlotlyDiv & FigureState} Figured  a figure div with what this module keeps on it
 * @typedef {Object} FigureState
 * @property {Object} [anatomyLayout]  the layout its base was read from (a new one: read again)
 * @property {Base} [anatomyBase]
 * @property {string | null} [anatomyMode]  the key of the mode it was last fitted to
 * @property {Mode} [anatomyModeOf]  its mode when last measured
 * @property {boolean} [anatomyHooked]  its Plotly events are listened to
 * @property {string | null} [anatomyPinned]  the line view's pinned piece
 * @property {number} [anatomyTouched]  when it was last tapped (ms)
 * @property {string} [anatomyKept]  the line view's kept piece
 * @property {Object} [anatomyKeptOf]  the first line trace it was kept on
 * @property {0 | 1 | null} [anatomyKeptEnd]  the kept piece's column: 0 queries, 1 keys
 * @property {number | null} [anatomyKeptRow]  the kept piece's row (its y)
 * @property {Promise<*>} [anatomyRestyle]  the last restyle of the kept lines
 */

/**
 * A heatmap's cell text: its longest line in characters and the share of the plot's width one cell takes (the text
 * grows in presenter mode only as far as its cells hold it).
 * @param {Object} t  a trace
 * @param {Object} layout
 * @returns {{chars: number, share: number} | null}
 */
function cellText(t, layout) {
  if (t.type !== "heatmap" || !t.texttemplate || !Array.isArray(t.z) || !Array.isArray(t.z[0])) return null;
  const domain = (layout["xaxis" + (t.xaxis || "x").slice(1)] || {}).domain || [0, 1];
  const lines = (Array.isArray(t.text) ? t.text.flat() : []).flatMap((s) => String(s).split("<br>"));
  return {chars: Math.max(4, ...lines.map((s) => s.replace(/<[^>]*>/g, "").length)),
          share: (domain[1] - domain[0]) / t.z[0].length};
}

/**
 * A figure's base values, from its own layout (before any mode changed it), else Plotly's defaults (the template's
 * font; titles 1.4 times the font; margins 80/80/100/80).
 * @param {Object[]} data
 * @param {Object} layout
 * @returns {Base}
 */
export function base(data, layout) {
  const {font, l, r, t, b} = frameOf(layout);
  return {font, title: layout.title?.font?.size ?? Math.round(font * 1.4), height: layout.height ?? 450, l, r, t, b,
          notes: (layout.annotations || []).map((a) => a.font?.size ?? font),
          text: data.map((d) => d.textfont?.size || null), colorbars: data.map((d) => d.colorbar || null),
          bar: data.some((d) => d.colorbar) || Object.keys(layout).some((key) => /^coloraxis\d*$/.test(key)),
          cells: data.map((d) => cellText(d, layout)), templates: data.map((d) => d.texttemplate ?? null),
          xangle: layout.xaxis?.tickangle,
          // sizes a figure sets on its own axes (small multiples), else the layout's font's
          axes: /** @type {[string, number][]} */ (Object.keys(layout).filter((key) => /^[xy]axis\d*$/.test(key))
            .flatMap((key) => [[key + ".tickfont.size", layout[key].tickfont?.size],
                               [key + ".title.font.size", layout[key].title?.font?.size]])
            .filter(([, size]) => size)),
          y: ticksOf(layout.yaxis), x: ticksOf(layout.xaxis),
          ytitle: layout.yaxis ? layout.yaxis.title?.text ?? "" : undefined, titleText: layout.title?.text,
          fit: layout.meta?.fit?.width || null};
}

/**
 * The layout changes for a mode: presenter (k = scale) and/or narrow, from the figure's own base values.
 * @param {Base} b
 * @param {number} k
 * @param {number} height
 * @param {boolean} narrow
 * @param {number} width  the figure's (for its title and x labels)
 * @param {number} [bar]  the width of Plotly's toolbar at the figure's top right (the title stays clear of it)
 * @param {number} [notes]  the annotations' scale (k, but a diagram's as its boxes hold: boxed)
 * @returns {Object<string, *>}  Plotly.relayout's paths
 */
function sized(b, k, height, narrow, width, bar = 0, notes = k) {
  const u = {"font.size": b.font * k, "title.font.size": b.title * k, height,
             "margin.l": b.l * k, "margin.r": b.r * k, "margin.t": b.t * k, "margin.b": b.b * k};
  b.notes.forEach((size, i) => { u["annotations[" + i + "].font.size"] = size * notes; });
  b.axes.forEach(([path, size]) => { u[path] = size * k; });
  // large type or narrow: upright labels stand one per column, where slanted ones run into their neighbours
  if (b.xangle !== undefined) u["xaxis.tickangle"] = k > 1 || narrow ? -90 : b.xangle;
  if (narrow) {
    Object.assign(u, {"font.size": 10, "margin.l": Math.min(b.l, 84), "margin.r": Math.min(b.r, 10),
                      "margin.b": Math.min(b.b, 90)});
  }
  // a title wider than its figure takes more lines (broken at its ' · '), each widening the top margin; it stays
  // clear of Plotly's toolbar where that costs no height, and on a phone (whose toolbar stays after a tap) goes under
  // it where beside it would take more lines; elsewhere the toolbar shows only under the pointer, over the title
  if (typeof b.titleText === "string" && width) {
    const px = 0.97 * width - 10, size = u["title.font.size"];
    const beside = titleLines(b.titleText, px - bar, size), under = titleLines(b.titleText, px, size);
    const longer = beside.split("<br>").length > under.split("<br>").length, low = longer && narrow;
    const text = longer ? under : beside;
    const lines = text.split("<br>").length, added = lines - b.titleText.split("<br>").length;
    // (Plotly anchors a title of several lines by their middle: the top line would rise into the toolbar)
    Object.assign(u, {"title.text": text, "title.y": low ? 1 : "auto", "title.yanchor": low ? "top" : "auto",
                      "title.pad.t": low ? Math.round(TOOLBAR + 1.3 * size * (lines - 1)) : 0});
    u["margin.t"] += Math.round(1.25 * size * added) + (low ? TOOLBAR : 0);
  }
  // narrow: no room beside the labels for the y title (labels are cut whole: no half HTML entity); else as many
  // lines of it as its axis's height takes (a second line widens the margin by one)
  if (b.ytitle !== undefined) {
    const text = narrow ? "" : titleFitted(b.ytitle, height - u["margin.t"] - u["margin.b"], u["font.size"]);
    u["yaxis.title.text"] = text;
    if (text.includes("<br>") && !b.ytitle.includes("<br>")) u["margin.l"] += Math.round(1.2 * u["font.size"]);
  }
  const labels = () => labelsFitted({x: b.x, y: b.y, angle: u["xaxis.tickangle"] ?? b.xangle,
                                     colorbar: b.colorbars.some(Boolean)},
    {height, width, font: u["font.size"], least: 10 * (narrow ? 1 : k), narrow,
     margin: {l: u["margin.l"], r: u["margin.r"], t: u["margin.t"], b: u["margin.b"]}});
  let fitted = labels();
  // labels left out (every second, third… one) are said under the title: a reader would take the gaps for pieces
  // the model dropped; the line widens the top margin, which may leave out more
  if (thinned(b, fitted) && typeof b.titleText === "string") {
    // as many lines as the figure's width takes (a phone's: two or three)
    const px = width ? 0.97 * width - 10 : Infinity, size = u["font.size"];
    u["margin.t"] += Math.round(1.25 * size) * wrapped(thinned(b, fitted), px, size).length;
    fitted = labels();
    u["title.text"] = (u["title.text"] ?? b.titleText) + wrapped(thinned(b, fitted), px, size)
      .map((line) => `<br><span style="font-size:${size}px">${line}</span>`).join("");
  }
  return Object.assign(u, fitted);
}

const ORDINALS = ["", "", "2nd", "3rd"];

/**
 * Plain text in lines of at most `px` pixels of type `size` (words kept whole; ~0.55 em a character).
 * @param {string} text
 * @param {number} px
 * @param {number} size
 * @returns {string[]}
 */
export function wrapped(text, px, size) {
  const per = Math.max(12, Math.floor(px / (0.55 * size)));
  /** @type {string[]} */
  const lines = [];
  text.split(" ").forEach((word) => {
    const last = lines.length ? lines[lines.length - 1] + " " + word : "";
    if (last && last.length <= per) lines[lines.length - 1] = last;
    else lines.push(word);
  });
  return lines;
}

/**
 * What a fit of a figure's labels (fit.js labelsFitted) left out, as its title says it ("every 2nd column labelled,
 * hover for the others"), or "" when every label is shown.
 * @param {Base} b
 * @param {Object<string, *>} fitted
 * @returns {string}
 */
function thinned(b, fitted) {
  const every = (all, kept) => {
    if (!all || !kept || kept.length >= all.vals.length) return 0;
    return kept.length > 1 ? all.vals.indexOf(kept[1]) : all.vals.length;
  };
  const parts = [["column", every(b.x, fitted["xaxis.tickvals"])], ["row", every(b.y, fitted["yaxis.tickvals"])]]
    .filter(([, k]) => k > 1).map(([axis, k]) => `every ${ORDINALS[k] || k + "th"} ${axis}`);
  return parts.length ? `${parts.join(" and ")} labelled, hover for the others` : "";
}

const LEAST_TEXT = 7; // px: cell text shrinks to fit its cells (a phone's) down to this, else is left out

/**
 * A trace's text size: k times its own, but no larger than its cells hold (0.62 em a character): numbers never
 * spill over their neighbours' cells.
 * @param {number} size
 * @param {number} k
 * @param {{chars: number, share: number} | null} cells
 * @param {number} plotWidth
 */
function textSize(size, k, cells, plotWidth) {
  if (!cells) return size * k;
  return Math.min(size * k, Math.floor(plotWidth * cells.share / (0.62 * cells.chars)));
}

const LEAST_NOTES = 0.8; // a diagram's type shrinks to fit a narrow figure down to this share of its own

/**
 * A diagram's type scale and size (b.fit): its text k times its own, but no larger than its boxes hold at this
 * width, down to LEAST_NOTES; its height scaled with its type (its y axis is in pixels); narrower than it holds at
 * that least type, it keeps that width (minWidth) and its box scrolls sideways.
 * @param {Base} b
 * @param {number} k
 * @param {number} width  the figure's
 * @returns {{notes: number, height: number, minWidth: number}}
 */
export function boxed(b, k, width) {
  const margins = b.l + b.r;
  const notes = Math.max(LEAST_NOTES, Math.min(k, (width - margins) / b.fit));
  const height = Math.round((b.height - b.t - b.b) * Math.max(1, notes) + (b.t + b.b) * k);
  return {notes, height, minWidth: (width - margins) / b.fit < LEAST_NOTES ? Math.ceil(LEAST_NOTES * b.fit + margins)
    : 0};
}

/**
 * A figure's layout update (paths as Plotly.relayout takes them), trace text sizes and colorbars for a mode.
 * @param {Base} b
 * @param {Mode} mode
 * @param {boolean} on  presenter mode
 * @param {number} scale  presenter mode's type, times the figure's own
 * @returns {{layout: Object<string, *>, text: (number | null)[], templates: (string | null)[],
 *   colorbars: (Object | null)[], minWidth: number}}  templates: each trace's texttemplate ("": its cells cannot
 *   hold their text, left out; their hover still says it); minWidth: the width the figure keeps (0: none)
 */
export function update(b, mode, on, scale) {
  const k = on && !mode.narrow ? scale : 1;
  // presenter: the large view fills the first screen below its top (the window's height further down), others
  // at most the window's height but for those with text in their cells (a table, maps of numbers), whose rows
  // grow with their text; width: null drops the width fixed at first draw, so the figure fills its container
  // (the large view never taller than the window: a phone's is far below the fold)
  let height = !on ? Math.min(b.height, Math.round(mode.fold), mode.large ? mode.room : Infinity)
    : mode.large ? Math.round(Math.min(mode.fold, mode.room))
    : Math.min(Math.round(b.height * k), b.text.some(Boolean) ? Infinity : mode.room);
  // the fold never makes rows too low for their labels: a long sentence's view grows, up to the window
  if (!on && b.y) {
    height = Math.max(height, Math.min(b.height, mode.room, Math.round(b.y.vals.length * 11.5 + b.t + b.b)));
  }
  // narrow: a colorbar without its title and with every other tick leaves the plot its width
  const colorbars = b.colorbars.map((c) => c && (mode.narrow ? Object.assign({}, c, {title: {text: ""}, thickness: 8},
    c.tickvals ? {tickvals: c.tickvals.filter((_, i) => i % 2 === 0)} : {}) : c));
  // a diagram (the architecture) grows with its type, whatever the window's height: its text stays in its boxes
  const diagram = b.fit ? boxed(b, k, mode.width) : {notes: k, height, minWidth: 0};
  const plot = mode.width - (b.l + b.r) * k - (b.bar ? 80 : 0);
  const sizes = b.text.map((s, i) => s && textSize(s, k, b.cells[i], plot));
  return {layout: Object.assign({autosize: true, width: null},
                                sized(b, k, diagram.height, mode.narrow, Math.max(mode.width, diagram.minWidth),
                                      mode.bar || 0, diagram.notes)),
          text: sizes.map((s) => s && Math.max(s, LEAST_TEXT)),
          templates: b.templates.map((t, i) => t && (!b.cells[i] || sizes[i] >= LEAST_TEXT ? t : "")),
          colorbars, minWidth: diagram.minWidth};
}

/**
 * The head a point of a figure names: a thumbnail's trace meta or a map cell's customdata "head=KIND:LAYER.HEAD"
 * (viz/attention.py, viz/importance.py, figures.js), as "KIND:LAYER.HEAD"; else null.
 * @param {Object | null} point  a Plotly event's point
 * @returns {string | null}
 */
export function headOf(point) {
  const named = [point && point.data && point.data.meta, point && point.customdata]
    .find((v) => typeof v === "string" && v.startsWith("head="));
  return named ? named.slice(5) : null;
}

/**
 * The step and rank of a clicked next piece (figures.js: one step's bars, `meta` "branch=T", a bar per rank; the
 * predictions' table, `meta` "branch", a cell per step and rank), else null: a branch continues from it.
 * @param {Object} point
 * @returns {{step: number, rank: number} | null}
 */
export function branchOf(point) {
  const meta = point && point.data && point.data.meta;
  if (typeof meta !== "string" || !/^branch(=\d+)?$/.test(meta)) return null;
  const at = point.pointIndex;
  if (meta === "branch") return Array.isArray(at) ? {step: at[0], rank: at[1]} : null;
  return Number.isInteger(at) ? {step: Number(meta.slice(7)), rank: at} : null;
}

/**
 * The line view's piece a point is: "queries:ROW" or "keys:ROW", else null.
 * @param {Object} point
 * @returns {string | null}
 */
export function pieceKey(point) {
  const meta = point.data && point.data.meta;
  return meta === "queries" || meta === "keys" ? meta + ":" + point.pointIndex : null;
}

/**
 * The line view's lines (viz/lines.py, figures.js: segments [query, key, gap] with y = -row) kept to those that
 * start (end 0, a query) or end (end 1, a key) at `row`; every line for end null.
 * @param {{x: Array, y: Array}[]} full  each line trace's points
 * @param {0 | 1 | null} end
 * @param {number | null} row
 * @returns {{x: Array[], y: Array[]}}  for Plotly.restyle
 */
export function linesThrough(full, end, row) {
  const xs = [], ys = [];
  full.forEach(({x, y}) => {
    if (end === null) { xs.push(x); ys.push(y); return; }
    const kx = [], ky = [];
    for (let s = 0; s + 1 < y.length; s += 3) {
      if (y[s + end] === row) { kx.push(x[s], x[s + 1], null); ky.push(y[s], y[s + 1], null); }
    }
    xs.push(kx); ys.push(ky);
  });
  return {x: xs, y: ys};
}

/**
 * @typedef {Object} ScreenOptions  what differs between hosts
 * @property {string} figures  a selector of the page's figure divs (not the offscreen copies an export draws)
 * @property {function(HTMLElement): HTMLElement} [room]  the element whose width a figure fills (its parent)
 * @property {function(): void} [refresh]  draws what changed, before each fit (the app's viewer)
 * @property {function(HTMLElement): boolean} [stale]  a figure the viewer draws again soon (below the fold, after the
 *   window's): fitted after that drawing, not before it as well
 * @property {function(string): boolean} [head]  a click on a head ("KIND:LAYER.HEAD"): true when it did something
 * @property {function(number, number): boolean} [branch]  a click on a step's next piece (step and rank, from 0):
 *   true when it did something
 */

/**
 * The fitting of a document's figures. Nothing happens until `presenter` is first called (the page's start):
 * then every figure is fitted, and again on any change of the page.
 * @param {Document} document
 * @param {ScreenOptions} options
 */
export function createScreen(document, options) {
  const window = document.defaultView;
  const room = options.room || ((gd) => gd.parentElement);
  let observer = null, frame = 0;

  // in the next frame, once for every change in this task: a fit measures the page, which would lay it out again
  // after each figure
  const soon = () => {
    if (!frame) frame = window.requestAnimationFrame(() => { frame = 0; S.scan(); });
  };
  // a figure's box that changes width with no class, style or window change (a stylesheet, a scrollbar, a
  // transition beside it, a font arriving) is fitted again too: its text was sized for the old width
  const resized = window.ResizeObserver ? new window.ResizeObserver(soon) : null;

  const S = {
    scale: 1.5,
    on: false,
    /**
     * Presenter mode (large type) on or off: toggles the page's class `anatomy-presenter` and fits every figure;
     * the first call starts watching the page.
     * @param {boolean} on
     */
    presenter(on) {
      S.on = !!on;
      document.body.classList.toggle("anatomy-presenter", S.on);
      if (!observer) {
        // new figures, and tabs or panels coming into view (a class or style change), get the current mode, once
        // per frame; Plotly's drawing changes its own figures' insides by the hundred, which never needs a fit
        observer = new window.MutationObserver((records) => {
          if (records.some((r) => !/** @type {Element} */ (r.target).closest(".js-plotly-plot"))) soon();
        });
        observer.observe(document.body, {childList: true, subtree: true, attributes: true,
                                         attributeFilter: ["class", "style"]});
        window.addEventListener("resize", () => S.scan());
      }
      S.scan();
      window.dispatchEvent(new window.Event("resize"));
    },
    /**
     * Where a figure is drawn: presenter mode or not, narrow (a phone) or not, and the height it may take.
     * @param {Figured} gd
     * @returns {Mode}
     */
    modeOf(gd) {
      // presenter mode keeps its large type in a narrow column (beside the tour's panel): only a phone is narrow
      const width = room(gd).clientWidth, narrow = width < NARROW && (!S.on || window.innerWidth < PHONE);
      const space = Math.max(360, window.innerHeight - 24);
      const large = !!gd.closest("#heatmap, #heatmap-second"), top = gd.getBoundingClientRect().top + window.scrollY;
      // the large view beside the settings ends above the fold (the window's first screen)
      const fold = large && top < 0.6 * window.innerHeight ? Math.max(360, window.innerHeight - top - 16) : Infinity;
      const bar = /** @type {HTMLElement | null} */ (gd.querySelector(".modebar"))?.offsetWidth || 0;
      gd.anatomyModeOf = {key: [S.on, width, space, fold, bar].join(), narrow, room: space, large, fold, width, bar};
      return gd.anatomyModeOf;
    },
    /**
     * A drawn figure fitted to its mode, when that changed since its last fit.
     * @param {Figured} gd
     */
    fit(gd) {
      const Plotly = window.Plotly;
      if (!gd._fullLayout || !Plotly || !gd.offsetParent) return; // hidden (another tab): when shown
      if (gd.layout !== gd.anatomyLayout) {
        gd.anatomyLayout = gd.layout; gd.anatomyBase = base(gd.data, gd.layout); gd.anatomyMode = null;
      }
      const mode = S.modeOf(gd);
      if (gd.anatomyMode === mode.key) return;
      gd.anatomyMode = mode.key;
      const {layout, text, templates, colorbars, minWidth} = update(gd.anatomyBase, mode, S.on, S.scale);
      S.keepWidth(gd, minWidth);
      const bars = colorbars.flatMap((c, i) =>
        c && gd.data[i] && JSON.stringify(gd.data[i].colorbar) !== JSON.stringify(c) ? [i] : []);
      // a box that changed width with nothing else (the tour's panel beside the page) needs the relayout too: its
      // autosize fills the box again
      const fills = Math.abs(parseFloat(window.getComputedStyle(gd).width) - gd._fullLayout.width) <= 1;
      if (fills && S.holds(gd, layout) && !bars.length) return;
      Plotly.relayout(gd, layout).then(() => {
        if (bars.length) return Plotly.restyle(gd, {colorbar: bars.map((i) => colorbars[i])}, bars);
      }).then(() => {
        const cells = templates.flatMap((t, i) => t !== null && gd.anatomyBase.cells[i] ? [i] : []);
        if (cells.length) return Plotly.restyle(gd, {texttemplate: cells.map((i) => templates[i])}, cells);
      }).then(() => {
        if (text.some((s) => s)) return Plotly.restyle(gd, {"textfont.size": text});
      }).catch(() => {});
    },
    /**
     * A figure kept at least `px` wide (0: none), its box scrolling sideways: a diagram whose text would not fit.
     * @param {HTMLElement} gd
     * @param {number} px
     */
    keepWidth(gd, px) {
      const want = px ? px + "px" : "";
      if (gd.style.minWidth !== want) gd.style.minWidth = want;
      gd.parentElement.classList.toggle("anatomy-wide", !!px);
    },
    /**
     * A new figure of the page, fitted to its mode before its first drawing (else it would be drawn twice).
     * @param {Figured} gd
     * @param {Object[]} data
     * @param {Object} layout
     */
    prefit(gd, data, layout) {
      if (!gd.matches(options.figures) || !gd.parentElement) return;
      // the figure's last mode: measuring its place now would lay the page out between two figures' drawings (the
      // fit after drawing measures it, and fits again where it changed); a figure never measured is measured, when
      // in view. The large view is measured again: it is drawn first, and what shows above it (a branch, notices)
      // moves its fold, which would draw it a second time
      const large = gd.offsetParent && gd.closest("#heatmap, #heatmap-second");
      const mode = (large && S.modeOf(gd)) || gd.anatomyModeOf || (gd.offsetParent && S.modeOf(gd));
      if (!mode) return;
      // drawn again, fitted already, so their base values are the first drawing's: the traces (the viewer hands them
      // over when equal), or the whole layout (a figure the server drew, handed over as the same object, which the
      // fits changed in place: read again, the architecture's type grew with each drawing out of its boxes)
      const again = Array.isArray(gd.data) && data.length === gd.data.length && data.every((t, i) => t === gd.data[i]);
      const b = layout === gd.anatomyLayout && gd.anatomyBase ? gd.anatomyBase : base(data, layout);
      if (again && gd.anatomyBase && b !== gd.anatomyBase) {
        const {text: t, colorbars: c, templates: own, cells} = gd.anatomyBase;
        Object.assign(b, {text: t, colorbars: c, templates: own, cells});
      }
      const {layout: u, text, templates, colorbars, minWidth} = update(b, mode, S.on, S.scale);
      S.keepWidth(gd, minWidth);
      Object.entries(u).forEach(([path, v]) => { if (v !== null) put(layout, path, v); });
      if (!again) {
        text.forEach((size, i) => { if (size) data[i].textfont = Object.assign({}, data[i].textfont, {size}); });
        templates.forEach((t, i) => { if (t !== null && b.cells[i]) data[i].texttemplate = t; });
        colorbars.forEach((c, i) => { if (c) data[i].colorbar = c; });
      }
      Object.assign(gd, {anatomyLayout: layout, anatomyBase: b, anatomyMode: mode.key});
    },
    /**
     * Once plotly.js is loaded: every new figure is fitted before its first drawing (Plotly.react), and a resize
     * (Gradio calls Plots.resize after each react, which draws it all again 100 ms later) is skipped when the
     * figure already fills its box.
     */
    wrap() {
      const Plotly = window.Plotly;
      if (!Plotly || Plotly.anatomyWrapped) return;
      Plotly.anatomyWrapped = true;
      const react = Plotly.react, resize = Plotly.Plots.resize;
      Plotly.react = function (gd, data, layout) {
        if (gd instanceof window.Element && Array.isArray(data) && layout) S.prefit(gd, data, layout);
        return react.apply(this, arguments);
      };
      Plotly.Plots.resize = function (gd) {
        const f = gd instanceof window.Element && gd._fullLayout;
        if (f && gd.offsetParent && !gd.layout.width) {
          const box = window.getComputedStyle(gd);
          if (Math.abs(parseFloat(box.width) - f.width) <= 1 && Math.abs(parseFloat(box.height) - f.height) <= 1) {
            return Promise.resolve(gd);
          }
        }
        return resize.apply(this, arguments);
      };
    },
    /**
     * Whether a figure is drawn with every value of a layout update.
     * @param {Figured} gd
     * @param {Object<string, *>} u
     */
    holds(gd, u) {
      return Object.entries(u).every(([path, want]) => {
        if (path === "width") return want === null && gd.layout.width == null;
        if (path === "autosize") return gd.layout.autosize === want;
        const have = pathKeys(path).reduce((o, key) => o && o[key], gd._fullLayout);
        return Array.isArray(want) ? Array.isArray(have) && want.length === have.length
          && want.every((v, i) => v === have[i]) : have === want;
      });
    },
    /** Draws what changed (the host's refresh), hooks new figures and fits every figure of the page. */
    scan() {
      S.wrap();
      if (options.refresh) options.refresh();
      /** @type {NodeListOf<Figured>} */ (document.querySelectorAll(options.figures)).forEach((gd) => {
        if (!gd.classList.contains("js-plotly-plot")) return; // not drawn yet
        if (!gd.anatomyHooked && gd.on) S.hook(gd);
        if (!(options.stale && options.stale(gd))) S.fit(gd);
      });
    },
    /**
     * A drawn figure's events: fitted again after each drawing; the line view (viz/lines.py) keeps a pointed
     * piece's lines, and a click or tap pins that, another click on it (or anywhere else) lets go (a tap also makes
     * Plotly report a hover and a click: the tap's own handler answers it); a click on a head goes to the host.
     * @param {Figured} gd
     */
    hook(gd) {
      gd.anatomyHooked = true;
      if (resized) resized.observe(room(gd));
      gd.on("plotly_afterplot", soon);
      const free = () => !gd.anatomyPinned && Date.now() - (gd.anatomyTouched || 0) > 800;
      gd.on("plotly_hover", (e) => { if (free()) S.keep(gd, e.points[0]); });
      gd.on("plotly_unhover", () => { if (free()) S.keep(gd, null); });
      gd.addEventListener("mouseleave", () => { if (free()) S.keep(gd, null); });
      gd.on("plotly_click", (e) => {
        const named = headOf(e.points[0]), next = branchOf(e.points[0]);
        if (named && options.head && options.head(named)) return;
        if (next && options.branch && options.branch(next.step, next.rank)) return;
        if (Date.now() - (gd.anatomyTouched || 0) > 800) S.pin(gd, e.points[0]);
      });
      // a tap: Plotly may not report it as a click, so the nearest piece is found here
      gd.addEventListener("touchend", (e) => {
        const t = e.changedTouches[0], p = t && S.nearestPiece(gd, t.clientX, t.clientY);
        if (p) { gd.anatomyTouched = Date.now(); S.pin(gd, p); }
      }, {passive: true});
    },
    /**
     * Pins a piece's lines, or lets go when it is the pinned one.
     * @param {Figured} gd
     * @param {Object | null} point
     */
    pin(gd, point) {
      const key = point && pieceKey(point);
      gd.anatomyPinned = key && key !== gd.anatomyPinned ? key : null;
      S.keep(gd, gd.anatomyPinned ? point : null);
    },
    /**
     * The line view's query or key piece whose marker is nearest to a point of the screen (within 40 px).
     * @param {Figured} gd
     * @param {number} x
     * @param {number} y
     */
    nearestPiece(gd, x, y) {
      let best = null, dist = 40;
      (gd._fullData || []).forEach((t) => {
        if (t.meta !== "queries" && t.meta !== "keys") return;
        const layer = gd.querySelector(".scatterlayer .trace" + t.uid);
        (layer ? Array.from(layer.querySelectorAll(".point")) : []).forEach((el, i) => {
          const r = el.getBoundingClientRect(), d = Math.hypot(r.x + r.width / 2 - x, r.y + r.height / 2 - y);
          if (d < dist) { dist = d; best = {data: {meta: t.meta}, pointIndex: i}; }
        });
      });
      return best;
    },
    /**
     * Only the lines that start (queries) or end (keys) at the point's piece; every line again for null; the kept
     * piece in the figure's `data-kept`.
     * @param {Figured} gd
     * @param {Object | null} point
     */
    keep(gd, point) {
      const key = point && pieceKey(point);
      if (point && !key) return;
      // each line trace keeps its full points on itself (a restyle keeps the trace object; a new figure brings
      // new ones)
      const idx = gd.data.map((t, i) => t.meta === "lines" ? i : -1).filter((i) => i >= 0);
      if (!idx.length) return;
      const full = idx.map((i) => {
        const t = gd.data[i];
        if (!t.anatomyFull) t.anatomyFull = {x: Array.from(t.x), y: Array.from(t.y)};
        return t.anatomyFull;
      });
      if (gd.anatomyKept === (key || "") && gd.anatomyKeptOf === gd.data[idx[0]]) return;
      gd.anatomyKept = gd.dataset.kept = key || "";
      gd.anatomyKeptOf = gd.data[idx[0]];
      gd.anatomyKeptEnd = point ? (point.data.meta === "queries" ? 0 : 1) : null;
      gd.anatomyKeptRow = point ? -point.pointIndex : null;
      // one restyle at a time, each drawing the latest choice: quick pointer moves never leave an older one
      gd.anatomyRestyle = (gd.anatomyRestyle || Promise.resolve()).then(() => {
        if (gd.data[idx[0]] !== gd.anatomyKeptOf) return; // a new figure came meanwhile
        return window.Plotly.restyle(gd, linesThrough(full, gd.anatomyKeptEnd, gd.anatomyKeptRow), idx);
      }).catch(() => {});
    },
    /**
     * One figure as a file named by what it shows (layout.meta.export): PNG at 3× or SVG, as drawn, or as a 16:9
     * slide (1920 × 1080, presenter type); the step frame only when asked for.
     * @param {string} elemId  the figure's div or an element holding it
     * @param {"png" | "svg"} format
     * @param {boolean} frame
     * @param {boolean} wide
     */
    exportFigure(elemId, format, frame, wide) {
      const el = document.getElementById(elemId), Plotly = window.Plotly;
      const gd = /** @type {Figured} */ (el && (el.matches(".js-plotly-plot") ? el
        : el.querySelector(".js-plotly-plot")));
      if (!gd || !gd._fullLayout || !Plotly) return;
      const layout = JSON.parse(JSON.stringify(gd.layout));
      if (!frame) layout.shapes = (layout.shapes || []).filter((s) => s.name !== STEP_FRAME);
      let size = {width: gd._fullLayout.width, height: gd._fullLayout.height, scale: format === "png" ? 3 : 1};
      if (wide) {
        size = {width: 1920, height: 1080, scale: 1};
        Object.entries(sized(gd.anatomyBase || base(gd.data, gd.layout), S.scale, 1080, false, 1920))
          .forEach(([path, v]) => put(layout, path, v));
      }
      Object.assign(layout, {width: size.width, height: size.height});
      const name = ((layout.meta && layout.meta.export) || "transformer-anatomy_" + elemId) + (wide ? "_16x9" : "");
      Plotly.toImage({data: gd.data, layout}, Object.assign({format}, size)).then((url) => {
        const a = Object.assign(document.createElement("a"), {href: url, download: name + "." + format});
        document.body.appendChild(a); a.click(); a.remove();
      });
    },
  };
  return S;
}

// Tick labels fitted to the pixels a figure is drawn in, for every host (the app's app.js, the offline page): a
// label never lies on its neighbour, from one piece to the longest input. Labels shrink down to a least size, then
// every second, third… one is shown. Both hosts change layouts with its Plotly paths (put) and read a layout's
// font and margins with frameOf.

/**
 * @typedef {{vals: number[], text: string[]}} Ticks  an axis's labelled ticks
 */

/**
 * An axis's labelled ticks (tickmode "array"), or null.
 * @param {Object | undefined} axis  a Plotly layout axis
 * @returns {Ticks | null}
 */
export function ticksOf(axis) {
  const vals = axis && axis.tickmode === "array" && axis.tickvals, text = axis && axis.ticktext;
  return Array.isArray(vals) && Array.isArray(text) && vals.length === text.length && vals.length
    ? {vals, text} : null;
}

/**
 * Labels on `px` pixels, each needing `need(size)` of them: in `font`, else smaller down to `least`, else every
 * k-th label.
 * @param {Ticks} ticks
 * @param {string[]} text  the labels as shown (ticks.text, or cut for a phone)
 * @param {number} px
 * @param {number} font
 * @param {number} least
 * @param {function(number): number} need
 * @returns {{size: number, vals: number[], text: string[]}}
 */
export function spaced(ticks, text, px, font, least, need) {
  const room = px / ticks.vals.length;
  const size = Math.max(least, Math.min(font, Math.floor(font * room / need(font))));
  const k = Math.max(1, Math.ceil(need(size) / Math.max(room, 0.1)));
  const keep = ticks.vals.map((_, i) => i).filter((i) => i % k === 0);
  return {size, vals: keep.map((i) => ticks.vals[i]), text: keep.map((i) => text[i])};
}

/**
 * A label cut for a phone to `n` characters shown (what a phone's row-label margin holds), keeping both sides of
 * "read ▸ produced": only a label longer than that is cut, its longer side first (the read one on a tie), so that a
 * short word stays whole; an HTML entity counts as the one character it shows and is never cut.
 * @param {string} label
 * @param {number} [n]
 */
export function short(label, n = 13) {
  const chars = (s) => s.match(/&[a-z]+;|[\s\S]/gu) || [];
  const cut = (shown, keep) => shown.length > keep ? shown.slice(0, keep - 1).join("") + "\u2026" : shown.join("");
  const sides = label.split(" \u25b8 ").map(chars);
  if (sides.length !== 2) return cut(chars(label), n);
  let [a, b] = sides.map((side) => side.length);
  while (a + b + 3 > n && (a > 2 || b > 2)) {
    if (a >= b) a -= 1;
    else b -= 1;
  }
  return `${cut(sides[0], a)} \u25b8 ${cut(sides[1], b)}`;
}

/**
 * The layout update (Plotly.relayout's paths) that keeps a figure's x and y labels apart, drawn `height` × `width`
 * px with these margins: rows a label's height and a little apart, slanted columns that far across their slant.
 * @param {{x: Ticks | null, y: Ticks | null, angle: number | undefined, colorbar: boolean}} axes  the figure's
 *   labels (ticksOf), its x labels' angle and whether it has a colorbar
 * @param {{height: number, width: number, margin: {l: number, r: number, t: number, b: number}, font: number,
 *   least: number, narrow: boolean}} at  `least`: the smallest label size; `narrow`: a phone (row labels cut)
 * @returns {Object<string, *>}
 */
export function labelsFitted(axes, at) {
  const u = {}, m = at.margin;
  if (axes.y) {
    const y = spaced(axes.y, at.narrow ? axes.y.text.map((t) => short(t)) : axes.y.text, at.height - m.t - m.b, at.font,
                     at.least, (f) => 1.15 * f);
    Object.assign(u, {"yaxis.tickvals": y.vals, "yaxis.ticktext": y.text, "yaxis.tickfont.size": y.size});
  }
  if (axes.x && at.width) {
    const slant = Math.sin(Math.abs(axes.angle || 0) * Math.PI / 180);
    const long = Math.max(...axes.x.text.map((t) => String(t).replace(/&[a-z]+;/g, "_").length));
    const x = spaced(axes.x, axes.x.text, at.width - m.l - m.r - (axes.colorbar ? 70 : 0), at.font, at.least,
                     (f) => slant > 0.2 ? 1.15 * f / slant : 0.6 * f * long + 6);
    Object.assign(u, {"xaxis.tickvals": x.vals, "xaxis.ticktext": x.text, "xaxis.tickfont.size": x.size});
  }
  return u;
}

/**
 * An axis title along `px` pixels in `font`: as it is, else on two lines (at " ("), else none (a title longer than
 * its axis runs into the figure's title).
 * @param {string} text  may hold "<br>"
 * @param {number} px
 * @param {number} font
 * @returns {string}
 */
export function titleFitted(text, px, font) {
  const long = (t) => 0.58 * font * Math.max(...t.split("<br>").map((line) => line.replace(/<[^>]*>/g, "").length));
  if (long(text) <= px) return text;
  const two = text.includes("<br>") ? text : text.replace(" (", "<br>(");
  return long(two) <= px ? two : "";
}

/**
 * A title broken into lines that each fit `px` pixels in `size` (0.55 em a character): a line too long breaks at
 * its " · " separators, as few times as it must, and a part still too long at its spaces (never inside a tag).
 * @param {string} text  may hold "<br>"
 * @param {number} px
 * @param {number} size
 * @returns {string}
 */
export function titleLines(text, px, size) {
  const fits = (line) => 0.55 * size * line.replace(/<[^>]*>/g, "").length <= px;
  const wrap = (line, parts, sep) => {
    const lines = [];
    parts.forEach((part) => {
      const joined = lines.length ? lines[lines.length - 1] + sep + part : part;
      if (lines.length && fits(joined)) lines[lines.length - 1] = joined;
      else lines.push(part);
    });
    return lines;
  };
  return text.split("<br>").flatMap((line) => fits(line) ? [line]
    : wrap(line, line.split(" \u00b7 "), " \u00b7 ")
      .flatMap((part) => fits(part) ? [part] : wrap(part, part.split(/ (?![^<>]*>)/), " "))).join("<br>");
}

/**
 * A Plotly path ("margin.l", "annotations[0].font.size") as its keys.
 * @param {string} path
 */
export const pathKeys = (path) => path.replace(/\[(\d+)\]/g, ".$1").split(".");

/**
 * Sets a value in a layout object by a Plotly path.
 * @param {Object} layout
 * @param {string} path
 * @param {*} value
 */
export function put(layout, path, value) {
  const keys = pathKeys(path), last = keys.pop();
  keys.reduce((o, key) => (o[key] = o[key] || {}), layout)[last] = value;
}

/**
 * A layout's font size and margins, else Plotly's defaults (the template's font; margins 80/80/100/80).
 * @param {Object} layout
 * @returns {{font: number, l: number, r: number, t: number, b: number}}
 */
export function frameOf(layout) {
  const m = layout.margin || {};
  return {font: layout.font?.size ?? layout.template?.layout?.font?.size ?? 12,
          l: m.l ?? 80, r: m.r ?? 80, t: m.t ?? 100, b: m.b ?? 80};
}

// Axis labels as the Python views make them: viz/text.py (`readable`, `label`, `query_label`, `positioned`),
// viz/words.py (`plain_label`) and attention_views._shown (which tokens an axis shows: pieces, plain pieces or the
// payload's words).

/** @typedef {import("./payload.js").Axes} Axes */

export const MAX_LABEL = 24;
export const MAX_QUERY = 14; // each side of a decoder position's "read ▸ produced"
const SPACE_MARK = "\u2581";
// viz.words.SPECIALS: left as they are by plain labels
const SPECIALS = new Set(["<s>", "</s>", "<pad>", "<unk>"]);
// Python's str.isprintable is false for these categories, and for every space separator but " "
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}]/u;
const unprintable = (ch) => UNPRINTABLE.test(ch) || (ch !== " " && /\p{Zs}/u.test(ch));

/**
 * `&`, `<`, `>` escaped, so that Plotly shows them literally.
 * @param {unknown} text
 * @returns {string}
 */
export const escape = (text) => String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/**
 * A piece as text to draw: control characters as \xNN, an empty piece as ∅, a long one cut with "…".
 * @param {string} piece
 * @param {number} [max]
 * @returns {string}
 */
export function readable(piece, max = MAX_LABEL) {
  const text = Array.from(String(piece), (ch) =>
    unprintable(ch) ? "\\x" + ch.codePointAt(0).toString(16).padStart(2, "0") : ch).join("") || "\u2205";
  const chars = Array.from(text);
  return chars.length > max ? chars.slice(0, max - 1).join("") + "\u2026" : text;
}

/**
 * A piece or word as a figure label: readable, then escaped.
 * @param {string} piece
 * @param {number} [max]
 * @returns {string}
 */
export const label = (piece, max = MAX_LABEL) => escape(readable(piece, max));

/**
 * A query label: a piece, or a decoder position's [read, produced] as "read ▸ produced".
 * @param {string | string[]} token
 * @param {number} [max]  for each side of a pair
 * @returns {string}
 */
export function queryLabel(token, max = MAX_QUERY) {
  return Array.isArray(token) && token.length === 2 ? `${label(token[0], max)} \u25b8 ${label(token[1], max)}`
    : label(/** @type {string} */ (token));
}

/**
 * Labels prefixed with their position from 1 ("3 ▁dog"): unique even when a piece repeats.
 * @param {string[]} pieces
 * @param {number} [max]
 * @returns {string[]}
 */
export const positioned = (pieces, max = MAX_LABEL) => pieces.map((p, i) => `${i + 1} ${label(p, max)}`);

/**
 * A piece without SentencePiece's ▁: a word's first piece as the bare word, a piece inside a word after "·", a
 * lone ▁ as ␣, a special piece unchanged.
 * @param {string} piece
 * @returns {string}
 */
export function plainLabel(piece) {
  if (SPECIALS.has(piece)) return piece;
  if (piece.startsWith(SPACE_MARK)) return piece.slice(SPACE_MARK.length) || "\u2423";
  return "\u00b7" + piece;
}

/**
 * plainLabel on pieces, or on both sides of [read, produced] pairs.
 * @param {(string | string[])[]} tokens
 * @returns {(string | string[])[]}
 */
export const plainLabels = (tokens) => tokens.map((t) => Array.isArray(t) ? t.map(plainLabel) : plainLabel(t));

/**
 * The tokens an axis pair shows (attention_views._shown): the payload's words when merging, else the pieces,
 * without ▁ when plain; then `queryLabel` and `label` make them labels.
 * @param {Axes} axes
 * @param {boolean} merge
 * @param {boolean} plain
 * @returns {{queries: (string | string[])[], keys: string[]}}
 */
export function axisTokens(axes, merge, plain) {
  if (merge) return {queries: axes.query_words, keys: axes.key_words};
  if (plain) return {queries: plainLabels(axes.queries), keys: /** @type {string[]} */ (plainLabels(axes.keys))};
  return {queries: axes.queries, keys: axes.keys};
}

// A branch ("what if it had written this?"): a translation whose first pieces were forced, then decoded by the model
// on its own (anatomy/payload.py: settings.mode "branch", prefix, parts_at), shown beside the model's own translation
// it was made from (the payload's `own`, when its host kept it).

/**
 * @typedef {{pieces: string[], texts: string[], logProbs: number[], logProb: number | null}} Line
 * @typedef {{branch: Line, own: Line | null, forced: number, partsAt: number}} Branch
 */

/**
 * The branch a payload is, with the model's own translation when the payload carries it; null for any other
 * trace.
 * @param {Object} payload  a trace payload (payload.js readPayload)
 * @returns {Branch | null}
 */
export function branchLines(payload) {
  const s = payload && payload.settings;
  if (!s || s.mode !== "branch") return null;
  const line = (pieces, texts, logProbs, logProb) => ({pieces, texts: texts || pieces, logProbs: logProbs || [],
                                                       logProb: logProb ?? null});
  const own = payload.own;
  return {
    branch: line(payload.pieces.output, payload.piece_texts && payload.piece_texts.output, payload.log_probs,
                 payload.log_prob),
    own: own ? line(own.pieces, own.piece_texts, own.log_probs, own.log_prob) : null,
    forced: (s.prefix || []).length,
    partsAt: s.parts_at ?? (s.prefix || []).length,
  };
}

/**
 * A log-probability as the page writes it: "−1.54" (a real minus sign), "" when unknown.
 * @param {number | null | undefined} x
 */
export function logText(x) {
  return typeof x === "number" && Number.isFinite(x) ? x.toFixed(2).replace("-", "\u2212") : "";
}

/**
 * The line of a branch's (or the model's own) pieces in `box`: each piece with its log p under it, the forced ones
 * marked, the first one after the parting point marked where they part, the total at the end.
 * @param {Document} document
 * @param {HTMLElement} box
 * @param {string} name  "Model's own" or "Branch"
 * @param {Line} line
 * @param {number} forced  how many of its first pieces were forced (0 for the model's own)
 * @param {number} partsAt  the first step where the two differ
 */
export function drawLine(document, box, name, line, forced, partsAt) {
  const el = (tag, props) => Object.assign(document.createElement(tag), props);
  const pieces = line.pieces.map((piece, t) => {
    const chip = el("span", {className: "anatomy-branch-piece" + (t < forced ? " forced" : "") +
                                        (t === partsAt ? " parts" : ""),
                             title: `step ${t + 1}: ${piece}` + (line.logProbs[t] !== undefined
                               ? `, log p ${logText(line.logProbs[t])}` : "") + (t < forced ? " (forced)" : "")});
    chip.append(el("span", {textContent: line.texts[t] ?? piece}),
                el("sub", {textContent: logText(line.logProbs[t])}));
    return chip;
  });
  box.replaceChildren(el("b", {textContent: name}), ...pieces,
                      el("span", {className: "anatomy-branch-total",
                                  textContent: line.logProb === null ? "" : `log p ${logText(line.logProb)}`}));
}

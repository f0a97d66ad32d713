// The translation's part of the page, drawn by one code in every host: the translation, the run's notes, the
// source and output pieces (the output's by the model's probability, with their legend), the beam candidates and
// the heads-off comparison. The app sends them piece by piece as they are made (page.js `data`: the channels
// translation, info, source, output, candidates, ablation); the offline file draws its saved translation's once.

/**
 * Chips in `box`, one per [text, category] pair, each coloured by its category's colour in `colors`.
 * @param {HTMLElement} box
 * @param {Array<[string, string]>} items
 * @param {Object<string, string>} [colors]
 */
export function chips(box, items, colors = {}) {
  const doc = box.ownerDocument;
  box.replaceChildren(...items.map(([piece, category]) => {
    const span = doc.createElement("span");
    span.className = "chip";
    span.textContent = piece;
    if (colors[category]) span.style.background = colors[category];
    if (category) span.title = category;
    return span;
  }));
}

/**
 * The candidates' table (#candidates, its box #candidates-box hidden when there are none): one row each (#,
 * candidate, score, log p, pieces); with `pick`, a click on a row picks it (its index from 0).
 * @param {Document} doc
 * @param {Array<Array<string | number | null>>} rows
 * @param {function(number): void} [pick]
 */
export function candidates(doc, rows, pick) {
  const box = doc.getElementById("candidates-box"), table = /** @type {HTMLTableElement} */ (doc.getElementById("candidates"));
  box.hidden = !rows.length;
  table.replaceChildren();
  if (!rows.length) return;
  const head = table.createTHead().insertRow(), body = table.createTBody();
  for (const h of ["#", "candidate", "score", "log p", "pieces"]) head.appendChild(doc.createElement("th")).textContent = h;
  rows.forEach((row, index) => {
    const tr = body.insertRow();
    row.forEach((x) => { tr.insertCell().textContent = x === null ? "" : String(x); });
    if (pick) {
      tr.tabIndex = 0;
      tr.title = "Show this candidate's attention";
      tr.addEventListener("click", () => pick(index));
      tr.addEventListener("keydown", (e) => { if (e.key === "Enter") pick(index); });
    }
  });
  table.classList.toggle("anatomy-pickable", !!pick);
}

/**
 * Draw what `part` carries of the translation (each key the host sent; the others stay as they are).
 * @param {Document} doc
 * @param {{translation?: string, info?: string, source?: Array<[string, string]>, output?: Array<[string, string]>,
 *   candidates?: Array<Array<string | number | null>>, ablation?: string}} part
 * @param {{confidence: Object<string, string>, pick?: function(number): void}} how
 */
export function showResult(doc, part, how) {
  const $ = (id) => doc.getElementById(id);
  if ("translation" in part) {
    // its text, not its value: the box's words are then in the page's text too (a notebook's frame is read so)
    $("translation").querySelector("textarea").textContent = part.translation;
  }
  if ("info" in part) $("run-info").innerHTML = part.info;
  if ("source" in part) chips($("source-pieces"), part.source.map(([piece]) => [piece, ""]));
  if ("output" in part) {
    chips($("output-pieces"), part.output, how.confidence);
    chips($("confidence-legend"), Object.keys(how.confidence).map((c) => [c, c]), how.confidence);
  }
  if ("candidates" in part) candidates(doc, part.candidates, how.pick);
  if ("ablation" in part) {
    $("ablation").innerHTML = part.ablation;
    $("ablation").hidden = !part.ablation;
  }
}

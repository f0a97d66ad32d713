// The tabs under the explorer (anatomy/viewer/tabs.html): which one is open, and their own controls (the all-heads
// picker, the head statistics table, Why this word's method and comparison, the positional encoding's dimensions).
// The host draws their figures (host.js); these tell it what a visitor chose.

/**
 * @typedef {{headers: string[], rows: Array<Array<string | number | null>>}} Stats  the head statistics table
 *   (anatomy/head_views.py head_table): a row is kind label, layer, head, then the statistics
 */

/**
 * Make the tabs in `root` (the element holding tabs.html) work.
 * @param {Element} root
 * @param {{opened: function(string): void, openHead: function(Object): void, dims: function(number[]): void,
 *   method: function(string): void, contrast: function(string): void}} options  `opened`: a tab was opened;
 *   `openHead`: a head to open in the large view ({kind?, layer, head}); `dims`: the positional encoding's curves;
 *   `method`: Why this word's attribution; `contrast`: compare the step's piece with this word ("" for the
 *   runner-up)
 */
export function createTabs(root, options) {
  const $ = (id) => /** @type {HTMLElement} */ (root.querySelector("#" + id));
  const buttons = /** @type {HTMLElement[]} */ (Array.from(root.querySelectorAll("[role=tab]")));
  const panels = /** @type {HTMLElement[]} */ (Array.from(root.querySelectorAll("[role=tabpanel]")));
  let open = buttons.find((b) => b.getAttribute("aria-selected") === "true")?.dataset.tab || buttons[0].dataset.tab;
  const stats = statsTable(/** @type {HTMLTableElement} */ ($("head-stats")), options.openHead);

  function select(tab, silent = false) {
    if (!buttons.some((b) => b.dataset.tab === tab)) return;
    const changed = tab !== open;
    open = tab;
    for (const b of buttons) b.setAttribute("aria-selected", String(b.dataset.tab === tab));
    for (const p of panels) p.hidden = p.dataset.tab !== tab;
    if (changed && !silent) options.opened(tab);
  }
  for (const b of buttons) b.addEventListener("click", () => select(b.dataset.tab));

  $("pick-head").addEventListener("change", (e) => {
    const [layer, head] = /** @type {HTMLSelectElement} */ (e.target).value.split(":");
    if (layer) options.openHead({layer: +layer, head});
  });
  $("why-method").addEventListener("change", (e) => options.method(/** @type {HTMLSelectElement} */ (e.target).value));
  const contrast = () => options.contrast(/** @type {HTMLInputElement} */ ($("why-foil")).value.trim());
  $("why-compare").addEventListener("click", contrast);
  $("why-foil").addEventListener("keydown", (e) => { if (e.key === "Enter") contrast(); });
  $("pe-dims").addEventListener("change",
    (e) => options.dims(readDims(/** @type {HTMLInputElement} */ (e.target).value)));

  return {
    select,
    /** @returns {string} the open tab's id */
    open: () => open,
    /**
     * The all-heads picker for the shown kind's layers and heads ("layer:head"), nothing chosen.
     * @param {number} layers
     * @param {number} heads
     */
    pickHeads(layers, heads) {
      const select = $("pick-head");
      const items = [["choose a head…", ""]];
      for (let l = 1; l <= layers; l++) {
        for (let h = 1; h <= heads; h++) items.push([`layer ${l}, head ${h}`, `${l}:${h}`]);
      }
      select.replaceChildren(...items.map(([text, value]) => new Option(text, value)));
    },
    /**
     * The head statistics of the shown translation, with its kinds (name and label) for a row's click.
     * @param {Stats | null} table
     * @param {{name: string, label: string}[]} kindsOf
     */
    stats: stats.show,
    /** The positional encoding's curves, as the dimensions input shows them. */
    showDims(dims) {
      /** @type {HTMLInputElement} */ ($("pe-dims")).value = dims.join(" ");
    },
  };
}

/**
 * The head statistics table in `table`: sorted by a click on a column, a row's click opens its head (`open`).
 * @param {HTMLTableElement} table
 * @param {function(Object): void} open  given {kind, layer, head}
 * @returns {{show: function(Stats | null, {name: string, label: string}[]): void}}  `show`: a translation's table
 *   and its kinds (name and label), for a row's click
 */
export function statsTable(table, open) {
  let stats = null, kinds = [], order = {column: -1, descending: false};

  function draw() {
    table.replaceChildren();
    if (!stats) return;
    const doc = table.ownerDocument, head = table.createTHead().insertRow();
    stats.headers.forEach((name, c) => {
      const th = doc.createElement("th");
      th.textContent = name + (order.column === c ? (order.descending ? " ▼" : " ▲") : "");
      th.addEventListener("click", () => {
        order = {column: c, descending: order.column === c && !order.descending};
        draw();
      });
      head.appendChild(th);
    });
    const rows = stats.rows.slice();
    if (order.column >= 0) {
      const c = order.column, sign = order.descending ? -1 : 1;
      rows.sort((a, b) => a[c] === null ? 1 : b[c] === null ? -1 : sign * (a[c] < b[c] ? -1 : a[c] > b[c] ? 1 : 0));
    }
    const body = table.createTBody();
    for (const row of rows) {
      const tr = body.insertRow();
      row.forEach((x) => { tr.insertCell().textContent = x === null ? "" : String(x); });
      tr.addEventListener("click", () => {
        const kind = kinds.find((k) => k.label === row[0]);
        if (kind) open({kind: kind.name, layer: row[1], head: String(row[2])});
      });
    }
  }

  return {show(shown, kindsOf) {
    stats = shown;
    kinds = kindsOf;
    draw();
  }};
}

/**
 * The dimensions a visitor typed ("4 5, 8"): whole numbers from 0, each once, in order; others left out.
 * @param {string} text
 * @returns {number[]}
 */
export function readDims(text) {
  const dims = String(text).split(/[\s,;]+/).filter(Boolean).map(Number)
    .filter((d) => Number.isInteger(d) && d >= 0);
  return [...new Set(dims)].sort((a, b) => a - b);
}

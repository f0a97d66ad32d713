// The app page's client of its server (ui/document.py draws the page): each component's element read and set as
// Gradio's own page would, and each event of the wiring (ui/wiring.py, as Gradio's config lists it) run as Gradio's
// page runs it: its browser-side `js`, its request through Gradio's queue (`queue/join`, then the session's
// `queue/data` stream: the queue's place, progress, a generator's values as diffs, the end), its outputs set, the
// events chained after it. Gradio keeps the session's States on the server, by this page's session hash.

/**
 * @typedef {{type: string, choices?: Array<[string, any]>, minimum?: number, maximum?: number, value?: any}}
 *   Component
 * @typedef {{id: number, targets: Array<[number | null, string]>, inputs: number[], outputs: number[],
 *   backend_fn: boolean, js: string | null, trigger_after: number | null, trigger_only_on_success: boolean,
 *   show_progress: string, show_progress_on: number[] | null, trigger_mode: string}} Event
 * @typedef {{components: Object<string, Component>, dependencies: Event[]}} Table
 * @typedef {{msg: string, event_id?: string, success?: boolean, output?: any, rank?: number, queue_size?: number,
 *   rank_eta?: number | null, eta?: number | null, progress_data?: Array<{index: number | null,
 *   length: number | null, unit: string, desc: string | null}>, log?: string, level?: string, title?: string,
 *   message?: string}} Message
 */

/** What a refused join says (Gradio's own words: a full queue). */
export const BUSY = "This application is currently busy. Please try again.";

/**
 * `value` with one of Gradio's diffs applied (each [action, path, value]: replace, append, add, delete).
 * @param {any} value
 * @param {Array<[string, Array<string | number>, any]>} diff
 */
export function applyDiff(value, diff) {
  for (const [action, path, change] of diff) {
    if (!path.length) {
      if (action === "replace") value = change;
      else if (action === "append") value += change;
      continue;
    }
    let target = value;
    for (const key of path.slice(0, -1)) target = target[key];
    const last = path[path.length - 1];
    if (action === "replace") target[last] = change;
    else if (action === "append") target[last] += change;
    else if (action === "add") {
      if (Array.isArray(target)) target.splice(Number(last), 0, change);
      else target[last] = change;
    } else if (action === "delete") {
      if (Array.isArray(target)) target.splice(Number(last), 1);
      else delete target[last];
    }
  }
  return value;
}

/** @param {any} v */
const isUpdate = (v) => !!v && typeof v === "object" && !Array.isArray(v) && v.__type__ === "update";

/**
 * The queue's place or a running event's progress, said in a line.
 * @param {Message} m
 * @param {number} started  when the event was asked (ms)
 * @param {number} now
 */
export function statusText(m, started, now) {
  const seconds = ((now - started) / 1000).toFixed(1) + " s";
  if (m.msg === "estimation" && m.rank != null && m.rank >= 0) {
    const eta = m.rank_eta ? `, about ${Math.max(1, Math.round(m.rank_eta))} s` : "";
    return `Waiting: ${m.rank + 1} of ${m.queue_size} in line${eta}`;
  }
  const step = (m.progress_data || []).find((p) => p.desc || p.length);
  if (m.msg === "progress" && step) {
    const unit = step.unit && step.unit !== "steps" ? " " + step.unit : "";
    const count = step.length ? `${step.index ?? 0} of ${step.length}${unit}` : "";
    const said = step.desc && count && !step.desc.includes(count) ? `${step.desc} (${count})` : step.desc || count;
    return `${said} · ${seconds}`;
  }
  return `Working… ${seconds}`;
}

/**
 * The client of the page in `document`, on the events' `table` (ui/document.py `events`). `options.fetch` and
 * `options.EventSource` stand in for the window's (tests); `options.root`: the server's address (default: the page's
 * own folder); `options.toast(text, level)`: how a message is shown (default: in #anatomy-toasts).
 * @param {Document} document
 * @param {Table} table
 * @param {{fetch?: typeof fetch, EventSource?: typeof EventSource, root?: string,
 *   toast?: function(string, string): void}} [options]
 */
export function createClient(document, table, options = {}) {
  const window = document.defaultView;
  const http = options.fetch || window.fetch.bind(window), Source = options.EventSource || window.EventSource;
  const root = options.root ?? new URL(".", window.location.href).href;
  // every request carries the page's query, as Gradio's own page sends it: a link's handlers read it there
  const query = (window.location.search || "").replace(/^\?/, "");
  const session = Math.random().toString(36).slice(2, 13);
  const components = table.components;
  /** @type {Object<string, HTMLElement | null>} */
  const els = {};
  /** @type {Object<string, any>} */
  const values = {};
  for (const [id, c] of Object.entries(components)) {
    els[id] = document.querySelector(`[data-block="${id}"]`);
    values[id] = c.type === "state" ? null : c.value ?? null;
  }
  /** @type {Map<string, Event[]>} */
  const on = new Map();
  for (const dep of table.dependencies) {
    for (const [id, event] of dep.targets) on.set(`${id}:${event}`, [...(on.get(`${id}:${event}`) || []), dep]);
  }
  const compiled = new Map(), running = new Map(), pending = new Map(), early = new Map(), shown = new Map();
  /** @type {EventSource | null} */
  let stream = null;

  const control = (id, selector) => /** @type {any} */ (els[id] && els[id].querySelector(selector));

  /** A component's value as the page shows it (a component with no form control: as last set). */
  function get(id) {
    const type = components[id].type;
    if (type === "state") return null;
    if (!els[id]) return values[id];
    if (type === "textbox") return control(id, "textarea").value;
    if (type === "dropdown") return control(id, "select").value;
    if (type === "slider") return Number(control(id, "input[type=range]").value);
    if (type === "radio") return control(id, "input:checked")?.value ?? null;
    if (type === "checkboxgroup") {
      return Array.from(els[id].querySelectorAll("input:checked"), (i) => /** @type {HTMLInputElement} */ (i).value);
    }
    return values[id];
  }

  /** Set a component's value; a change fires its change events (as Gradio's page fires them). */
  function set(id, value) {
    const before = JSON.stringify(get(id) ?? null);
    show(id, value);
    if (JSON.stringify(get(id) ?? null) !== before) trigger(id, "change");
  }

  /** Show a component's value, firing nothing. */
  function show(id, value) {
    const type = components[id].type, el = els[id];
    values[id] = value;
    if (el && type === "textbox") control(id, "textarea").value = value ?? "";
    else if (el && type === "dropdown") control(id, "select").value = value ?? "";
    else if (el && type === "slider") el.querySelectorAll("input").forEach((i) => { i.value = String(value); });
    else if (el && (type === "radio" || type === "checkboxgroup")) {
      const chosen = new Set((type === "radio" ? [value] : value || []).map(String));
      el.querySelectorAll("input").forEach((i) => { i.checked = chosen.has(i.value); });
    } else if (el && type === "html") el.innerHTML = value ?? "";
    else if (el && type === "file") showFile(el, value);
  }

  /** A file the server made: its link (app.js `save` clicks it). */
  function showFile(el, file) {
    const box = el.querySelector(".anatomy-file-link");
    if (!file || !file.url) {
      box.replaceChildren();
      return;
    }
    const name = file.orig_name || file.path.split("/").pop();
    box.replaceChildren(Object.assign(document.createElement("a"), {href: file.url, download: name,
                                                                     textContent: name}));
  }

  /** A dropdown's, radio's or checkbox group's new choices, its value kept (no change: Gradio fires none). */
  function choose(id, choices) {
    const type = components[id].type, el = els[id], kept = get(id);
    if (!el) return;
    if (type === "dropdown") {
      control(id, "select").replaceChildren(...choices.map(([name, v]) => Object.assign(
        document.createElement("option"), {value: v, textContent: name})));
    } else if (type === "radio" || type === "checkboxgroup") {
      control(id, ".anatomy-choices").replaceChildren(...choices.map(([name, v]) => {
        const label = Object.assign(document.createElement("label"), {className: "anatomy-choice"});
        label.append(Object.assign(document.createElement("input"), {
          type: type === "radio" ? "radio" : "checkbox", name: `block-${id}`, value: v}),
        Object.assign(document.createElement("span"), {textContent: name}));
        return label;
      }));
    }
    show(id, kept);
  }

  /** One output's value from the server: a value, or an update of some of its props (gr.update, gr.skip). */
  function output(id, value) {
    if (!isUpdate(value)) {
      set(id, value);
      return;
    }
    const el = els[id];
    if ("choices" in value) choose(id, value.choices);
    if ("visible" in value && el) el.hidden = !value.visible;
    if ("open" in value && el) /** @type {HTMLDetailsElement} */ (el).open = !!value.open;
    if ("value" in value) set(id, value.value);
  }

  function outputs(dep, data) {
    dep.outputs.forEach((id, i) => { if (i < data.length) output(id, data[i]); });
  }

  function toast(text, level = "error") {
    if (options.toast) {
      options.toast(text, level);
      return;
    }
    const box = document.getElementById("anatomy-toasts");
    if (!box) return;
    const note = Object.assign(document.createElement("div"), {className: `anatomy-toast anatomy-toast-${level}`});
    note.setAttribute("role", level === "error" ? "alert" : "status");
    const close = Object.assign(document.createElement("button"), {type: "button", textContent: "\u00d7",
                                                                   title: "Close"});
    close.setAttribute("aria-label", "Close");
    close.onclick = () => note.remove();
    note.append(Object.assign(document.createElement("strong"), {
      textContent: {error: "Error", warning: "Warning"}[level] || "Note"}),
    Object.assign(document.createElement("span"), {textContent: text}), close);
    box.append(note);
    setTimeout(() => note.remove(), level === "error" ? 15000 : 8000);
  }

  /** Where an event's progress shows (Gradio's show_progress_on, else its outputs), when it shows any. */
  function progressAt(dep) {
    if (dep.show_progress === "hidden") return [];
    return (dep.show_progress_on || dep.outputs).map((id) => els[id]).filter((el) => el && !el.hidden);
  }

  /** Show `text` over an event's places (null: its progress ends there; a place's badge goes with its last event). */
  function progress(job, text) {
    for (const el of job.at) {
      const jobs = shown.get(el) || new Set();
      shown.set(el, jobs);
      let badge = /** @type {HTMLElement | null} */ (el.querySelector(":scope > .anatomy-status"));
      if (text === null) {
        jobs.delete(job);
        if (!jobs.size) {
          el.classList.remove("anatomy-pending");
          badge?.remove();
        }
        continue;
      }
      jobs.add(job);
      if (!badge) {
        badge = Object.assign(document.createElement("div"), {className: "anatomy-status"});
        badge.setAttribute("role", "status");
        el.classList.add("anatomy-pending");
        el.prepend(badge);
      }
      badge.textContent = text;
    }
  }

  function listen() {
    if (stream) return;
    stream = new Source(`${root}gradio_api/queue/data?session_hash=${session}`);
    stream.onmessage = (e) => message(JSON.parse(e.data));
    stream.onerror = () => {
      if (stream && stream.readyState !== 2) return; // reconnecting by itself
      stream = null;
      for (const job of [...pending.values()]) finish(job, false, "The connection to the server was lost.");
    };
  }

  /** @param {Message} m */
  function message(m) {
    if (m.msg === "heartbeat") return;
    if (m.msg === "close_stream") {
      stream?.close();
      stream = null;
      if (pending.size) listen();
      return;
    }
    const job = pending.get(m.event_id);
    if (!job) { // before its join has answered
      early.set(m.event_id, [...(early.get(m.event_id) || []), m]);
      return;
    }
    job.last = m;
    if (m.msg === "log") toast(m.log || "", (m.level || "info").toLowerCase());
    else if (m.msg === "estimation" || m.msg === "process_starts" || m.msg === "progress") {
      progress(job, statusText(m, job.started, Date.now()));
    } else if (m.msg === "process_generating" && m.output) {
      const data = m.output.data;
      job.values = job.values ? job.values.map((v, i) => applyDiff(v, data[i])) : data;
      outputs(job.dep, structuredClone(job.values));
      states(m.output);
    } else if (m.msg === "process_completed") {
      if (m.success) {
        if (!job.values) outputs(job.dep, m.output.data);
        states(m.output);
        finish(job, true);
      } else {
        finish(job, false, (m.output && m.output.error) || "The server could not do this.");
      }
    } else if (m.msg === "unexpected_error") finish(job, false, m.message || "The server could not do this.");
  }

  function states(output) {
    for (const id of output.changed_state_ids || []) trigger(id, "change");
  }

  function finish(job, ok, error = "") {
    pending.delete(job.id);
    clearInterval(job.timer);
    progress(job, null);
    if (error) toast(error);
    job.resolve(ok);
  }

  /** An event's request: joined to the queue, then answered on the session's stream. Whether it succeeded. */
  async function submit(dep, data, trigger) {
    const job = {id: "", dep, at: progressAt(dep), started: Date.now(), values: null,
                 last: /** @type {Message} */ ({msg: "process_starts"}), timer: 0, resolve: (ok) => {}};
    progress(job, "Waiting…");
    let response;
    try {
      response = await http(`${root}gradio_api/queue/join${query ? "?" + query : ""}`, {
        method: "POST", headers: {"Content-Type": "application/json"},
        body: JSON.stringify({data, event_data: null, fn_index: dep.id, trigger_id: trigger, session_hash: session}),
      });
    } catch {
      progress(job, null);
      toast("The server could not be reached.");
      return false;
    }
    if (!response.ok) {
      progress(job, null);
      const said = await response.json().catch(() => ({}));
      toast(response.status === 503 ? BUSY : said.detail || `The server answered ${response.status}.`);
      return false;
    }
    job.id = (await response.json()).event_id;
    const done = new Promise((resolve) => { job.resolve = resolve; });
    pending.set(job.id, job);
    job.timer = setInterval(() => progress(job, statusText(job.last, job.started, Date.now())), 500);
    listen();
    for (const m of early.get(job.id) || []) message(m);
    early.delete(job.id);
    return done;
  }

  function compile(dep) {
    if (!compiled.has(dep.id)) compiled.set(dep.id, new Function(`return (${dep.js});`)());
    return compiled.get(dep.id);
  }

  /** Run one event, as its trigger mode allows, then the events chained after it. */
  async function run(dep, trigger) {
    const busy = running.get(dep.id);
    if (busy && dep.trigger_mode === "once") return;
    if (busy && dep.trigger_mode === "always_last") {
      busy.again = true;
      return;
    }
    const mine = {again: false};
    if (dep.trigger_mode !== "multiple") running.set(dep.id, mine);
    let ok = true;
    try {
      let args = dep.inputs.map(get);
      if (dep.js) {
        const result = compile(dep)(...args);
        if (dep.backend_fn && Array.isArray(result)) args = result;
        else if (!dep.backend_fn && dep.outputs.length) outputs(dep, dep.outputs.length === 1 ? [result] : result);
      }
      if (dep.backend_fn) ok = await submit(dep, args, trigger);
    } catch (err) {
      ok = false;
      toast(String(err && err.message || err));
    } finally {
      if (running.get(dep.id) === mine) running.delete(dep.id);
    }
    for (const next of table.dependencies) {
      if (next.trigger_after === dep.id && (ok || !next.trigger_only_on_success)) run(next, null);
    }
    if (mine.again) run(dep, trigger);
  }

  /** Every event that `event` of component `id` starts. */
  function trigger(id, event) {
    for (const dep of on.get(`${id}:${event}`) || []) run(dep, typeof id === "number" ? id : Number(id));
  }

  /** The page's controls bound to their events; the heartbeat that keeps the session; the load events run. */
  function start() {
    for (const [id, el] of Object.entries(els)) {
      if (!el) continue;
      const type = components[id].type;
      if (type === "button") el.addEventListener("click", () => trigger(id, "click"));
      if (type === "textbox") {
        const box = control(id, "textarea"), lines = Number(box.dataset.lines || 1);
        box.addEventListener("keydown", (e) => {
          // Gradio's keys: Enter submits one line, Shift+Enter a box of several
          if (e.key === "Enter" && !e.isComposing && (lines > 1 ? e.shiftKey : !e.shiftKey)) {
            e.preventDefault();
            trigger(id, "submit");
          }
        });
        box.addEventListener("input", () => trigger(id, "input"));
        box.addEventListener("change", () => trigger(id, "change"));
      }
      if (type === "slider") {
        const [number, range] = [control(id, "input[type=number]"), control(id, "input[type=range]")];
        range.addEventListener("input", () => { number.value = range.value; });
        number.addEventListener("change", () => {
          const c = components[id], v = Math.min(c.maximum, Math.max(c.minimum, Number(number.value)));
          number.value = range.value = String(Number.isFinite(v) ? v : c.value);
        });
      }
      if (["dropdown", "radio", "checkboxgroup", "slider"].includes(type)) {
        el.addEventListener("change", () => {
          trigger(id, "input");
          trigger(id, "change");
        });
      }
    }
    Source && new Source(`${root}gradio_api/heartbeat/${session}`);
    for (const dep of table.dependencies) {
      if (dep.targets.some(([, event]) => event === "load")) run(dep, null);
    }
  }

  return {session, get, set, start, trigger, toast, pending: () => pending.size + running.size};
}

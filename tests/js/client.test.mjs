// ui/static/client.js: the app page's client of Gradio's queue, on a stand-in server (fetch and EventSource) and a
// page whose components have no elements (their values kept by the client): what an event sends, how its outputs,
// a generator's diffs and its States' changes come back, and which events run after it.
import assert from "node:assert/strict";
import {test} from "node:test";

import {BUSY, applyDiff, createClient, statusText} from "../../ui/static/client.js";

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

/** A server that answers each join with an event id and lets the test send the session's stream messages. */
function fakeServer({status = 200} = {}) {
  const joins = [], streams = [];
  class Source {
    constructor(url) {
      this.url = url;
      this.readyState = 1;
      streams.push(this);
    }
    close() { this.readyState = 2; }
  }
  const server = {
    joins, streams,
    onJoin: null,  // called before a join answers
    fetch: async (url, init) => {
      const body = JSON.parse(init.body);
      joins.push({url, body});
      const id = `e${joins.length}`;
      if (server.onJoin) server.onJoin(id);
      return {ok: status === 200, status, json: async () => (status === 200 ? {event_id: id} : {detail: "no"})};
    },
    EventSource: Source,
    // the newest queue stream (not the heartbeat's)
    send(message) {
      const stream = streams.filter((s) => s.url.includes("queue/data")).at(-1);
      stream.onmessage({data: JSON.stringify(message)});
    },
  };
  return server;
}

function page(table, server, toasts = []) {
  const doc = {defaultView: {location: {href: "http://x/app/?text=Hallo", search: "?text=Hallo"}},
               querySelector: () => null,
               getElementById: () => null};
  return createClient(/** @type {any} */ (doc), table, {fetch: server.fetch, EventSource: server.EventSource,
                                                         toast: (text, level) => toasts.push([level, text])});
}

const event = (over) => Object.assign({id: 0, targets: [], inputs: [], outputs: [], backend_fn: true, js: null,
  trigger_after: null, trigger_only_on_success: false, show_progress: "hidden", show_progress_on: null,
  trigger_mode: "once"}, over);

/** A page whose button (4) runs one server event that writes a textbox (1). */
const oneButton = (server) => page({components: {1: {type: "textbox", value: ""}, 4: {type: "button"}},
                                    dependencies: [event({id: 0, targets: [[4, "click"]], outputs: [1]})]}, server);

test("Gradio's diffs: replace, append, add and delete, at the root and inside", () => {
  assert.equal(applyDiff("The", [["append", [], " dog"]]), "The dog");
  assert.deepEqual(applyDiff({a: [1, 2], b: "x"}, [["replace", ["b"], "y"], ["add", ["a", 1], 9],
                                                   ["delete", ["a", 0], null], ["add", ["c"], 3]]),
                   {a: [9, 2], b: "y", c: 3});
  assert.equal(applyDiff({__type__: "update"}, [["replace", [], "v"]]), "v");
});

test("the status line says the queue's place, then the work's progress and time", () => {
  assert.equal(statusText({msg: "estimation", rank: 1, queue_size: 3, rank_eta: 2.4}, 0, 500),
               "Waiting: 2 of 3 in line, about 2 s");
  assert.equal(statusText({msg: "progress", progress_data: [{index: 3, length: 12, unit: "steps",
                                                             desc: "Integrated gradients"}]}, 0, 1500),
               "Integrated gradients (3 of 12) · 1.5 s");
  assert.equal(statusText({msg: "process_starts"}, 0, 2000), "Working… 2.0 s");
});

test("an event sends its inputs as its js fills them, to the page's own address, with the session", async () => {
  const server = fakeServer();
  const table = {components: {1: {type: "textbox", value: "Hallo"}, 2: {type: "textbox", value: ""},
                              3: {type: "state"}, 4: {type: "button"}},
                 dependencies: [event({id: 7, targets: [[4, "click"]], inputs: [1, 2, 3],
                                       js: "(...args) => { args[1] = 'view'; return args; }"})]};
  const client = page(table, server);
  client.trigger(4, "click");
  await tick();
  assert.equal(server.joins.length, 1);
  const {url, body} = server.joins[0];
  assert.equal(url, "http://x/app/gradio_api/queue/join?text=Hallo");  // a link's handlers read its query
  assert.deepEqual(body, {data: ["Hallo", "view", null], event_data: null, fn_index: 7, trigger_id: 4,
                          session_hash: client.session});
  assert.ok(server.streams.some((s) => s.url === `http://x/app/gradio_api/queue/data?session_hash=${client.session}`));
  server.send({msg: "process_completed", event_id: "e1", success: true, output: {data: []}});
});

test("a generator's outputs come as diffs of the last; an update sets only what it names; the end runs .then",
     async () => {
  const server = fakeServer();
  const table = {components: {1: {type: "textbox", value: ""}, 2: {type: "json", value: null},
                              4: {type: "button"}, 9: {type: "textbox", value: ""}},
                 dependencies: [event({id: 0, targets: [[4, "click"]], outputs: [1, 2]}),
                                event({id: 1, targets: [[null, "then"]], trigger_after: 0, backend_fn: false,
                                       js: "(...args) => 'after'", outputs: [9]})]};
  const client = page(table, server);
  client.trigger(4, "click");
  await tick();
  server.send({msg: "process_generating", event_id: "e1", output: {data: ["The", {n: 1}]}});
  assert.equal(client.get(1), "The");
  server.send({msg: "process_generating", event_id: "e1",
               output: {data: [[["append", [], " dog"]], [["replace", ["n"], 2]]]}});
  assert.equal(client.get(1), "The dog");
  assert.deepEqual(client.get(2), {n: 2});
  assert.equal(client.get(9), "");
  server.send({msg: "process_completed", event_id: "e1", success: true, output: {data: ["The dog", {n: 2}]}});
  await tick();
  assert.equal(client.get(9), "after");
  assert.equal(client.pending(), 0);
});

test("a message that comes before its join's answer is kept for it", async () => {
  const server = fakeServer(), client = oneButton(server);
  // a stream already open from an earlier event
  client.trigger(4, "click");
  await tick();
  server.send({msg: "process_completed", event_id: "e1", success: true, output: {data: ["one"]}});
  await tick();
  server.onJoin = (id) => server.send({msg: "process_completed", event_id: id, success: true,
                                       output: {data: ["two"]}});
  client.trigger(4, "click");
  await tick();
  await tick();
  assert.equal(client.get(1), "two");
});

test("a State the server changed fires its change events; a JSON output fires its own", async () => {
  const server = fakeServer();
  const seen = [];
  globalThis.seen = seen;
  const table = {components: {1: {type: "json", value: null}, 3: {type: "state"}, 4: {type: "button"}},
                 dependencies: [event({id: 0, targets: [[4, "click"]], outputs: [1, 3]}),
                                event({id: 1, targets: [[3, "change"]], backend_fn: false,
                                       js: "(...args) => { globalThis.seen.push('state'); }"}),
                                event({id: 2, targets: [[1, "change"]], inputs: [1], backend_fn: false,
                                       js: "(...args) => { globalThis.seen.push(args[0].sent); }"})]};
  const client = page(table, server);
  client.trigger(4, "click");
  await tick();
  server.send({msg: "process_completed", event_id: "e1", success: true,
               output: {data: [{sent: 1}, null], changed_state_ids: [3]}});
  await tick();
  assert.deepEqual(seen, [1, "state"]);
  delete globalThis.seen;
});

test("trigger modes: once ignores a click while it runs, multiple sends each, always_last runs the last again",
     async () => {
  const server = fakeServer();
  const table = {components: {4: {type: "button"}, 5: {type: "button"}, 6: {type: "button"}},
                 dependencies: [event({id: 0, targets: [[4, "click"]]}),
                                event({id: 1, targets: [[5, "click"]], trigger_mode: "multiple"}),
                                event({id: 2, targets: [[6, "click"]], trigger_mode: "always_last"})]};
  const client = page(table, server);
  for (const id of [4, 4, 5, 5, 6, 6, 6]) client.trigger(id, "click");
  await tick();
  assert.deepEqual(server.joins.map((j) => j.body.fn_index), [0, 1, 1, 2]);
  server.send({msg: "process_completed", event_id: "e4", success: true, output: {data: []}});
  await tick();
  await tick();
  assert.deepEqual(server.joins.map((j) => j.body.fn_index), [0, 1, 1, 2, 2]);
  for (const id of ["e1", "e2", "e3", "e5"]) {
    server.send({msg: "process_completed", event_id: id, success: true, output: {data: []}});
    await tick();
  }
  assert.equal(client.pending(), 0);
});

test("a failed event says why and runs .then but not .success; a full queue says it is busy", async () => {
  const server = fakeServer(), toasts = [];
  globalThis.ran = [];
  const table = {components: {4: {type: "button"}},
                 dependencies: [event({id: 0, targets: [[4, "click"]]}),
                                event({id: 1, targets: [[null, "success"]], trigger_after: 0, backend_fn: false,
                                       trigger_only_on_success: true, js: "() => globalThis.ran.push('success')"}),
                                event({id: 2, targets: [[null, "then"]], trigger_after: 0, backend_fn: false,
                                       js: "() => globalThis.ran.push('then')"})]};
  const client = page(table, server, toasts);
  client.trigger(4, "click");
  await tick();
  server.send({msg: "process_completed", event_id: "e1", success: false, output: {error: "Translate first."}});
  await tick();
  assert.deepEqual(globalThis.ran, ["then"]);
  assert.deepEqual(toasts, [["error", "Translate first."]]);

  const busy = fakeServer({status: 503}), said = [];
  page(table, busy, said).trigger(4, "click");
  await tick();
  await tick();
  assert.deepEqual(said, [["error", BUSY]]);
  delete globalThis.ran;
});

test("a closed stream is opened again for the events still waiting", async () => {
  const server = fakeServer(), client = oneButton(server);
  client.trigger(4, "click");
  await tick();
  const queues = () => server.streams.filter((s) => s.url.includes("queue/data"));
  assert.equal(queues().length, 1);
  server.send({msg: "close_stream"});
  assert.equal(queues().length, 2);
  assert.equal(queues()[0].readyState, 2);
  server.send({msg: "process_completed", event_id: "e1", success: true, output: {data: ["done"]}});
  await tick();
  assert.equal(client.get(1), "done");
});

test("new choices keep the value shown and fire no change; a new value does", async () => {
  const server = fakeServer();
  // a dropdown whose select shows its first option once its options are replaced, as a browser's
  const select = {value: "en-de", options: [], replaceChildren(...options) {
    this.options = options;
    this.value = options[0]?.value ?? "";
  }};
  const element = {querySelector: (q) => (q === "select" ? select : null), hidden: false};
  globalThis.changed = 0;
  const doc = {defaultView: {location: {href: "http://x/", search: ""}},
               querySelector: (q) => (q === '[data-block="4"]' ? element : null), getElementById: () => null,
               createElement: () => ({})};
  const table = {components: {4: {type: "dropdown", value: "en-de", choices: [["de-en", "de-en"], ["en-de", "en-de"]]},
                              5: {type: "button"}},
                 dependencies: [event({id: 0, targets: [[5, "click"]], outputs: [4]}),
                                event({id: 1, targets: [[4, "change"]], backend_fn: false,
                                       js: "() => { globalThis.changed += 1; }"})]};
  const client = createClient(/** @type {any} */ (doc), table, {fetch: server.fetch,
                                                                EventSource: server.EventSource, toast: () => {}});
  client.trigger(5, "click");
  await tick();
  server.send({msg: "process_completed", event_id: "e1", success: true, output: {data: [
    {__type__: "update", choices: [["de-en", "de-en"], ["fr-en", "fr-en"], ["en-de", "en-de"]]}]}});
  await tick();
  assert.equal(client.get(4), "en-de");
  assert.equal(globalThis.changed, 0);
  client.trigger(5, "click");
  await tick();
  server.send({msg: "process_completed", event_id: "e2", success: true, output: {data: [
    {__type__: "update", value: "fr-en"}]}});
  await tick();
  assert.equal(client.get(4), "fr-en");
  assert.equal(globalThis.changed, 1);
  delete globalThis.changed;
});

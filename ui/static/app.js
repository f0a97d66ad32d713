// The app's part of the page (ui/document.py): the viewer's page (anatomy/viewer/page.js, made with the page's look:
// `pages`), given what only the Gradio app does, and the page's client of the server (ui/static/client.js: `clients`,
// on the events' `table`). An ask clicks a hidden button (ui/layout.py model_ask, draw_ask, export_ask, example_ask)
// whose event reads the view (`viewed`) and answers through `data` (an example: through the form); the events'
// browser-side parts call window.anatomy.*.
(pages, clients, options, table) => {
  const client = clients.createClient(document, table);
  // What the viewer asks the server (ui/handlers/asks.py ask_model, ask_draw; files.py animate_page): each ask waits
  // in its kind's line for the event its click starts, which takes it with the view (viewed).
  const asks = {model: [], draw: [], export: [], example: []};
  // a link's text: its page draws its figures with its translation, not placeholders first (they would take the
  // main thread from its own drawing): held until the link's answer (data) or for 5 s (opened)
  const query = new URLSearchParams(window.location.search), text = (query.get('text') || '').trim();
  const A = window.anatomy = pages.createPage(document, Object.assign({}, options, {held: !!text, server: {
    ask(name) {
      const kind = Object.keys(asks).find(k => A.offer.asks[k].includes(name)) || 'draw';  // ui/values.py ASKS
      asks[kind].push(name);
      document.getElementById(kind + '-ask')?.click();
    },
  }}));
  // an example (ui/layout.py examples_html): put in the form and translated by the server (ui/handlers/shown.py)
  document.addEventListener('click', (e) => {
    const button = e.target.closest && e.target.closest('[data-example]');
    if (!button) return;
    A.example = Number(button.dataset.example);
    A.ask('example');
  });
  // the answer to the page's first ask (a link's or an address's: each opens its view) shows what its address asks
  const data = A.data;
  A.data = (d) => {
    const opens = !!d && 'open' in d;
    if (opens) A.viewer.hold(false);
    data(d);
    if (opens) A.loaded = true;
  };
  Object.assign(A, {
    // The viewer's view, for an event that reads it (ui/wiring.py reading_view), with the first ask of `kind`.
    viewed(kind) {
      return JSON.stringify(Object.assign(A.state(), {ask: (kind && asks[kind].shift()) || '', example: A.example}));
    },
    // The page's first event: the link's settings and translation when its address has text (one model event),
    // else the settings its address names (ui/wiring.py); every request carries the address (client.js). A
    // plain address asks nothing when the page as built is its page (offer.settled: no Hub model still loading).
    // `loaded`: the page shows what its address asks for (the browser tests wait for it).
    opened() {
      // a link whose translation never comes leaves placeholders in 5 s
      if (text) setTimeout(() => { A.viewer.hold(false); A.draw(); }, 5000);
      const plain = A.mount() && A.offer.settled && ![...query.keys()].length;
      if (!plain) A.ask(text ? 'link' : 'address');
      // Plotly.js: a link's is fetched with the page (ui/__init__.py plotly_early) and run once its answer is shown
      // (its ~0.5 s of evaluating would hold the answer back); any other page's once the page is idle, after the
      // address's answer, so that it never holds the page's first drawing
      if (!text) A.preloading = true;
      if (plain) A.data({});
      A.loaded = plain;
    },
    // Download trace (JSON), Download page (HTML): the server puts the new file in #id; a click on its link saves
    // it, so that one click on the button downloads the file. Each file has an address of its own: an earlier one is
    // never clicked again.
    save(id) {
      const asked = Date.now();
      const look = () => {
        const a = document.querySelector('#' + id + ' a[download]');
        if (a && a.href !== A.saved) {
          A.saved = a.href;
          a.click();
        } else if (Date.now() - asked < 10000) {
          setTimeout(look, 100);
        }
      };
      look();
    },
  });
  A.client = client;
  client.start();
}

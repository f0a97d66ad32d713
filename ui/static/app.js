// Transformer Anatomy in the browser: the viewer's drawing and view controls, presenter mode, keyboard stepping,
// figure export, share links and the guided tour. Loaded once with the page (launch(js=...), after the viewer's
// bundle, which made `viewer`: anatomy/viewer/host.js, `controls`: controls.js (the view controls and keys),
// `tabbed`: tabs.js (the tabs and their own controls), `screens`: screen.js (the figures' fitting, presenter mode,
// the line view's hover, export) and `tours`: tour.js); the page's events call window.anatomy.*.
(viewer, controls, tabbed, screens, tours) => {
  // Gradio's plots and the viewer's boxes; a click on a head switches it off or on (a model event: toggle)
  const screen = screens.createScreen(document, {
    figures: '[data-testid=plotly]',
    refresh: () => viewer.refresh(),
    head(named) {
      A.clickedHead = named;
      A.toggled = true;
      A.ask('toggle');
      return true;
    },
  });
  const A = window.anatomy = {
    viewer, screen,
    // The data an event sent (ui/wiring.py `handled`), by channel: the viewer draws what changed (anything not in
    // view, once it comes into view: scan); a new translation fits the view controls and opens at its own view; the
    // open tab's own data, a view a handler opens and a tour follow.
    data(d) {
      if (!d) return;
      if (A.preloading) {
        A.preloading = false;
        (window.requestIdleCallback || setTimeout)(() => viewer.preload(), {timeout: 2000});
      }
      const before = viewer.version('payload');
      const drawn = ['payload', 'twin', 'walk', 'positional', 'importance', 'explain', 'norms'].filter(n => n in d);
      drawn.forEach(name => viewer.set(name, d[name]));
      const view = A.mount();
      const {payload, importance, positional} = d;
      if (payload && viewer.version('payload') !== before) {
        A.shape = controls.shapeOf(payload);
        A.kinds = payload.kinds.map(k => ({name: k.name, label: k.label}));
        view.fit(A.shape);
        if (payload.opens_at) view.set(payload.opens_at);
      }
      // Head importance's parts that are there only for some translations and models
      if ('importance' in d) {
        document.getElementById('log-probs').hidden = !(importance && importance.changes);
        document.getElementById('corpus-row').hidden = !(importance && importance.corpus);
      }
      // another model's encoding: its own default curves
      if (positional && positional.d_model !== A.dModel) {
        A.dModel = positional.d_model;
        A.tabView.dims = null;
        A.tabs.showDims(positional.dims);
      }
      // a tour is of one translation: another one on the page ends it
      if (A.guide && A.guide.isOpen() && JSON.stringify(A.tourData.of) !== viewer.shownKey()) A.guide.close();
      if (drawn.length) A.changed(view.view());
      if ('tab' in d) A.tabData(d.tab);
      if ('open' in d) A.open(d.open);
      if ('tour' in d) A.tour(d.tour);
      if ('link' in d) A.shared(d.link);
    },
    // A link to the shown view (its query from the server: ui/handlers/shown.py share), over the page, with Copy.
    shared(query) {
      const box = document.getElementById('share-url');
      box.querySelector('textarea').value = A.link(query);
      box.hidden = false;
    },
    // The view controls (controls.js), made in the page's #view-controls once Gradio has drawn it, offering before a
    // translation what the page says there (ui/layout.py explorer_html).
    mount() {
      if (A.view) return A.view;
      const root = document.getElementById('view-controls');
      A.offer = JSON.parse(root.dataset.offer);
      A.shape = A.offer.shape;
      A.view = controls.createControls(root, {walk: true, weights: A.offer.weights, shape: A.shape,
                                              changed: A.changed});
      const redraw = () => A.changed(A.view.view());
      A.tabs = tabbed.createTabs(document.getElementById('anatomy-tabs'), {
        opened: A.openedTab,
        openHead: v => { A.open(v); A.reveal('heatmap'); },
        dims: dims => { A.tabView.dims = dims; redraw(); },
        method: method => { A.tabView.method = method; redraw(); },
        contrast: foil => { A.foil = foil; A.ask('contrast'); },
      });
      controls.bindKeys(document, A.view, {v: () => screen.on && A.toggleView()});
      const $ = id => document.getElementById(id);
      $('view-toggle').addEventListener('click', () => A.toggleView());
      // the header's tools (ui/layout.py header_html): presenter mode, a figure's export, the animation's
      const presenter = $('presenter').querySelector('input');
      presenter.addEventListener('change', () => A.presenter(presenter.checked));
      for (const format of ['png', 'svg']) {
        $('export-' + format).addEventListener('click', () => A.exportFigure(
          $('export-figure').value, format, $('export-frame').checked, $('export-wide').checked));
      }
      $('share').addEventListener('click', () => A.ask('share'));
      $('share-url').addEventListener('click', e => {
        const act = e.target.dataset && e.target.dataset.do, box = $('share-url');
        if (act === 'copy') navigator.clipboard?.writeText(box.querySelector('textarea').value);
        if (act === 'close') box.hidden = true;
      });
      $('animation-make').addEventListener('click', () => {
        A.animation = {layout: $('animation-layout').value, size: $('animation-size').value,
                       seconds: Number($('animation-seconds').value), suffix: $('animation-format').value};
        A.ask('animation');
      });
      A.changed(A.view.view());
      return A.view;
    },
    // The view as the controls show it (with the tabs' own: the positional encoding's dimensions, the attribution
    // method): drawn, and its kind's help shown.
    changed(v) {
      viewer.view(Object.assign({}, v, A.tabView));
      const help = document.getElementById('kind-help');
      if (help && A.offer) help.innerHTML = A.offer.help[v.kind] || '';
      // the all-heads picker offers the shown kind's heads
      const kind = A.shape.kinds.find(k => k.name === v.kind);
      const picks = kind && `${kind.layers}:${kind.heads}`;
      if (picks && picks !== A.picks) {
        A.picks = picks;
        A.tabs.pickHeads(kind.layers, kind.heads);
      }
      A.draw();
    },
    // The tabs' own view controls: Positional encoding's dimensions, Why this word's method.
    tabView: {dims: null, method: null},
    // A tab opened: its contents asked for, after what it shows of a model (the untrained twin, head importance,
    // why each piece: a model event) when it needs one.
    openedTab(tab) {
      const button = document.querySelector(`#anatomy-tabs [role=tab][data-tab="${tab}"]`);
      A.ask(button && button.hasAttribute('data-model') ? 'make' : 'tab');  // ui/values.py Tab.needs_model
      A.draw();
    },
    // The open tab's tables, texts and server-drawn figures (ui/handlers/shown.py `_tab`), each kept until replaced.
    tabData(d) {
      if (!d) return;
      const html = {importance_list: 'importance-list', compare: 'compare-text', card: 'model-card',
                    training_card: 'training-card'};
      for (const [key, id] of Object.entries(html)) {
        if (key in d) document.getElementById(id).innerHTML = d[key];
      }
      if (d.stats) A.tabs.stats(d.stats, A.kinds || []);
      if (d.figures) {
        A.figures = Object.assign({}, A.figures, d.figures);
        viewer.set('figures', A.figures);
      }
      A.draw();
    },
    // What the viewer asks the server (ui/handlers/asks.py ask_model, ask_draw): each ask waits in its kind's line for
    // the event its click starts, which takes it with the view (viewed).
    asks: {model: [], draw: [], export: []},
    ask(name) {
      A.mount();
      const kind = Object.keys(A.asks).find(k => A.offer.asks[k].includes(name)) || 'draw';  // ui/values.py ASKS
      A.asks[kind].push(name);
      document.getElementById(kind + '-ask')?.click();
    },
    // A model's answer came: after a click on a head, the comparison where the visitor looks, and Why this word of
    // the new translation when its tab is open.
    answered() {
      if (!A.toggled) return;
      A.toggled = false;
      A.echo('ablation');
      A.explainIfOpen();
    },
    // A view a handler opens (a link, a head picked below): the controls set, then drawn.
    open(v) {
      if (!v) return;
      // `asked`: a new value each time, so that the same view opens again; `presenter`: a link's
      const {asked, presenter, ...fields} = v;
      const view = A.mount();
      if (presenter !== undefined) {
        document.querySelector('#presenter input').checked = presenter;
        A.presenter(presenter);
      }
      view.set(fields);
      A.changed(view.view());
    },
    // The viewer's view, for an event that reads it (ui/wiring.py reading_view), with the first ask of `kind`.
    viewed(kind) {
      return JSON.stringify(Object.assign(A.mount().view(), {
        tab: A.tabs.open(), foil: A.foil || '', animation: A.animation || {}, clicked: A.clickedHead || '',
        ask: (kind && A.asks[kind].shift()) || ''}));
    },
    // The tour the server made (anatomy/payload.py tour_payload), opened at its start stop; each stop opens its
    // tab and view.
    tour(data) {
      if (!data || !data.stops) return;
      A.tourData = data;
      A.guide = A.guide || tours.createTour(document, {
        apply: v => A.applyView(v),
        target: name => document.getElementById(name),
        link: k => A.tourData.query
          ? A.link(A.tourData.query + '&tour=' + k) + (screen.on ? '&presenter=1' : '') : '',
      });
      A.guide.open(data, data.start);
    },
    applyView(v) {
      A.mount();
      A.tabs.select(v.tab);
      A.open({kind: v.kind, layer: v.layer, head: v.head, step: v.step, display: v.display});
    },
    // One drawing for the changes that come in one task (the viewer reads a new translation's own step, layer and
    // head from its payload: their controls' own change events may come later and then change nothing).
    draw() {
      if (!A.drawing) A.drawing = Promise.resolve().then(() => { A.drawing = null; A.scan(); });
    },
    // Presenter mode (a talk must not wait on the server): the page's class and every figure's type and margins
    // scaled (screen.js); the first call starts fitting the figures, whenever one is replaced or the page changes.
    presenter: screen.presenter,
    // Presenter mode's view controls, folded away so that the first screen holds the large view: shown or folded.
    toggleView() {
      document.body.classList.toggle('anatomy-view-open');
    },
    // what the viewer's Plotly.js (once loaded) and the export buttons call
    scan: screen.scan,
    exportFigure: screen.exportFigure,
    // A new translation while Why this word is open: ask for its explanation (a model event, only then: a closed
    // tab sends the server nothing).
    explainIfOpen() {
      if (A.tabs && A.tabs.open() === 'why') A.ask('make');
    },
    // A click far below that opened a head in the large view: the view comes into sight, with a flash.
    reveal(id) {
      const el = document.getElementById(id);
      if (!el) return;
      const r = el.getBoundingClientRect();
      if (r.top < 0 || r.bottom > window.innerHeight) el.scrollIntoView({behavior: 'smooth', block: 'start'});
      el.classList.remove('anatomy-flash');
      void el.offsetWidth;  // the animation starts again
      el.classList.add('anatomy-flash');
    },
    // Heads switched off or on by a click far below (All heads, Head importance): the comparison beside the view,
    // when out of sight, also at the bottom of the window for a while, with a way up to it.
    echo(id) {
      const el = document.getElementById(id), r = el && el.getBoundingClientRect();
      if (!el || (r.height && r.bottom > 0 && r.top < window.innerHeight)) return;
      const shown = el.querySelectorAll('.anatomy-ablation > p');
      const translation = (document.querySelector('#translation textarea') || {value: ''}).value;
      if (!shown.length && !translation) return;
      const note = document.getElementById('anatomy-echo') || document.body.appendChild(
        Object.assign(document.createElement('div'), {id: 'anatomy-echo', role: 'status'}));
      const parts = shown.length ? Array.from(shown).slice(0, 2).map(p => p.cloneNode(true))
        : [Object.assign(document.createElement('p'), {textContent: 'Every head on again: ' + translation})];
      const up = Object.assign(document.createElement('button'), {textContent: 'Show beside the view'});
      up.onclick = () => { note.remove(); A.reveal(el.offsetHeight ? id : 'translation'); };
      note.replaceChildren(...parts, up);
      clearTimeout(A.echoTimer);
      A.echoTimer = setTimeout(() => note.remove(), 9000);
    },
    // The page's own address + the query built on the server: a link that works behind any proxy or Space.
    link(query) {
      return query ? window.location.origin + window.location.pathname + query : '';
    },
    // The page's first event: the link's settings and translation when its address has text (one model event),
    // else the settings its address names (ui/wiring.py); every request carries the address, as Gradio's do.
    opened() {
      A.mount();
      const text = (new URLSearchParams(window.location.search).get('text') || '').trim();
      A.ask(text ? 'link' : 'address');
      // Plotly.js (3.5 MB) parsed while the link's translation is made; for any other page once the page is idle,
      // after the address's answer, so that it never holds the page's first drawing
      if (text) viewer.preload();
      else A.preloading = true;
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
  };
  A.presenter(false);  // starts watching the figures: the narrow (phone) layout applies outside presenter mode too
}

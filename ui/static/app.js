// Transformer Anatomy in the browser: the viewer's drawing, presenter mode, keyboard stepping, figure export, share
// links and the guided tour, through the page's Gradio controls. Loaded once with the page (launch(js=...), after the
// viewer's bundle, which made `viewer`: anatomy/viewer/host.js, `screens`: screen.js (the figures' fitting, presenter
// mode, the line view's hover, export) and `tours`: tour.js; `tabs`: each tab's name by its id); the page's events
// call window.anatomy.*.
(viewer, screens, tours, tabs) => {
  // Gradio's plots and the viewer's boxes; a click on a head switches it off or on through the toggle-head button
  const screen = screens.createScreen(document, {
    figures: '[data-testid=plotly]',
    refresh: () => viewer.refresh(),
    head(named) {
      const button = document.querySelector('#toggle-head');
      if (!button) return false;
      A.clickedHead = named;
      button.click();
      return true;
    },
  });
  const A = window.anatomy = {
    viewer, screen,
    // The data the server sent and the view controls, in ui/wiring.py `viewed`'s order: the viewer draws what
    // changed (anything not in view, once it comes into view: scan).
    data(payload, twin, walk, positional, importance, explain, norms) {
      Object.entries({payload, twin, walk, positional, importance, explain, norms})
        .forEach(([name, value]) => viewer.set(name, value));
      // a tour is of one translation: another one on the page ends it
      if (A.guide && A.guide.isOpen() && JSON.stringify(A.tourData.of) !== viewer.shownKey()) A.guide.close();
      A.draw();
    },
    // The tour the server made (anatomy/payload.py tour_payload), opened at its start stop; each stop sets the
    // view's controls as a visitor would, so that the page and its links follow.
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
      const tab = Array.from(document.querySelectorAll('button[role=tab]'))
        .find(b => b.textContent.trim() === tabs[v.tab]);
      if (tab && tab.getAttribute('aria-selected') !== 'true') tab.click();
      // the layer before the kind: the kind's own event fits the layer slider to its layers, reading it then
      A.setSlider('layer', v.layer);
      A.setRadio('head', v.head);
      A.setSlider('step', v.step);
      A.setRadio('kind', v.kind);
      A.setRadio('display', v.display);
    },
    setRadio(id, value) {
      const input = Array.from(document.querySelectorAll('#' + id + ' input[type=radio]'))
        .find(i => i.value === String(value));
      if (input && !input.checked) input.click();
    },
    setSlider(id, value) {
      const r = document.querySelector('#' + id + ' input[type=range]');
      if (!r || Number(r.value) === Number(value)) return;
      r.value = value;
      r.dispatchEvent(new Event('input', {bubbles: true}));
    },
    view(kind, layer, head, merge, step, plain, hide, display, query, dims, method, weights) {
      viewer.view({kind, layer, head, merge, step, plain, hide, display, query, dims, method, weights});
      // the walk's query control, only for a walk: a source piece for the encoder's, the decoding step for others
      document.body.dataset.walk = display !== 'walk' ? '' : kind === 'encoder' ? 'query' : 'step';
      A.draw();
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
      if (document.querySelector('#why-step .anatomy-plot')?.offsetParent) {
        document.querySelector('#explain-ask')?.click();
      }
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
    // Keyboard stepping: a slider moved as if dragged (its input event redraws), a head radio as if clicked.
    nudge(id, delta) {
      const r = document.querySelector('#' + id + ' input[type=range]');
      if (r) A.setSlider(id, Math.min(Math.max(Number(r.value) + delta, Number(r.min)), Number(r.max)));
    },
    nextHead(delta) {
      const radios = Array.from(document.querySelectorAll('#head input[type=radio]'));
      const i = radios.findIndex(r => r.checked), j = Math.min(Math.max(i + delta, 0), radios.length - 1);
      if (radios.length && j !== i) radios[j].click();
    },
    keys: {ArrowLeft: () => A.nudge('step', -1), ArrowRight: () => A.nudge('step', 1),
           '[': () => A.nudge('layer', -1), ']': () => A.nudge('layer', 1),
           ',': () => A.nextHead(-1), '.': () => A.nextHead(1), v: () => screen.on && A.toggleView()},
    // The page's own address + the query built on the server: a link that works behind any proxy or Space.
    link(query) {
      return query ? window.location.origin + window.location.pathname + query : '';
    },
    // The page's first event: the link's settings and translation when its address has text (one model event),
    // else the settings its address names (ui/wiring.py); every request carries the address, as Gradio's do.
    opened() {
      const text = (new URLSearchParams(window.location.search).get('text') || '').trim();
      document.querySelector(text ? '#link-ask' : '#address-ask')?.click();
    },
    // Download page (HTML): the server puts the new file in #id; a click on its link saves it, so that one click on
    // the button downloads the page. Each file has an address of its own: an earlier one is never clicked again.
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
  document.addEventListener('keydown', e => {
    const t = e.target, act = A.keys[e.key];
    if (!act || e.ctrlKey || e.metaKey || e.altKey || !t.matches) return;
    // typing stays typing; sliders and radios move themselves on arrow keys
    if (t.matches('textarea, select, [contenteditable], input:not([type=checkbox]):not([type=radio])'
                  + ':not([type=range]):not([type=button])')) return;
    if (e.key.startsWith('Arrow') && t.matches('input[type=radio], input[type=range]')) return;
    e.preventDefault();
    act();
  });
  A.presenter(false);  // starts watching the figures: the narrow (phone) layout applies outside presenter mode too
}

// Transformer Anatomy in the browser: the viewer's drawing, presenter mode, keyboard stepping, figure export, share
// links, the line view's hover and the guided tour. Loaded once with the page (launch(js=...), after the viewer's
// bundle, which made `viewer`: anatomy/viewer/host.js, `fit`: fit.js, and `tours`: tour.js; `tabs`: each tab's name
// by its id); the page's events call window.anatomy.*.
(viewer, fit, tours, tabs) => {
  const STEP_FRAME = 'step-frame';  // viz/attention.py names the orange step frame so
  const NARROW = 560;  // px: a figure narrower than this (a phone) gets small margins and short labels
  const A = window.anatomy = {
    scale: 1.5, on: false, viewer,
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
        link: k => A.tourData.query ? A.link(A.tourData.query + '&tour=' + k) + (A.on ? '&presenter=1' : '') : '',
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
    // Presenter mode (a talk must not wait on the server): toggles the page's class and scales every Plotly
    // figure's fonts and margins by `scale`, figures no taller than the window (the large view exactly as tall),
    // re-applied whenever a figure is replaced or the window resized.
    presenter(on) {
      A.on = !!on;
      document.body.classList.toggle('anatomy-presenter', A.on);
      if (!A.observer) {
        // new figures, and tabs coming into view (a class or style change), get the current mode, once per frame;
        // Plotly's drawing changes its own figures' insides by the hundred, which never needs a fit
        A.observer = new MutationObserver(records => {
          if (records.some(r => !r.target.closest('.js-plotly-plot')) && !A.frame) {
            A.frame = requestAnimationFrame(() => { A.frame = 0; A.scan(); });
          }
        });
        A.observer.observe(document.body, {childList: true, subtree: true, attributes: true,
                                           attributeFilter: ['class', 'style']});
        window.addEventListener('resize', () => A.scan());
      }
      A.scan();
      window.dispatchEvent(new Event('resize'));
    },
    // Presenter mode's view controls, folded away so that the first screen holds the large view: shown or folded.
    toggleView() {
      document.body.classList.toggle('anatomy-view-open');
    },
    // A figure's base values, from its own layout (before any mode changed it), else Plotly's defaults (the
    // template's font; titles 1.4 times the font; margins 80/80/100/80).
    base(data, layout) {
      const {font, l, r, t, b} = fit.frameOf(layout);
      return {font, title: layout.title?.font?.size ?? Math.round(font * 1.4), height: layout.height ?? 450, l, r, t, b,
              notes: (layout.annotations || []).map(a => a.font?.size ?? font),
              text: data.map(t => t.textfont?.size || null), colorbars: data.map(t => t.colorbar || null),
              cells: data.map(t => A.cellText(t, layout)),
              xangle: layout.xaxis?.tickangle,
              // sizes a figure sets on its own axes (small multiples), else the layout's font's
              axes: Object.keys(layout).filter(key => /^[xy]axis\d*$/.test(key)).flatMap(key => [
                [key + '.tickfont.size', layout[key].tickfont?.size],
                [key + '.title.font.size', layout[key].title?.font?.size]]).filter(([, size]) => size),
              y: fit.ticksOf(layout.yaxis), x: fit.ticksOf(layout.xaxis),
              ytitle: layout.yaxis ? layout.yaxis.title?.text ?? '' : undefined, titleText: layout.title?.text};
    },
    // A heatmap's cell text: its longest line in characters and the share of the plot's width one cell takes
    // (the text grows in presenter mode only as far as its cells hold it).
    cellText(t, layout) {
      if (t.type !== 'heatmap' || !t.texttemplate || !Array.isArray(t.z) || !Array.isArray(t.z[0])) return null;
      const domain = (layout['xaxis' + (t.xaxis || 'x').slice(1)] || {}).domain || [0, 1];
      const lines = (Array.isArray(t.text) ? t.text.flat() : []).flatMap(s => String(s).split('<br>'));
      return {chars: Math.max(4, ...lines.map(s => s.replace(/<[^>]*>/g, '').length)),
              share: (domain[1] - domain[0]) / t.z[0].length};
    },
    // The layout changes for a mode: presenter (k = scale) and/or narrow, from the figure's own base values; `width`
    // the figure's (for its x labels).
    sized(b, k, height, narrow, width) {
      const u = {'font.size': b.font * k, 'title.font.size': b.title * k, height,
                 'margin.l': b.l * k, 'margin.r': b.r * k, 'margin.t': b.t * k, 'margin.b': b.b * k};
      b.notes.forEach((size, i) => { u['annotations[' + i + '].font.size'] = size * k; });
      b.axes.forEach(([path, size]) => { u[path] = size * k; });
      // large type or narrow: upright labels stand one per column, where slanted ones run into their neighbours
      if (b.xangle !== undefined) u['xaxis.tickangle'] = k > 1 || narrow ? -90 : b.xangle;
      if (narrow) {
        Object.assign(u, {'font.size': 10, 'margin.l': Math.min(b.l, 84), 'margin.r': Math.min(b.r, 10),
                          'margin.b': Math.min(b.b, 90)});
      }
      // a title wider than its figure takes more lines (broken at its ' · '), each widening the top margin
      if (typeof b.titleText === 'string' && width) {
        const text = fit.titleLines(b.titleText, 0.97 * width - 10, u['title.font.size']);
        const added = text.split('<br>').length - b.titleText.split('<br>').length;
        u['title.text'] = text;
        u['margin.t'] += Math.round(1.25 * u['title.font.size'] * added);
      }
      // narrow: no room beside the labels for the y title (labels are cut whole: no half HTML entity); else as many
      // lines of it as its axis's height takes (a second line widens the margin by one)
      if (b.ytitle !== undefined) {
        const text = narrow ? '' : fit.titleFitted(b.ytitle, height - u['margin.t'] - u['margin.b'], u['font.size']);
        u['yaxis.title.text'] = text;
        if (text.includes('<br>') && !b.ytitle.includes('<br>')) u['margin.l'] += Math.round(1.2 * u['font.size']);
      }
      Object.assign(u, fit.labelsFitted({x: b.x, y: b.y, angle: u['xaxis.tickangle'] ?? b.xangle,
                                         colorbar: b.colorbars.some(Boolean)},
        {height, width, font: u['font.size'], least: 10 * (narrow ? 1 : k), narrow,
         margin: {l: u['margin.l'], r: u['margin.r'], t: u['margin.t'], b: u['margin.b']}}));
      return u;
    },
    // Where a figure is drawn: presenter mode or not, narrow (a phone) or not, and the height it may take.
    modeOf(gd) {
      const narrow = gd.parentElement.clientWidth < NARROW, room = Math.max(360, window.innerHeight - 24);
      const large = !!gd.closest('#heatmap'), top = gd.getBoundingClientRect().top + window.scrollY;
      // the large view beside the settings ends above the fold (the window's first screen)
      const fold = large && top < 0.6 * window.innerHeight ? Math.max(360, window.innerHeight - top - 16) : Infinity;
      const width = gd.parentElement.clientWidth;
      gd.anatomyModeOf = {key: [A.on, width, room, fold].join(), narrow, room, large, fold, width};
      return gd.anatomyModeOf;
    },
    // A figure's layout update (paths as Plotly.relayout takes them) and trace text sizes for a mode.
    update(gd, b, mode) {
      const k = A.on && !mode.narrow ? A.scale : 1;
      // presenter: the large view fills the first screen below its top (the window's height further down), others
      // at most the window's height but for those with text in their cells (a table, maps of numbers), whose rows
      // grow with their text; width: null drops the width fixed at first draw, so the figure fills its container
      // (the large view never taller than the window: a phone's is far below the fold)
      let height = !A.on ? Math.min(b.height, Math.round(mode.fold), mode.large ? mode.room : Infinity)
        : mode.large ? Math.round(Math.min(mode.fold, mode.room))
        : Math.min(Math.round(b.height * k), b.text.some(Boolean) ? Infinity : mode.room);
      // the fold never makes rows too low for their labels: a long sentence's view grows, up to the window
      if (!A.on && b.y) {
        height = Math.max(height, Math.min(b.height, mode.room, Math.round(b.y.vals.length * 11.5 + b.t + b.b)));
      }
      // narrow: a colorbar without its title and with every other tick leaves the plot its width
      const colorbars = b.colorbars.map(c => c && (mode.narrow ? Object.assign({}, c, {title: {text: ''}, thickness: 8},
        c.tickvals ? {tickvals: c.tickvals.filter((_, i) => i % 2 === 0)} : {}) : c));
      return {layout: Object.assign({autosize: true, width: null}, A.sized(b, k, height, mode.narrow, mode.width)),
              text: b.text.map((s, i) => s && A.textSize(s, k, b.cells[i], (mode.width - (b.l + b.r) * k))),
              colorbars};
    },
    // A trace's text size: k times its own, but no larger than its cells hold (0.6 em a character) nor smaller
    // than its own.
    textSize(size, k, cells, plotWidth) {
      if (!cells) return size * k;
      return Math.max(size, Math.min(size * k, Math.floor(plotWidth * cells.share / (0.62 * cells.chars))));
    },
    fit(gd) {
      if (!gd._fullLayout || !window.Plotly || !gd.offsetParent) return;  // hidden (another tab): when shown
      if (gd.layout !== gd.anatomyLayout) {
        gd.anatomyLayout = gd.layout; gd.anatomyBase = A.base(gd.data, gd.layout); gd.anatomyMode = null;
      }
      const mode = A.modeOf(gd);
      if (gd.anatomyMode === mode.key) return;
      gd.anatomyMode = mode.key;
      const {layout, text, colorbars} = A.update(gd, gd.anatomyBase, mode);
      const bars = colorbars.flatMap((c, i) =>
        c && gd.data[i] && JSON.stringify(gd.data[i].colorbar) !== JSON.stringify(c) ? [i] : []);
      if (A.holds(gd, layout) && !bars.length) return;
      Plotly.relayout(gd, layout).then(() => {
        if (bars.length) return Plotly.restyle(gd, {colorbar: bars.map(i => colorbars[i])}, bars);
      }).then(() => {
        if (text.some(s => s)) return Plotly.restyle(gd, {'textfont.size': text});
      }).catch(() => {});
    },
    // A new figure of the page, fitted to its mode before its first drawing (else it would be drawn twice).
    prefit(gd, data, layout) {
      if (!gd.matches('[data-testid=plotly]') || !gd.parentElement) return;
      // the figure's last mode: measuring its place now would lay the page out between two figures' drawings (the
      // fit after drawing measures it, and fits again where it changed); a figure never measured is measured, when
      // in view
      const mode = gd.anatomyModeOf || (gd.offsetParent && A.modeOf(gd));
      if (!mode) return;
      // the traces drawn now again (the viewer hands them over when equal): fitted already, and their base values
      // are the first drawing's
      const again = Array.isArray(gd.data) && data.length === gd.data.length && data.every((t, i) => t === gd.data[i]);
      const base = A.base(data, layout);
      if (again && gd.anatomyBase) {
        Object.assign(base, {text: gd.anatomyBase.text, colorbars: gd.anatomyBase.colorbars});
      }
      const {layout: u, text, colorbars} = A.update(gd, base, mode);
      Object.entries(u).forEach(([path, v]) => { if (v !== null) fit.put(layout, path, v); });
      if (!again) {
        text.forEach((size, i) => { if (size) data[i].textfont = Object.assign({}, data[i].textfont, {size}); });
        colorbars.forEach((c, i) => { if (c) data[i].colorbar = c; });
      }
      Object.assign(gd, {anatomyLayout: layout, anatomyBase: base, anatomyMode: mode.key});
    },
    // Once plotly.js is loaded (with the first figure): Gradio draws every new figure with Plotly.react and then
    // calls Plots.resize, which draws it all again 100 ms later. Fit the figure before the first drawing, and
    // skip the second when the figure already fills its box.
    wrap() {
      if (!window.Plotly || Plotly.anatomyWrapped) return;
      Plotly.anatomyWrapped = true;
      const react = Plotly.react, resize = Plotly.Plots.resize;
      Plotly.react = function (gd, data, layout) {
        if (gd instanceof Element && Array.isArray(data) && layout) A.prefit(gd, data, layout);
        return react.apply(this, arguments);
      };
      Plotly.Plots.resize = function (gd) {
        const f = gd instanceof Element && gd._fullLayout;
        if (f && gd.offsetParent && !gd.layout.width) {
          const box = getComputedStyle(gd);
          if (Math.abs(parseFloat(box.width) - f.width) <= 1 && Math.abs(parseFloat(box.height) - f.height) <= 1) {
            return Promise.resolve(gd);
          }
        }
        return resize.apply(this, arguments);
      };
    },
    // Whether a figure is drawn with every value of a layout update.
    holds(gd, u) {
      return Object.entries(u).every(([path, want]) => {
        if (path === 'width') return want === null && gd.layout.width == null;
        if (path === 'autosize') return gd.layout.autosize === want;
        const have = fit.pathKeys(path).reduce((o, key) => o && o[key], gd._fullLayout);
        return Array.isArray(want) ? Array.isArray(have) && want.length === have.length
          && want.every((v, i) => v === have[i]) : have === want;
      });
    },
    scan() {
      A.wrap();
      viewer.refresh();
      // the page's figures only, not the offscreen copies Plotly.toImage draws for an export
      document.querySelectorAll('.js-plotly-plot[data-testid=plotly]').forEach(gd => {
        if (!gd.anatomyHooked && gd.on) {
          gd.anatomyHooked = true;
          // in the next frame, once for every figure drawn in this task: a fit measures the page, which would
          // lay it out again after each figure
          gd.on('plotly_afterplot', () => {
            if (!A.frame) A.frame = requestAnimationFrame(() => { A.frame = 0; A.scan(); });
          });
          // line view (viz/lines.py): pointing at a piece keeps its lines; a click or tap pins that, another
          // click on it (or anywhere else) lets go
          // (a tap also makes Plotly report a hover and a click: the tap's own handler below answers it)
          const free = () => !gd.anatomyPinned && Date.now() - (gd.anatomyTouched || 0) > 800;
          gd.on('plotly_hover', e => { if (free()) A.keep(gd, e.points[0]); });
          gd.on('plotly_unhover', () => { if (free()) A.keep(gd, null); });
          gd.addEventListener('mouseleave', () => { if (free()) A.keep(gd, null); });
          gd.on('plotly_click', e => {
            if (A.toggleHead(e.points[0])) return;
            if (Date.now() - (gd.anatomyTouched || 0) > 800) A.pin(gd, e.points[0]);
          });
          // a tap: Plotly may not report it as a click, so the nearest piece is found here
          gd.addEventListener('touchend', e => {
            const t = e.changedTouches[0], p = t && A.nearestPiece(gd, t.clientX, t.clientY);
            if (p) { gd.anatomyTouched = Date.now(); A.pin(gd, p); }
          }, {passive: true});
        }
        A.fit(gd);
      });
    },
    // A head's thumbnail (its trace's meta) or map cell (its customdata) names it as "head=cross:1.2"
    // (viz/attention.py, viz/importance.py): a click switches it off or on, through the page's toggle-head button.
    toggleHead(point) {
      const named = [point && point.data && point.data.meta, point && point.customdata]
        .find(v => typeof v === 'string' && v.startsWith('head='));
      const button = document.querySelector('#toggle-head');
      if (!named || !button) return false;
      A.clickedHead = named.slice(5);
      button.click();
      return true;
    },
    pin(gd, point) {
      const key = point && A.pieceKey(point);
      gd.anatomyPinned = key && key !== gd.anatomyPinned ? key : null;
      A.keep(gd, gd.anatomyPinned ? point : null);
    },
    // The line view's query or key piece whose marker is nearest to a point of the screen (within 40 px).
    nearestPiece(gd, x, y) {
      let best = null, dist = 40;
      (gd._fullData || []).forEach(t => {
        if (t.meta !== 'queries' && t.meta !== 'keys') return;
        const layer = gd.querySelector('.scatterlayer .trace' + t.uid);
        (layer ? Array.from(layer.querySelectorAll('.point')) : []).forEach((el, i) => {
          const r = el.getBoundingClientRect(), d = Math.hypot(r.x + r.width / 2 - x, r.y + r.height / 2 - y);
          if (d < dist) { dist = d; best = {data: {meta: t.meta}, pointIndex: i}; }
        });
      });
      return best;
    },
    pieceKey(point) {
      const meta = point.data && point.data.meta;
      return meta === 'queries' || meta === 'keys' ? meta + ':' + point.pointIndex : null;
    },
    // Only the lines that start (queries) or end (keys) at the point's piece; every line again for null. Line
    // traces hold segments [query, key, gap] with y = -row, so a piece's lines are found by their end points.
    keep(gd, point) {
      const key = point && A.pieceKey(point);
      if (point && !key) return;
      // each line trace keeps its full points on itself (a restyle keeps the trace object; a new figure brings
      // new ones)
      const idx = gd.data.map((t, i) => t.meta === 'lines' ? i : -1).filter(i => i >= 0);
      if (!idx.length) return;
      const full = idx.map(i => {
        const t = gd.data[i];
        if (!t.anatomyFull) t.anatomyFull = {x: Array.from(t.x), y: Array.from(t.y)};
        return t.anatomyFull;
      });
      if (gd.anatomyKept === (key || '') && gd.anatomyKeptOf === gd.data[idx[0]]) return;
      gd.anatomyKept = gd.dataset.kept = key || '';
      gd.anatomyKeptOf = gd.data[idx[0]];
      gd.anatomyKeptEnd = point ? (point.data.meta === 'queries' ? 0 : 1) : null;
      gd.anatomyKeptRow = point ? -point.pointIndex : null;
      // one restyle at a time, each drawing the latest choice: quick pointer moves never leave an older one
      gd.anatomyRestyle = (gd.anatomyRestyle || Promise.resolve()).then(() => {
        if (gd.data[idx[0]] !== gd.anatomyKeptOf) return;  // a new figure came meanwhile
        const end = gd.anatomyKeptEnd, row = gd.anatomyKeptRow;
        const xs = [], ys = [];
        full.forEach(({x, y}) => {
          if (end === null) { xs.push(x); ys.push(y); return; }
          const kx = [], ky = [];
          for (let s = 0; s + 1 < y.length; s += 3) {
            if (y[s + end] === row) { kx.push(x[s], x[s + 1], null); ky.push(y[s], y[s + 1], null); }
          }
          xs.push(kx); ys.push(ky);
        });
        return Plotly.restyle(gd, {x: xs, y: ys}, idx);
      }).catch(() => {});
    },
    // One figure as a file named by what it shows (layout.meta.export, set by the server): PNG at 3× or SVG, as
    // drawn, or as a 16:9 slide (1920 × 1080, presenter type); the step frame only when asked for.
    exportFigure(elemId, format, frame, wide) {
      const gd = document.querySelector('#' + elemId + ' .js-plotly-plot');
      if (!gd || !gd._fullLayout || !window.Plotly) return;
      const layout = JSON.parse(JSON.stringify(gd.layout));
      if (!frame) layout.shapes = (layout.shapes || []).filter(s => s.name !== STEP_FRAME);
      let size = {width: gd._fullLayout.width, height: gd._fullLayout.height, scale: format === 'png' ? 3 : 1};
      if (wide) {
        size = {width: 1920, height: 1080, scale: 1};
        Object.entries(A.sized(gd.anatomyBase || A.base(gd.data, gd.layout), A.scale, 1080, false, 1920))
          .forEach(([path, v]) => fit.put(layout, path, v));
      }
      Object.assign(layout, {width: size.width, height: size.height});
      const name = ((layout.meta && layout.meta.export) || 'transformer-anatomy_' + elemId) + (wide ? '_16x9' : '');
      Plotly.toImage({data: gd.data, layout}, Object.assign({format}, size)).then(url => {
        const a = Object.assign(document.createElement('a'), {href: url, download: name + '.' + format});
        document.body.appendChild(a); a.click(); a.remove();
      });
    },
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
           ',': () => A.nextHead(-1), '.': () => A.nextHead(1), v: () => A.on && A.toggleView()},
    // The page's own address + the query built on the server: a link that works behind any proxy or Space.
    link(query) {
      return query ? window.location.origin + window.location.pathname + query : '';
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

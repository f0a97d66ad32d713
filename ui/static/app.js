// Transformer Anatomy in the browser: presenter mode, figure export and share links. Loaded once with the page
// (launch(js=...)); the page's events call window.anatomy.*.
() => {
  const A = window.anatomy = {
    scale: 1.5, on: false,
    // Presenter mode (a talk must not wait on the server): toggles the page's class and scales every Plotly
    // figure's fonts, margins and height by `scale`, re-applied whenever a figure is replaced.
    presenter(on) {
      A.on = !!on;
      document.body.classList.toggle('anatomy-presenter', A.on);
      if (!A.observer) {
        // new figures, and tabs coming into view (a class or style change), get the current mode
        A.observer = new MutationObserver(() => A.scan());
        A.observer.observe(document.body, {childList: true, subtree: true, attributes: true,
                                           attributeFilter: ['class', 'style']});
      }
      A.scan();
      window.dispatchEvent(new Event('resize'));
    },
    base(gd) {
      const f = gd._fullLayout, m = f.margin;
      return {font: f.font.size, title: (f.title && f.title.font) ? f.title.font.size : f.font.size,
              height: f.height, l: m.l, r: m.r, t: m.t, b: m.b,
              notes: (f.annotations || []).map(a => a.font.size)};
    },
    fit(gd) {
      if (!gd._fullLayout || !window.Plotly || !gd.offsetParent) return;  // hidden (another tab): when shown
      if (gd.layout !== gd.anatomyLayout) {
        gd.anatomyLayout = gd.layout; gd.anatomyBase = A.base(gd); gd.anatomyScaled = false;
      }
      if (gd.anatomyScaled === A.on) return;
      gd.anatomyScaled = A.on;
      const b = gd.anatomyBase, k = A.on ? A.scale : 1;
      const u = {autosize: true, width: null, 'font.size': b.font * k, 'title.font.size': b.title * k,
                 height: Math.round(b.height * k), 'margin.l': b.l * k, 'margin.r': b.r * k, 'margin.t': b.t * k,
                 'margin.b': b.b * k};
      b.notes.forEach((size, i) => { u['annotations[' + i + '].font.size'] = size * k; });
      // width: null drops the width fixed at first draw, so the figure fills its container again (wider once
      // the settings are hidden)
      Plotly.relayout(gd, u).catch(() => {});
    },
    scan() {
      // the page's figures only, not the offscreen copies Plotly.toImage draws for an export
      document.querySelectorAll('.js-plotly-plot[data-testid=plotly]').forEach(gd => {
        if (!gd.anatomyHooked && gd.on) { gd.anatomyHooked = true; gd.on('plotly_afterplot', () => A.fit(gd)); }
        A.fit(gd);
      });
    },
    // One figure as the browser draws it (presenter fonts included): PNG at 3x scale, or SVG.
    exportFigure(elemId, format) {
      const gd = document.querySelector('#' + elemId + ' .js-plotly-plot');
      if (gd && window.Plotly) {
        Plotly.downloadImage(gd, {format, scale: 3, filename: 'transformer-anatomy-' + elemId});
      }
    },
    // The page's own address + the query built on the server: a link that works behind any proxy or Space.
    link(query) {
      return query ? window.location.origin + window.location.pathname + query : '';
    },
  };
}

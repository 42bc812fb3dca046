/* SPDX-License-Identifier: Apache-2.0 */
/* adump report of a statistics capture over steps: each tensor's max, min, mean and norm over
 * the steps (Chart.js), chosen by a name search; anomalies (report/report.h's rule, judged
 * when the page was written) and the flight recorder's triggers marked. Called by page.js for
 * data.kind "series". Every string from the data reaches the page as text, never as markup. */
'use strict';
function adumpSeriesPage(data) {
  const STATS = ['max', 'min', 'mean', 'norm'];
  const COLORS = { max: '#ff7f0e', min: '#1f77b4', mean: '#2ca02c', norm: '#17becf' };
  const state = { q: '', only: false, limit: 200, sel: -1 };
  let chart = null;

  const { el, add, clear } = adumpDom;
  function num(v) {
    if (v === null || v === undefined) return '';
    if (Number.isNaN(v)) return 'NaN';
    if (!isFinite(v)) return v > 0 ? 'inf' : '-inf';
    return Number(v).toPrecision(6).replace(/\.?0+(e|$)/, '$1');
  }

  // Points as objects; "nan" (JSON has no NaN) back to NaN.
  const series = data.series.map(function (s, i) {
    const pts = s.points.map(function (p) {
      const o = { step: p[0], nan: p[5], inf: p[6], flags: p[7], why: p[8] };
      STATS.forEach(function (k, j) { const v = p[1 + j]; o[k] = v === 'nan' ? NaN : v; });
      return o;
    });
    const bad = pts.filter(function (p) { return p.flags; });
    return { i: i, name: s.name, rank: s.rank, dtype: s.dtype, shape: s.shape, pts: pts, bad: bad,
      first: bad.length ? bad[0] : null, hasNorm: pts.some(function (p) { return p.norm !== null; }) };
  });
  const ranks = {};
  series.forEach(function (s) { ranks[s.rank] = true; });
  const manyRanks = Object.keys(ranks).length > 1;
  const steps = {};
  series.forEach(function (s) { s.pts.forEach(function (p) { steps[p.step] = true; }); });
  const stepCount = Object.keys(steps).length;

  // The earliest anomaly: by step, then rank, then the order tensors were first dumped.
  function firstAnomalous() {
    let best = null;
    series.forEach(function (s) {
      if (!s.first) return;
      if (!best || s.first.step < best.first.step ||
          (s.first.step === best.first.step && s.rank < best.rank)) best = s;
    });
    return best;
  }
  function where(s, step) {
    return 'step ' + step + (manyRanks ? ', rank ' + s.rank : '');
  }

  function drawAnswer() {
    const box = clear(document.getElementById('answer'));
    const f = firstAnomalous();
    const nBad = series.filter(function (s) { return s.first; }).length;
    add(box, el('h2', null, 'The answer'));
    if (!f) {
      box.className = series.length ? 'v-pass' : 'v-none';
      add(box, el('p', 'headline', 'No anomaly: ' + series.length + ' tensors over ' + stepCount + ' step' + (stepCount === 1 ? '' : 's') + ' stay finite and near their own history.'));
    } else {
      box.className = 'v-error';
      const h = el('p', 'headline');
      add(h, 'First anomaly: tensor ');
      const name = el('span', 'opname', f.name);
      name.id = 'first-tensor';
      add(h, name, ' at ' + where(f, f.first.step));
      add(box, h);
      add(box, el('p', 'reason', (f.first.flags & 1 ? 'Not finite: ' : 'Far off its own history: ') + f.first.why + '.'));
      add(box, el('p', null, nBad + ' of ' + series.length + ' tensors have an anomaly at some step, over ' + stepCount + ' step' + (stepCount === 1 ? '' : 's') + '.'));
    }
    data.triggers.forEach(function (t, k) {
      if (k >= 20) return;
      const p = el('p', 'trigger');
      add(p, el('span', 'badge v-warning', 'trigger'), ' The flight recorder fired at step ' + t.step + (t.rank >= 0 ? ', rank ' + t.rank : '') + ': ');
      if (t.rule) add(p, 'rule ', el('span', 'mono', t.rule), ' ');
      if (t.tensor) add(p, 'on ', el('span', 'mono', t.tensor), ' ');
      if (t.value !== null) add(p, '(value ', el('span', 'mono', t.value), ') ');
      if (t.reason) add(p, el('span', 'reason', t.reason));
      add(box, p);
    });
    add(box, el('p', 'muted', 'Start with the earliest anomaly: the tensors after it, and the later steps, may only carry its values on.'));
  }

  function matches(s) {
    if (state.only && !s.first) return false;
    return !state.q || s.name.toLowerCase().indexOf(state.q.toLowerCase()) >= 0;
  }
  function drawList() {
    const body = clear(document.querySelector('#series-list tbody'));
    const idx = series.filter(matches);
    const shown = Math.min(idx.length, state.limit);
    for (let n = 0; n < shown; n++) {
      const s = idx[n];
      const tr = el('tr', (s.first ? 'anomalous' : '') + (s.i === state.sel ? ' selected' : ''));
      tr.dataset.series = String(s.i);
      add(tr, el('td', 'mono', s.name), el('td', null, s.rank), el('td', null, s.dtype), el('td', null, s.shape),
        el('td', null, s.pts.length), el('td', null, s.bad.length), el('td', null, s.first ? 'step ' + s.first.step : ''));
      tr.addEventListener('click', function () { select(s.i); });
      body.appendChild(tr);
    }
    const what = [];
    if (state.q) what.push('name contains "' + state.q + '"');
    if (state.only) what.push('with an anomaly');
    document.getElementById('series-count').textContent = idx.length + ' of ' + series.length + ' tensors match' +
      (what.length ? ' (' + what.join(', ') + ')' : '') + (shown < idx.length ? '; showing the first ' + shown : '') + '. Click one to draw it.';
    document.getElementById('series-more').hidden = shown >= idx.length;
    return idx;
  }

  function drawChart(s) {
    const canvas = document.getElementById('series-chart');
    if (chart) { chart.destroy(); chart = null; }
    const sets = [];
    let lo = Infinity, hi = -Infinity;
    STATS.forEach(function (k) {
      const pts = s.pts.map(function (p) {
        const y = p[k];
        if (y === null || !isFinite(y)) return { x: p.step, y: null };
        if (k !== 'norm' || !s.hasNorm) { lo = Math.min(lo, y); hi = Math.max(hi, y); }
        return { x: p.step, y: y };
      });
      if (!pts.some(function (p) { return p.y !== null; })) return;
      sets.push({ label: k, data: pts, borderColor: COLORS[k], backgroundColor: COLORS[k], pointRadius: 2,
        borderWidth: 1.5, spanGaps: false, yAxisID: k === 'norm' ? 'y2' : 'y' });
    });
    if (!isFinite(lo)) { lo = 0; hi = 1; }
    if (lo === hi) { lo -= 1; hi += 1; }
    // An anomaly sits on its scale's curve; a non-finite one, which no curve can hold, at the top.
    const marks = s.bad.map(function (p) {
      let y = s.hasNorm ? p.norm : Math.max(Math.abs(p.max), Math.abs(p.min));
      const axis = s.hasNorm && isFinite(y) ? 'y2' : 'y';
      if (!isFinite(y)) y = hi;
      return { x: p.step, y: y, axis: axis, why: p.why };
    });
    ['y', 'y2'].forEach(function (axis) {
      const m = marks.filter(function (p) { return p.axis === axis; });
      if (m.length) sets.push({ label: 'anomaly', data: m, yAxisID: axis, showLine: false, pointStyle: 'triangle',
        pointRadius: 9, borderColor: '#d62728', backgroundColor: '#d62728', isMarker: true, order: -1 });
    });
    const trig = data.triggers.filter(function (t) { return t.rank < 0 || t.rank === s.rank; });
    trig.slice(0, 50).forEach(function (t, k) {
      sets.push({ label: k ? 'trigger ' + (k + 1) : 'trigger', data: [{ x: t.step, y: lo }, { x: t.step, y: hi }],
        yAxisID: 'y', borderColor: '#7b2cbf', backgroundColor: '#7b2cbf', borderDash: [6, 4], borderWidth: 2,
        pointRadius: 0, isTrigger: true, trigger: t });
    });
    const scales = { x: { type: 'linear', title: { display: true, text: 'step' }, ticks: { precision: 0 } },
      y: { type: 'linear', position: 'left', title: { display: true, text: 'max, min, mean' } } };
    if (s.hasNorm) scales.y2 = { type: 'linear', position: 'right', grid: { drawOnChartArea: false }, title: { display: true, text: 'norm' } };
    chart = new Chart(canvas.getContext('2d'), {
      type: 'line',
      data: { datasets: sets },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false,
        interaction: { mode: 'nearest', intersect: false }, scales: scales,
        plugins: { legend: { position: 'bottom' }, tooltip: { callbacks: {
          title: function (items) { return items.length ? 'step ' + items[0].raw.x : ''; },
          label: function (item) {
            if (item.dataset.isMarker) return 'anomaly: ' + item.raw.why;
            if (item.dataset.isTrigger) return 'trigger: ' + (item.dataset.trigger.rule || '') + ' ' + (item.dataset.trigger.tensor || '');
            return item.dataset.label + ': ' + num(item.raw.y);
          } } } }
      }
    });
    canvas.dataset.tensor = s.name;
    canvas.dataset.anomalySteps = s.bad.map(function (p) { return p.step; }).join(',');
    canvas.dataset.triggerSteps = trig.map(function (t) { return t.step; }).join(',');
    const note = [];
    const nf = s.bad.filter(function (p) { return p.flags & 1; }).map(function (p) { return p.step; });
    const sp = s.bad.filter(function (p) { return p.flags & 2; }).map(function (p) { return p.step; });
    if (nf.length) note.push('NaN/Inf at step ' + nf.join(', '));
    if (sp.length) note.push('far off its own history at step ' + sp.join(', '));
    let text = note.length ? 'Marked with red triangles: ' + note.join('; ') + '.' : 'No anomaly in this tensor.';
    if (trig.length) text += ' Purple dashed lines: flight recorder triggers at step ' + trig.map(function (t) { return t.step; }).join(', ') + '.';
    document.getElementById('series-note').textContent = text + ' Hover a point for its value.';
  }

  function drawPoints(s) {
    const body = clear(document.querySelector('#series-points tbody'));
    const trigSteps = {};
    data.triggers.forEach(function (t) { if (t.rank < 0 || t.rank === s.rank) trigSteps[t.step] = true; });
    const frag = document.createDocumentFragment();
    s.pts.forEach(function (p) {
      const tr = el('tr', (p.flags ? 'anomaly' : '') + (trigSteps[p.step] ? ' trigger' : ''));
      tr.dataset.step = String(p.step);
      add(tr, el('td', null, p.step));
      STATS.forEach(function (k) { add(tr, el('td', null, num(p[k]))); });
      add(tr, el('td', null, p.nan === null ? '' : p.nan), el('td', null, p.inf === null ? '' : p.inf));
      const why = [];
      if (p.why) why.push(p.why);
      if (trigSteps[p.step]) why.push('flight recorder trigger');
      add(tr, el('td', 'wrap', why.join('; ')));
      frag.appendChild(tr);
    });
    body.appendChild(frag);
  }

  function select(i) {
    state.sel = i;
    const s = series[i];
    document.querySelectorAll('#series-list tbody tr').forEach(function (tr) {
      tr.classList.toggle('selected', tr.dataset.series === String(i));
    });
    const title = clear(document.getElementById('series-title'));
    add(title, 'Series of ', el('span', 'mono', s.name), manyRanks ? ' (rank ' + s.rank + ')' : '');
    drawChart(s);
    drawPoints(s);
  }

  function start() {
    ['pair-section', 'chart-section', 'tree-section', 'table-section'].forEach(function (id) {
      document.getElementById(id).hidden = true;
    });
    document.getElementById('series-section').hidden = false;
    document.getElementById('title').textContent = data.title || 'adump statistics over steps';
    document.getElementById('source').textContent = (data.source ? 'From ' + data.source + ', ' : '') + 'written ' + data.generated + '.';
    document.getElementById('footer').textContent = 'adump report; charts by Chart.js ' + (window.Chart ? Chart.version : '') + '.';
    document.getElementById('series-rule').textContent = 'A step is marked when a statistic is NaN or infinite (or NaN/Inf were counted), or when the tensor\'s norm (its largest magnitude where the capture has no norm) is more than ' +
      data.rule.factor + '\u00d7 above or below the mean of its last ' + data.rule.history + ' unmarked steps (judged once it has ' + data.rule.min_history + ' such steps).';
    const h = new URLSearchParams(location.hash.slice(1));
    if (h.get('q')) state.q = h.get('q');
    state.only = h.get('only') === '1';
    const q = document.getElementById('series-q'), only = document.getElementById('series-only');
    q.value = state.q;
    only.checked = state.only;
    q.addEventListener('input', function () { state.q = q.value; state.limit = 200; pick(drawList()); });
    only.addEventListener('change', function () { state.only = only.checked; state.limit = 200; pick(drawList()); });
    document.getElementById('series-more').addEventListener('click', function () { state.limit += 1000; drawList(); });
    drawAnswer();
    const shown = drawList();
    let first = h.get('t') !== null ? series.filter(function (s) { return s.name === h.get('t'); })[0] : null;
    const earliest = firstAnomalous();
    if (!first && earliest && shown.indexOf(earliest) >= 0) first = earliest;
    if (!first) first = shown.filter(function (s) { return s.first; })[0] || shown[0] || null;
    if (!first) first = earliest || series[0];
    if (first) select(first.i);
    document.body.dataset.readyMs = String(Math.round(performance.now()));
    document.body.dataset.ready = '1';
  }
  // A search that hides the drawn tensor draws the first one it shows.
  function pick(shown) {
    if (shown.length && !shown.some(function (s) { return s.i === state.sel; }))
      select((shown.filter(function (s) { return s.first; })[0] || shown[0]).i);
  }
  start();
}

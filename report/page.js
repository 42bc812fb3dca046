/* SPDX-License-Identifier: Apache-2.0 */
/* adump report: draws the page from the JSON in #adump-data. Every string from the data goes
 * into the page through textContent, text nodes or setAttribute, never as markup. The chart
 * is Chart.js's (inlined before this script). */
'use strict';
(function () {
  const data = JSON.parse(document.getElementById('adump-data').textContent);
  const F = {};
  data.fields.forEach(function (n, i) { F[n] = i; });
  // A statistics capture over steps has a page of its own (page_series.js).
  if (data.kind === 'series') { adumpSeriesPage(data); return; }
  const VERDICT = ['none', 'pass', 'warning', 'error'];
  const VERDICT_WORDS = ['not compared', 'pass', 'warning', 'error'];
  const SCAN_KIND = ['', 'origin', 'reached', 'unreadable'];
  const isScan = data.kind === 'scan';
  const COLORS = { error: '#d62728', warning: '#ff7f0e', pass: '#2ca02c', none: '#999999' };
  const state = { pair: 0, q: '', v: 'all', sort: -1, desc: false, limit: 200, op: null };
  let chart = null;

  const { el, add, clear } = adumpDom;
  function num(v, digits) {
    if (v === null || v === undefined) return '';
    if (!isFinite(v)) return v > 0 ? 'inf' : '-inf';
    return Number(v).toPrecision(digits || 6).replace(/\.?0+(e|$)/, '$1');
  }
  function badge(v) { return el('span', 'badge v-' + VERDICT[v], VERDICT_WORDS[v]); }
  function direction(row) {
    const op = row[F.op] || '', mod = row[F.module] || '';
    if (/backward/i.test(op)) return 'backward';
    if (/forward/i.test(op)) return 'forward';
    if (/backward/i.test(mod)) return 'backward';
    if (/forward/i.test(mod)) return 'forward';
    return '';
  }
  function pairName(p) {
    const parts = [];
    if (p.step >= 0) parts.push('step ' + p.step);
    if (p.rank >= 0) parts.push('rank ' + p.rank);
    if (!parts.length && p.label) parts.push(p.label);
    return parts.join(', ');
  }
  function counts(rows) {
    const c = [0, 0, 0, 0];
    rows.forEach(function (r) { c[r[F.verdict]]++; });
    return c;
  }

  /* ---- the answer, in words ---- */
  function firstPair() {
    let best = -1;
    data.pairs.forEach(function (p, i) {
      if (p.first < 0) return;
      if (best < 0) { best = i; return; }
      const b = data.pairs[best];
      if (p.step < b.step || (p.step === b.step && p.rank < b.rank)) best = i;
    });
    return best;
  }
  function metricsText(row) {
    const out = [];
    if (isScan) {
      const c = row[F.counts] || [0, 0, 0, 0, 0, 0];
      out.push('inputs: ' + c[0] + ' NaN, ' + c[1] + ' Inf, ' + c[2] + ' at the float16 limit');
      out.push('outputs: ' + c[3] + ' NaN, ' + c[4] + ' Inf, ' + c[5] + ' at the float16 limit');
      return out;
    }
    if (row[F.cosine] !== null) out.push('cosine similarity ' + num(row[F.cosine]) + ' (1 means the same direction)');
    if (row[F.max_rel] !== null) out.push('max relative error ' + num(row[F.max_rel]));
    if (row[F.max_abs] !== null) out.push('max absolute error ' + num(row[F.max_abs]));
    if (row[F.scaled] !== null) out.push('max abs error / max |ground truth| ' + num(row[F.scaled]));
    const c = row[F.counts];
    if (c) out.push('NaN/Inf: my output ' + c[0] + ' NaN, ' + c[1] + ' Inf; ground truth ' + c[2] + ' NaN, ' + c[3] + ' Inf');
    return out;
  }
  function drawAnswer() {
    const box = clear(document.getElementById('answer'));
    const all = [];
    data.pairs.forEach(function (p) { p.rows.forEach(function (r) { all.push(r); }); });
    const c = counts(all);
    const fp = firstPair();
    add(box, el('h2', null, 'The answer'));
    if (fp < 0) {
      box.className = all.length ? 'v-pass' : 'v-none';
      if (isScan) {
        add(box, el('p', 'headline', all.length ? 'No op made NaN or Inf; ' + all.length + ' ops listed (their inputs already held them, or they could not be read).' : 'No NaN, no Inf and no float16 overflow in this capture.'));
      } else {
        add(box, el('p', 'headline', all.length ? 'Every compared tensor passes.' : 'Nothing was compared: no op is on both sides.'));
      }
    } else {
      const p = data.pairs[fp], row = p.rows[p.first];
      box.className = 'v-' + VERDICT[row[F.verdict]];
      const h = el('p', 'headline');
      add(h, isScan ? 'NaN/Inf first made by op ' : 'First divergence: op ');
      const name = el('span', 'opname', row[F.op]);
      name.id = 'first-op';
      add(h, name);
      if (row[F.tensor]) add(h, ' (', isScan ? 'first in ' : 'tensor ', el('span', 'mono', row[F.tensor]), ')');
      if (row[F.module]) add(h, ' in module ', el('span', 'mono', row[F.module]));
      if (pairName(p)) add(h, ' at ' + pairName(p));
      add(box, h);
      const v = el('p');
      if (isScan) {
        add(v, badge(3), ' origin: its outputs hold NaN/Inf while its inputs were finite. ');
        add(v, 'Its values reached ' + (p.rows.length - p.first - 1) + ' later listed ops.');
      } else {
        add(v, 'Verdict: ', badge(row[F.verdict]), ' ');
        if (row[F.reason]) add(v, 'because ', el('span', 'reason', row[F.reason]), '.');
      }
      add(box, v);
      const m = metricsText(row);
      if (m.length) add(box, el('p', null, m.join('; ') + '.'));
      add(box, el('p', 'muted', isScan
        ? 'The origin is the first op, in execution order, whose outputs hold NaN or Inf while its inputs did not. Look there first: the ops after it may only pass the values on.'
        : 'This is the earliest tensor, in the order your run executed, whose values differ from the ground truth beyond the limits. Later differences may only be its consequences: start looking here.'));
    }
    if (!isScan) {
      add(box, el('p', null, all.length + ' rows in ' + data.pairs.length + ' pair' + (data.pairs.length === 1 ? '' : 's') + ': ' +
        c[3] + ' error, ' + c[2] + ' warning, ' + c[1] + ' pass, ' + c[0] + ' not compared.'));
      if (data.pairs.some(function (q) { return q.rejudged; }))
        add(box, el('p', 'muted', 'Verdicts were judged again from the result CSV\'s cells (the scaled error is not in a CSV): adump compare --html, or a report of its --json output, has compare\'s own.'));
    }
  }

  /* ---- step x rank grid ---- */
  function drawGrid() {
    if (data.pairs.length < 2) return;
    document.getElementById('grid-section').hidden = false;
    const rowKeys = [], colKeys = [], at = {};
    data.pairs.forEach(function (p, i) {
      const rk = p.step >= 0 ? 'step ' + p.step : (p.label || 'pair ' + i);
      const ck = p.rank >= 0 ? 'rank ' + p.rank : (p.step >= 0 ? p.label : '');
      if (rowKeys.indexOf(rk) < 0) rowKeys.push(rk);
      if (colKeys.indexOf(ck) < 0) colKeys.push(ck);
      at[rk + '\u0000' + ck] = i;
    });
    const t = el('table'), head = el('tr');
    add(head, el('th'));
    colKeys.forEach(function (k) { add(head, el('th', null, k)); });
    add(t, head);
    rowKeys.forEach(function (rk) {
      const tr = add(el('tr'), el('th', null, rk));
      colKeys.forEach(function (ck) {
        const i = at[rk + '\u0000' + ck], td = el('td');
        if (i === undefined) { add(td, el('span', 'muted', '\u2014')); add(tr, td); return; }
        const p = data.pairs[i], b = el('button');
        b.type = 'button';
        b.dataset.pair = String(i);
        let v = 1;
        if (p.first >= 0) {
          const row = p.rows[p.first];
          v = row[F.verdict];
          add(b, badge(v), ' ', el('span', 'mono', row[F.op]));
        } else if (!p.rows.length) {
          v = 0;
          add(b, badge(0), ' ', p.message || 'no rows');
        } else {
          add(b, badge(1), ' no divergent op');
        }
        td.className = 'v-' + VERDICT[v];
        b.title = (p.label || pairName(p)) + (p.message ? ': ' + p.message : '');
        b.addEventListener('click', function () { selectPair(i); });
        add(td, b);
        add(tr, td);
      });
      add(t, tr);
    });
    add(clear(document.getElementById('grid')), t);
  }

  /* ---- the chart ---- */
  function drawChart() {
    const p = data.pairs[state.pair], rows = p.rows;
    const note = document.getElementById('chart-note');
    const canvas = document.getElementById('chart');
    if (chart) { chart.destroy(); chart = null; }
    const sets = [];
    const big = rows.length > 2000;
    // A big chart keeps, of each run of rows one pixel column or so wide (BUCKETS across), the
    // point with the lowest and the one with the highest value: every spike and dip is still
    // drawn, and hovering it names its own row, while Chart.js builds a few thousand points
    // instead of one per row (at 20,000 rows that was most of the page's start-up).
    const BUCKETS = 1500;
    function minmax(pts) {
      const width = Math.ceil(rows.length / BUCKETS), out = [];
      for (let k = 0; k < pts.length;) {
        const end = (Math.floor(pts[k].x / width) + 1) * width;
        let lo = pts[k], hi = pts[k];
        for (; k < pts.length && pts[k].x < end; k++) {
          if (pts[k].y < lo.y) lo = pts[k];
          if (pts[k].y > hi.y) hi = pts[k];
        }
        if (lo.x <= hi.x) { out.push(lo); if (hi !== lo) out.push(hi); } else { out.push(hi); out.push(lo); }
      }
      return out;
    }
    function series(label, color, axis, pick, dir, dashed) {
      const pts = [];
      rows.forEach(function (r, i) {
        if (dir !== null && direction(r) !== dir) return;
        const y = pick(r);
        if (y === null || y === undefined || !isFinite(y)) return;
        pts.push({ x: i, y: y });
      });
      if (!pts.length) return;
      sets.push({ label: label, data: big ? minmax(pts) : pts, yAxisID: axis, borderColor: color, backgroundColor: color,
        showLine: !big, borderWidth: 1, pointRadius: big ? 1 : 2.5, borderDash: dashed ? [5, 3] : [] });
    }
    const dirs = {};
    rows.forEach(function (r) { dirs[direction(r)] = true; });
    const split = dirs.forward && dirs.backward;
    const dlist = split ? [['forward', false], ['backward', true]] : [[null, false]];
    let y1 = 'cosine similarity', y2 = 'max relative error';
    if (isScan) {
      y1 = 'NaN + Inf in outputs'; y2 = 'NaN + Inf in inputs';
      series(y1, '#d62728', 'y', function (r) { const c = r[F.counts]; return c ? c[3] + c[4] + c[5] : null; }, null, false);
      series(y2, '#1f77b4', 'y', function (r) { const c = r[F.counts]; return c ? c[0] + c[1] + c[2] : null; }, null, true);
    } else {
      dlist.forEach(function (d) {
        const sfx = d[0] ? ' (' + d[0] + ')' : '';
        series('cosine similarity' + sfx, d[1] ? '#17becf' : '#1f77b4', 'y', function (r) { return r[F.cosine]; }, d[0], d[1]);
        series('max relative error' + sfx, d[1] ? '#bcbd22' : '#ff7f0e', 'y2', function (r) { const v = r[F.max_rel]; return v > 0 ? v : null; }, d[0], d[1]);
      });
      if (!sets.length) {
        y1 = 'verdict (0 not compared, 1 pass, 2 warning, 3 error)';
        series(y1, '#555', 'y', function (r) { return r[F.verdict]; }, null, false);
      }
    }
    let first = null;
    if (p.first >= 0) {
      first = p.first;
      let lo = 0, hi = 1;
      sets.forEach(function (s) {
        if (s.yAxisID !== 'y') return;
        s.data.forEach(function (pt) { if (pt.y < lo) lo = pt.y; if (pt.y > hi) hi = pt.y; });
      });
      sets.push({ label: (isScan ? 'origin: ' : 'first divergent: ') + rows[first][F.op], data: [{ x: first, y: lo }, { x: first, y: hi }],
        yAxisID: 'y', borderColor: '#d62728', backgroundColor: '#d62728', borderWidth: 2, showLine: true,
        pointRadius: [0, 6], pointStyle: 'triangle', order: -1, isMarker: true });
    }
    if (!rows.length) { note.textContent = 'No rows to draw.'; return; }
    const scales = {
      x: { type: 'linear', title: { display: true, text: isScan ? 'listed ops, in execution order' : 'row in execution order (each op\'s inputs, then its outputs)' }, min: 0, max: Math.max(rows.length - 1, 1) },
      y: { type: isScan ? 'logarithmic' : 'linear', position: 'left', title: { display: true, text: y1 } }
    };
    if (isScan) scales.y.type = 'linear';
    if (sets.some(function (s) { return s.yAxisID === 'y2'; }))
      scales.y2 = { type: 'logarithmic', position: 'right', grid: { drawOnChartArea: false }, title: { display: true, text: y2 } };
    chart = new Chart(canvas.getContext('2d'), {
      type: 'scatter',
      data: { datasets: sets },
      options: {
        animation: false, parsing: false, normalized: true, responsive: true, maintainAspectRatio: false,
        interaction: { mode: 'nearest', intersect: false },
        scales: scales,
        plugins: {
          legend: { position: 'bottom' },
          tooltip: { callbacks: {
            title: function (items) {
              const i = items.length ? Math.round(items[0].raw.x) : -1;
              return i >= 0 && rows[i] ? rows[i][F.op] : '';
            },
            label: function (item) {
              const r = rows[Math.round(item.raw.x)];
              if (item.dataset.isMarker) return item.dataset.label;
              return item.dataset.label + ': ' + num(item.raw.y) + (r && r[F.tensor] ? '  ' + r[F.tensor] : '');
            },
            afterLabel: function (item) {
              const r = rows[Math.round(item.raw.x)];
              return r ? (isScan ? SCAN_KIND[r[F.scan_kind]] : 'verdict ' + VERDICT[r[F.verdict]]) : '';
            }
          } }
        },
        onClick: function (ev, elements) {
          if (!elements.length) return;
          const r = rows[Math.round(chart.data.datasets[elements[0].datasetIndex].data[elements[0].index].x)];
          if (r) showOp(r[F.op]);
        }
      }
    });
    const marker = chart.data.datasets.filter(function (s) { return s.isMarker; })[0];
    if (marker) {
      const at = marker.data[0].x;
      canvas.dataset.firstRow = String(at);
      canvas.dataset.firstOp = rows[at][F.op];
      note.textContent = 'Marked on the chart (red line): ' + (isScan ? 'origin' : 'first divergent op') + ' ' + rows[at][F.op] + ' at row ' + at + '. Hover a point to see its op; click it to list its rows.';
    } else {
      delete canvas.dataset.firstRow;
      note.textContent = 'No divergent op to mark. Hover a point to see its op.';
    }
  }

  /* ---- the module tree ---- */
  function modulePath(name) {
    let s = name;
    if (s.indexOf('Module.') === 0) s = s.slice(7);
    const m = /^(.*?)\.(forward|backward)(\.\d+)?$/.exec(s);
    if (m) s = m[1];
    const parts = s.split('.');
    if (parts.length > 1 && /^[A-Z]/.test(parts[parts.length - 1])) {
      const cls = parts.pop();
      parts[parts.length - 1] += ' (' + cls + ')';
    }
    return parts;
  }
  function constructChain(node) {
    const chain = [];
    const seen = {};
    while (node && !seen[node] && chain.length < 256) {
      seen[node] = true;
      chain.unshift(node);
      node = Object.prototype.hasOwnProperty.call(data.construct, node) ? data.construct[node] : null;
    }
    return chain.map(function (n) { const p = modulePath(n); return p[p.length - 1] + (/backward/.test(n) ? ' [backward]' : ''); });
  }
  function rowPath(r) {
    const op = r[F.op] || '', mod = r[F.module];
    if (data.construct && mod && Object.prototype.hasOwnProperty.call(data.construct, mod)) return constructChain(mod).concat([op]);
    if (data.construct && Object.prototype.hasOwnProperty.call(data.construct, op)) return constructChain(op);
    if (mod) return modulePath(mod).concat([op]);
    if (op.indexOf('Module.') === 0) return modulePath(op);
    if (op.indexOf('/') > 0) return op.split('/').filter(function (s) { return s; });
    return [op];
  }
  function buildTree(rows) {
    const root = { name: '', kids: new Map(), rows: [], worst: 0, n: [0, 0, 0, 0] };
    rows.forEach(function (r, i) {
      let node = root;
      const v = r[F.verdict];
      const path = rowPath(r);
      root.n[v]++;
      if (v > root.worst) root.worst = v;
      path.forEach(function (seg) {
        let k = node.kids.get(seg);
        if (!k) { k = { name: seg, kids: new Map(), rows: [], worst: 0, n: [0, 0, 0, 0] }; node.kids.set(seg, k); }
        node = k;
        node.n[v]++;
        if (v > node.worst) node.worst = v;
      });
      node.rows.push(i);
    });
    return root;
  }
  function nodeLabel(node) {
    const s = el('span');
    add(s, el('span', 'dot v-' + VERDICT[node.worst]), el('span', 'mono', node.name), ' ');
    const parts = [];
    if (node.n[3]) parts.push(node.n[3] + ' error');
    if (node.n[2]) parts.push(node.n[2] + ' warning');
    if (node.n[1]) parts.push(node.n[1] + ' pass');
    if (node.n[0]) parts.push(node.n[0] + ' not compared');
    add(s, el('span', 'count', parts.join(', ')));
    return s;
  }
  function drawNode(parent, node, firstRow, rows) {
    const limit = 500;
    let shown = 0;
    node.kids.forEach(function (k) {
      if (shown++ === limit) { add(parent, el('div', 'leaf muted', '\u2026 ' + (node.kids.size - limit) + ' more: use the table\'s name search')); }
      if (shown > limit) return;
      const hasFirst = firstRow >= 0 && k.rows.indexOf(firstRow) >= 0;
      const onPath = firstRow >= 0 && k.rowsBelow && k.rowsBelow.has(firstRow);
      if (!k.kids.size) {
        const leaf = el('div', 'leaf');
        add(leaf, nodeLabel(k));
        leaf.addEventListener('click', function () { showOp(rows[k.rows[0]][F.op]); });
        if (hasFirst) { leaf.className += ' first'; leaf.id = 'tree-first'; add(leaf, ' ', badge(rows[firstRow][F.verdict]), isScan ? ' origin' : ' first divergence'); }
        add(parent, leaf);
        return;
      }
      const d = el('details');
      const sum = el('summary');
      add(sum, nodeLabel(k));
      if (hasFirst) { d.className = 'first'; d.id = 'tree-first'; add(sum, ' ', badge(rows[firstRow][F.verdict]), isScan ? ' origin' : ' first divergence'); }
      add(d, sum);
      if (onPath) d.classList.add('on-path');
      let drawn = false;
      function fill() { if (drawn) return; drawn = true; drawNode(d, k, firstRow, rows); }
      d.addEventListener('toggle', function () { if (d.open) fill(); });
      if (onPath || hasFirst) { fill(); d.open = true; }
      add(parent, d);
    });
  }
  function markBelow(node) {
    node.rowsBelow = new Set(node.rows);
    node.kids.forEach(function (k) { markBelow(k).forEach(function (i) { node.rowsBelow.add(i); }); });
    return node.rowsBelow;
  }
  function drawTree() {
    const p = data.pairs[state.pair];
    const root = buildTree(p.rows);
    if (p.first >= 0) markBelow(root);
    const box = clear(document.getElementById('tree'));
    if (!p.rows.length) { add(box, el('p', 'muted', 'No rows.')); return; }
    drawNode(box, root, p.first, p.rows);
  }

  /* ---- the table ---- */
  const COMPARE_COLS = [
    ['#', null], ['Index', 'index'], ['op', 'op'], ['tensor', 'tensor'], ['module', 'module'], ['direction', 'dir'],
    ['verdict', 'verdict'], ['reason', 'reason'], ['cosine', 'cosine'], ['max rel err', 'max_rel'], ['max abs err', 'max_abs'],
    ['scaled err', 'scaled'], ['dtype (mine)', 'dtype_my'], ['dtype (truth)', 'dtype_golden'], ['shape', 'shape'],
    ['stats (mine)', 'stats_my'], ['stats (truth)', 'stats_golden'], ['NaN/Inf mine', 'nan_my'], ['NaN/Inf truth', 'nan_golden']];
  const SCAN_COLS = [
    ['#', null], ['order', 'index'], ['kind', 'kind'], ['op type', 'type'], ['op', 'op'], ['first tensor', 'tensor'],
    ['inputs NaN/Inf/limit', 'in'], ['outputs NaN/Inf/limit', 'out'], ['path', 'shape'], ['message', 'reason']];
  const COLS = isScan ? SCAN_COLS : COMPARE_COLS;
  function cellValue(r, key, i) {
    const c = r[F.counts];
    switch (key) {
      case null: return i;
      case 'dir': return direction(r);
      case 'verdict': return r[F.verdict];
      case 'kind': return SCAN_KIND[r[F.scan_kind]];
      case 'nan_my': return c ? c[0] + '/' + c[1] : '';
      case 'nan_golden': return c ? c[2] + '/' + c[3] : '';
      case 'in': return c ? c[0] + '/' + c[1] + '/' + c[2] : '';
      case 'out': return c ? c[3] + '/' + c[4] + '/' + c[5] : '';
      default: return r[F[key]];
    }
  }
  function matches(r) {
    const v = r[F.verdict];
    if (state.v === 'notpass' && v < 2) return false;
    if (state.v !== 'all' && state.v !== 'notpass' && VERDICT[v] !== state.v) return false;
    if (state.op !== null && r[F.op] !== state.op) return false;
    if (!state.q) return true;
    const q = state.q.toLowerCase();
    return [r[F.op], r[F.tensor], r[F.module], r[F.type]].some(function (s) { return s && s.toLowerCase().indexOf(q) >= 0; });
  }
  function drawHead() {
    const tr = el('tr');
    COLS.forEach(function (c, k) {
      const th = el('th', state.sort === k ? (state.desc ? 'sorted-desc' : 'sorted-asc') : null, c[0]);
      th.title = 'sort by ' + c[0];
      th.addEventListener('click', function () {
        if (state.sort === k) state.desc = !state.desc; else { state.sort = k; state.desc = false; }
        drawTable();
      });
      add(tr, th);
    });
    add(clear(document.querySelector('#rows thead')), tr);
  }
  function drawTable() {
    const p = data.pairs[state.pair], rows = p.rows;
    drawHead();
    let idx = [];
    for (let i = 0; i < rows.length; i++) if (matches(rows[i])) idx.push(i);
    if (state.sort >= 0) {
      const key = COLS[state.sort][1];
      idx.sort(function (a, b) {
        let x = cellValue(rows[a], key, a), y = cellValue(rows[b], key, b);
        if (x === null || x === undefined) x = '';
        if (y === null || y === undefined) y = '';
        let d = (typeof x === 'number' && typeof y === 'number') ? x - y : String(x).localeCompare(String(y));
        if (d === 0) d = a - b;
        return state.desc ? -d : d;
      });
    }
    const body = clear(document.querySelector('#rows tbody'));
    const shown = Math.min(idx.length, state.limit);
    const frag = document.createDocumentFragment();
    for (let n = 0; n < shown; n++) {
      const i = idx[n], r = rows[i];
      const tr = el('tr', 'v-' + VERDICT[r[F.verdict]] + (i === p.first ? ' first' : ''));
      tr.dataset.row = String(i);
      COLS.forEach(function (c) {
        const v = cellValue(r, c[1], i);
        let td;
        if (c[1] === 'verdict') td = add(el('td'), badge(v));
        else if (typeof v === 'number' && c[1] !== null && c[1] !== 'index') td = el('td', null, num(v));
        else td = el('td', c[1] === 'reason' || c[1] === 'stats_my' || c[1] === 'stats_golden' ? 'wrap' : null, v === null || v === undefined ? '' : v);
        if (c[1] === 'op' || c[1] === 'tensor' || c[1] === 'module') td.classList.add('mono');
        add(tr, td);
      });
      frag.appendChild(tr);
    }
    body.appendChild(frag);
    const what = [];
    if (state.v !== 'all') what.push('verdict ' + document.querySelector('#filter-verdict option[value="' + state.v + '"]').textContent);
    if (state.q) what.push('name contains "' + state.q + '"');
    if (state.op !== null) what.push('op ' + state.op);
    document.getElementById('table-count').textContent = idx.length + ' of ' + rows.length + ' rows match' +
      (what.length ? ' (' + what.join(', ') + ')' : '') + (shown < idx.length ? '; showing the first ' + shown : '') + '.';
    const more = document.getElementById('more');
    more.hidden = shown >= idx.length;
  }
  function showOp(op) {
    state.op = op;
    state.limit = 200;
    drawTable();
    document.getElementById('table-section').scrollIntoView();
  }

  /* ---- pairs, controls, start ---- */
  function selectPair(i) {
    state.pair = i;
    state.op = null;
    state.limit = 200;
    const p = data.pairs[i];
    document.querySelectorAll('#grid button').forEach(function (b) { b.classList.toggle('selected', b.dataset.pair === String(i)); });
    const title = document.getElementById('pair-title');
    title.textContent = data.pairs.length > 1 ? 'Pair ' + (p.label || pairName(p)) : (isScan ? 'Scan' : 'Compare');
    const info = clear(document.getElementById('pair-info'));
    const c = counts(p.rows);
    add(info, p.rows.length + ' rows: ' + (isScan ? c[3] + ' origin, ' + c[2] + ' reached, ' + c[0] + ' unreadable.' :
      c[3] + ' error, ' + c[2] + ' warning, ' + c[1] + ' pass, ' + c[0] + ' not compared.'));
    if (p.first >= 0) add(info, ' First divergent here: ', el('span', 'mono', p.rows[p.first][F.op]), '.');
    if (p.message) add(info, ' ', el('span', 'muted', p.message));
    if (p.code) add(info, ' Exit status ' + p.code + '.');
    drawChart();
    drawTree();
    drawTable();
  }
  function start() {
    document.getElementById('title').textContent = data.title || (isScan ? 'adump scan' : 'adump compare');
    document.getElementById('source').textContent = (data.source ? 'From ' + data.source + ', ' : '') + 'written ' + data.generated + '.';
    document.getElementById('footer').textContent = 'adump report; charts by Chart.js ' + (window.Chart ? Chart.version : '') + '.';
    const h = new URLSearchParams(location.hash.slice(1));
    if (h.get('q')) state.q = h.get('q');
    if (h.get('v') && ['all', 'notpass', 'error', 'warning', 'pass', 'none'].indexOf(h.get('v')) >= 0) state.v = h.get('v');
    const fv = document.getElementById('filter-verdict'), fn = document.getElementById('filter-name');
    fv.value = state.v;
    fn.value = state.q;
    fv.addEventListener('change', function () { state.v = fv.value; state.limit = 200; drawTable(); });
    fn.addEventListener('input', function () { state.q = fn.value; state.op = null; state.limit = 200; drawTable(); });
    document.getElementById('more').addEventListener('click', function () { state.limit += 1000; drawTable(); });
    drawAnswer();
    drawGrid();
    let pair = firstPair();
    if (h.get('pair') !== null && data.pairs[Number(h.get('pair'))]) pair = Number(h.get('pair'));
    selectPair(pair >= 0 ? pair : 0);
    // The milliseconds from navigation to a drawn, usable page, and to the load event
    // (bench/report.sh reads them).
    document.body.dataset.readyMs = String(Math.round(performance.now()));
    window.addEventListener('load', function () { document.body.dataset.loadMs = String(Math.round(performance.now())); });
    document.body.dataset.ready = '1';
  }
  if (!data.pairs.length) data.pairs.push({ label: '', step: -1, rank: -1, code: 0, first: -1, message: 'no rows', rows: [] });
  start();
})();

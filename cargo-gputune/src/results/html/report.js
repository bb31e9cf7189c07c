'use strict';
// The report page's script: it filters, sorts and draws the data that `report --html`
// computed (html/data.rs). Every number in the table is a string the terminal report wrote;
// this script parses them only to sort and colour, never to print them anew.
(function () {
  const DATA = JSON.parse(document.getElementById('data').textContent);
  const $ = (id) => document.getElementById(id);
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
  const UNIT = { ns: 1e-9, us: 1e-6, ms: 1e-3, s: 1 };
  const SVGNS = 'http://www.w3.org/2000/svg';
  const PALETTE = ['#d62728', '#ff7f0e', '#2ca02c', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#bcbd22', '#7f7f7f', '#1f77b4'];
  const state = { group: 0, sort: '#', dir: 1, query: '', status: '', filters: [], picked: -1, heatX: 0, heatY: 1 };
  let G = null; // the group shown
  let ROWS = []; // its variants, derived once per group
  let VIEW = []; // the rows shown, filtered and sorted

  // Sort keys of the columns: numbers parsed from the cells as the terminal wrote them.
  const num = (c) => { const v = parseFloat(String(c).replace('±', '')); return Number.isFinite(v) ? v : null; };
  const time = (c) => { const m = /^([\d.]+) (ns|us|ms|s)$/.exec(c); return m ? parseFloat(m[1]) * UNIT[m[2]] : null; };
  const MARK = { '+': 0, '~': 1, '-': 2 };
  const KEYS = {
    '#': (r) => r.i,
    variant: (r) => r.label,
    time: (r) => time(r.cells[4]),
    sig: (r) => (r.cells[7] in MARK ? MARK[r.cells[7]] : null),
  };
  const DESCENDING = new Set(['score', 'mins', 'means', 'maxs']);
  const CHUNK = 200; // rows per chunk of the table (css: .chunk's intrinsic size is 200 rows)

  function labelOf(g, i) {
    const v = g.variants;
    if (v.label[i] !== null) return v.label[i];
    return v.params[i].map((k, p) => g.params[p].name + '_' + g.params[p].values[k]).join('.');
  }

  function derive(g) {
    const v = g.variants;
    return v.cells.map((cells, i) => {
      const label = labelOf(g, i);
      const measured = v.measured[i].map(([rt, stop, samples, control]) => ({ rt, stop, samples, control }));
      const stops = new Set(measured.map((w) => w.stop).filter((s) => s));
      return { i, label, lower: label.toLowerCase(), cells, status: v.status[i], stops, params: v.params[i], score: num(cells[0]), measured };
    });
  }

  function key(col) {
    if (KEYS[col]) return KEYS[col];
    const k = DATA.header.indexOf(col) - 1;
    return (r) => num(r.cells[k]);
  }

  function filtered() {
    const terms = state.query.toLowerCase().split(/\s+/).filter((t) => t);
    const active = state.filters.map((f, p) => [p, f]).filter(([, f]) => f >= 0);
    return ROWS.filter((r) => {
      if (terms.some((t) => !r.lower.includes(t))) return false;
      if (state.status === 'ok' && r.status !== 'ok') return false;
      if (state.status === 'failed' && r.status === 'ok') return false;
      if (['criterion', 'screened', 'raced'].includes(state.status) && !r.stops.has(state.status)) return false;
      return active.every(([p, f]) => r.params.length > p && r.params[p] === f);
    });
  }

  function sorted(rows) {
    const k = key(state.sort);
    const dir = state.dir;
    const keyed = rows.map((r) => [k(r), r]);
    keyed.sort((a, b) => {
      // Rows without a value (failed, unscored) go last either way.
      if (a[0] === null || b[0] === null) return (a[0] === null) - (b[0] === null) || a[1].i - b[1].i;
      const c = typeof a[0] === 'string' ? a[0].localeCompare(b[0]) : a[0] - b[0];
      return c * dir || a[1].i - b[1].i;
    });
    return keyed.map((x) => x[1]);
  }

  function rowHtml(r) {
    const cls = [r.label === 'base' ? 'base' : '', r.status !== 'ok' ? 'failed' : '', r.i === state.picked ? 'picked' : ''].join(' ').trim();
    let html = '<div role="row" data-i="' + r.i + '" class="row' + (cls ? ' ' + cls : '') + '"><span role="cell">' + (r.i + 1) + '</span><span role="cell" class="label">' + esc(r.label) + '</span>';
    for (let k = 0; k < r.cells.length; k++) {
      const c = r.cells[k];
      const mark = k === 7 ? (c === '+' ? ' class="mark-plus"' : c === '-' ? ' class="mark-minus"' : '') : '';
      html += '<span role="cell"' + mark + '>' + esc(c) + '</span>';
    }
    return html + '</div>';
  }

  function renderTable() {
    VIEW = sorted(filtered());
    const chunks = [];
    for (let k = 0; k < VIEW.length; k += CHUNK) chunks.push('<div class="chunk">' + VIEW.slice(k, k + CHUNK).map(rowHtml).join('') + '</div>');
    $('rows').innerHTML = chunks.join('');
    $('shown').textContent = VIEW.length + ' of ' + ROWS.length + ' variants shown';
    for (const th of $('head').children) {
      th.className = (th.dataset.col === 'variant' ? 'label ' : '') + (th.dataset.col === state.sort ? (state.dir > 0 ? 'sorted-asc' : 'sorted-desc') : '');
    }
  }

  function render() {
    renderTable();
    renderDistributions();
    renderHeat();
  }

  // --- drawing -------------------------------------------------------------------------
  function el(name, attrs, text) {
    const e = document.createElementNS(SVGNS, name);
    for (const a in attrs) e.setAttribute(a, attrs[a]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function ticks(lo, hi, n) {
    const step0 = (hi - lo) / n || 1;
    const mag = Math.pow(10, Math.floor(Math.log10(step0)));
    const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= step0) || step0;
    const out = [];
    for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push(+t.toPrecision(12));
    return out;
  }

  function quantile(s, q) {
    const pos = q * (s.length - 1);
    const lo = Math.floor(pos);
    const hi = Math.ceil(pos);
    return s[lo] + (s[hi] - s[lo]) * (pos - lo);
  }

  // A strip plot: each series' samples as dots over a box of the quartiles and its median.
  function strips(series, unit, title) {
    const W = 1100;
    const L = 460;
    const H = 30 + series.length * 22 + 30;
    const svg = el('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, class: 'plot' });
    svg.appendChild(el('text', { x: 0, y: 14 }, title));
    const all = [];
    for (const s of series) {
      s.sorted = s.samples.slice().sort((a, b) => a - b);
      all.push(quantile(s.sorted, 0.01), quantile(s.sorted, 0.99));
    }
    let lo = Math.min(...all);
    let hi = Math.max(...all);
    const pad = (hi - lo) * 0.05 || Math.abs(hi) * 0.01 || 1;
    lo -= pad;
    hi += pad;
    const x = (v) => L + ((Math.min(Math.max(v, lo), hi) - lo) / (hi - lo)) * (W - L - 20);
    const bottom = 30 + series.length * 22;
    for (const t of ticks(lo, hi, 6)) {
      svg.appendChild(el('line', { x1: x(t), x2: x(t), y1: 24, y2: bottom, class: 'grid' }));
      svg.appendChild(el('text', { x: x(t), y: bottom + 14, 'text-anchor': 'middle', class: 'muted' }, t + ' ' + unit));
    }
    series.forEach((s, k) => {
      const y = 30 + k * 22 + 8;
      svg.appendChild(el('text', { x: L - 8, y: y + 4, 'text-anchor': 'end' }, s.name));
      const q1 = quantile(s.sorted, 0.25);
      const q3 = quantile(s.sorted, 0.75);
      svg.appendChild(el('rect', { x: x(q1), y: y - 7, width: Math.max(1, x(q3) - x(q1)), height: 14, fill: s.color, 'fill-opacity': 0.15, stroke: s.color }));
      svg.appendChild(el('line', { x1: x(quantile(s.sorted, 0.5)), x2: x(quantile(s.sorted, 0.5)), y1: y - 8, y2: y + 8, stroke: s.color, 'stroke-width': 2 }));
      const step = Math.max(1, Math.floor(s.samples.length / 400));
      let d = '';
      for (let j = 0; j < s.samples.length; j += step) {
        const jitter = (((j * 7919) % 13) / 13 - 0.5) * 10;
        d += 'M' + x(s.samples[j]).toFixed(1) + ' ' + (y + jitter).toFixed(1) + 'h0.01';
      }
      svg.appendChild(el('path', { d, stroke: s.color, 'stroke-width': 3, 'stroke-linecap': 'round', 'stroke-opacity': 0.6 }));
    });
    return svg;
  }

  function samplesOn(i, rt) {
    const w = ROWS[i].measured.find((m) => m.rt === rt);
    return w && w.samples.length ? w : null;
  }

  function renderDistributions() {
    const box = $('distributions');
    box.textContent = '';
    const base = ROWS.find((r) => r.label === 'base');
    G.workloads.forEach((name, rt) => {
      const series = [];
      const b = base && samplesOn(base.i, rt);
      if (b) series.push({ name: 'base', samples: b.samples, color: '#0b57d0' });
      for (const r of VIEW) {
        if (series.length >= (b ? 11 : 10)) break;
        const w = r.label !== 'base' && r.status === 'ok' && samplesOn(r.i, rt);
        if (w) series.push({ name: r.label, samples: w.samples, color: PALETTE[(series.length - 1 + PALETTE.length) % PALETTE.length] });
      }
      if (series.length) box.appendChild(strips(series, G.unit, name + ' (' + G.unit + ')'));
    });
    if (!box.children.length) box.textContent = 'No samples to show.';
  }

  function color(score, span) {
    if (score === null) return '#e5e5e5';
    const t = Math.max(-1, Math.min(1, Math.log2(score) / span));
    const mix = (a, b) => Math.round(255 + (b - 255) * Math.abs(t));
    return t >= 0 ? 'rgb(' + mix(0, 26) + ',' + mix(0, 127) + ',' + mix(0, 55) + ')' : 'rgb(' + mix(0, 180) + ',' + mix(0, 35) + ',' + mix(0, 24) + ')';
  }

  function renderHeat() {
    const box = $('heat');
    box.textContent = '';
    const P = G.params;
    if (!P.length) {
      box.textContent = 'The store keeps no #[tune] attribute of this function, so its labels do not split into parameters.';
      return;
    }
    const px = Math.min(state.heatX, P.length - 1);
    const py = P.length > 1 ? state.heatY : -1;
    const nx = P[px].values.length;
    const ny = py >= 0 ? P[py].values.length : 1;
    const best = new Map();
    for (const r of VIEW) {
      if (r.label === 'base' || r.score === null || r.params.length !== P.length) continue;
      const k = r.params[px] * ny + (py >= 0 ? r.params[py] : 0);
      const b = best.get(k);
      if (!b || r.score > b.score) best.set(k, r);
    }
    let span = 0.05;
    for (const r of best.values()) span = Math.max(span, Math.abs(Math.log2(r.score)));
    const cw = Math.max(14, Math.min(64, Math.floor(820 / nx)));
    const ch = Math.max(14, Math.min(34, Math.floor(520 / ny)));
    const L = 110;
    const T = 30;
    const W = Math.max(560, L + nx * cw + 10);
    const H = T + ny * ch + 40;
    const svg = el('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, class: 'plot' });
    svg.appendChild(el('text', { x: L, y: 14 }, P[px].name + (py >= 0 ? ' × ' + P[py].name : '') + ': best score per cell (1 = base; grey: none shown)'));
    for (let xi = 0; xi < nx; xi++) {
      svg.appendChild(el('text', { x: L + xi * cw + cw / 2, y: T + ny * ch + 14, 'text-anchor': 'middle', class: 'muted' }, P[px].values[xi]));
      for (let yi = 0; yi < ny; yi++) {
        const r = best.get(xi * ny + yi);
        const rect = el('rect', { x: L + xi * cw, y: T + yi * ch, width: cw - 1, height: ch - 1, fill: color(r ? r.score : null, span), class: 'cell', 'data-x': xi, 'data-y': yi });
        const where = P[px].name + ' = ' + P[px].values[xi] + (py >= 0 ? ', ' + P[py].name + ' = ' + P[py].values[yi] : '');
        rect.appendChild(el('title', {}, where + (r ? ': ' + r.cells[0] + ' (' + r.label + ')' : ': nothing shown')));
        svg.appendChild(rect);
        if (r && cw >= 34 && ch >= 14) {
          svg.appendChild(el('text', { x: L + xi * cw + cw / 2, y: T + yi * ch + ch / 2 + 4, 'text-anchor': 'middle', 'pointer-events': 'none' }, r.score.toFixed(2)));
        }
      }
    }
    for (let yi = 0; yi < ny && py >= 0; yi++) {
      svg.appendChild(el('text', { x: L - 6, y: T + yi * ch + ch / 2 + 4, 'text-anchor': 'end', class: 'muted' }, P[py].values[yi]));
    }
    svg.appendChild(el('text', { x: L + (nx * cw) / 2, y: H - 6, 'text-anchor': 'middle' }, P[px].name));
    if (py >= 0) svg.appendChild(el('text', { x: 4, y: T - 8 }, P[py].name + ' ↓'));
    svg.addEventListener('click', (e) => {
      const t = e.target;
      if (!t.dataset || t.dataset.x === undefined) return;
      setFilter(px, +t.dataset.x);
      if (py >= 0) setFilter(py, +t.dataset.y);
      render();
    });
    box.appendChild(svg);
  }

  const seconds = (s) => (s === null || s === undefined ? 'n/a' : s < 1 ? (s * 1000).toPrecision(4) + ' ms' : s.toFixed(2) + ' s');

  function renderTimeline() {
    const box = $('timeline');
    box.textContent = '';
    const t = G.timeline;
    const facts = [['stored over', seconds(t.span)], ['builds, per variant, summed', seconds(t.build)], ['bench processes, per variant, summed', seconds(t.run)], ['kernels (' + t.samples + ' cold samples)', seconds(t.kernels)]];
    const times = document.createElement('div');
    times.className = 'times';
    times.innerHTML = facts.map(([k, v]) => '<div><b>' + esc(v) + '</b>' + esc(k) + '</div>').join('');
    box.appendChild(times);
    const pts = ROWS.map((r) => [G.variants.at[r.i], r]).filter((p) => p[0] !== null).sort((a, b) => a[0] - b[0]);
    if (!pts.length) return;
    const W = 960;
    const H = 220;
    const L = 60;
    const B = 30;
    const t0 = pts[0][0];
    const t1 = Math.max(pts[pts.length - 1][0], t0 + 1e-3);
    const x = (v) => L + ((v - t0) / (t1 - t0)) * (W - L - 20);
    const y = (n) => H - B - (n / pts.length) * (H - B - 20);
    const svg = el('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, class: 'plot' });
    for (const v of ticks(t0, t1, 8)) {
      svg.appendChild(el('line', { x1: x(v), x2: x(v), y1: 16, y2: H - B, class: 'grid' }));
      svg.appendChild(el('text', { x: x(v), y: H - B + 14, 'text-anchor': 'middle', class: 'muted' }, v + ' s'));
    }
    for (const n of ticks(0, pts.length, 4)) {
      svg.appendChild(el('text', { x: L - 6, y: y(n) + 4, 'text-anchor': 'end', class: 'muted' }, n));
    }
    let d = '';
    let failed = '';
    pts.forEach(([at, r], k) => {
      d += (k ? 'L' : 'M') + x(at).toFixed(1) + ' ' + y(k + 1).toFixed(1);
      if (r.status !== 'ok') failed += 'M' + x(at).toFixed(1) + ' ' + (H - B) + 'v-6';
    });
    svg.appendChild(el('path', { d, fill: 'none', stroke: '#0b57d0', 'stroke-width': 1.5 }));
    if (failed) svg.appendChild(el('path', { d: failed, stroke: '#b42318', 'stroke-width': 1 }));
    svg.appendChild(el('text', { x: L, y: 12 }, 'variants stored (red ticks: not ok), against seconds since the first stored row'));
    box.appendChild(svg);
  }

  function renderDetails() {
    const i = state.picked;
    $('details').hidden = i < 0;
    if (i < 0) return;
    const r = ROWS[i];
    const v = G.variants;
    $('details-label').textContent = r.label;
    const facts = [['rank', String(i + 1) + ' of ' + ROWS.length], ['status', r.status]];
    if (v.message[i]) facts.push(['message', v.message[i]]);
    DATA.header.slice(1).forEach((h, k) => { if (r.cells[k]) facts.push([h, r.cells[k]]); });
    if (v.energy && v.energy[i]) {
      const [joules, watts, edp, front] = v.energy[i];
      facts.push(['energy per launch', joules], ['power', watts], ['EDP', edp], ['time × energy', front]);
    }
    facts.push(['build', seconds(v.build[i])], ['bench process', seconds(v.run[i])]);
    if (v.at[i] !== null) facts.push(['stored', v.at[i].toFixed(3) + ' s after the first row']);
    for (const w of r.measured) facts.push([G.workloads[w.rt], w.samples.length + ' cold samples' + (w.stop ? ', stopped: ' + w.stop : '')]);
    $('details-facts').innerHTML = facts.map(([k, val]) => '<dt>' + esc(k) + '</dt><dd' + (k === 'message' ? ' class="message"' : '') + '>' + esc(val) + '</dd>').join('');
    const box = $('details-samples');
    box.textContent = '';
    const base = ROWS.find((b) => b.label === 'base');
    for (const w of r.measured) {
      if (!w.samples.length) continue;
      const series = [{ name: r.label, samples: w.samples, color: '#d62728' }];
      if (w.control !== null) series.push({ name: 'base, same process (control)', samples: G.controls[w.control], color: '#0b57d0' });
      else if (base && base.i !== i && samplesOn(base.i, w.rt)) series.push({ name: 'base', samples: samplesOn(base.i, w.rt).samples, color: '#0b57d0' });
      box.appendChild(strips(series, G.unit, G.workloads[w.rt] + ' (' + G.unit + ')'));
    }
  }

  // --- controls ------------------------------------------------------------------------
  function setFilter(p, value) {
    state.filters[p] = value;
    const sel = document.querySelector('select[data-param="' + p + '"]');
    if (sel) sel.value = String(value);
  }

  function showGroup(k) {
    state.group = k;
    G = DATA.groups[k];
    ROWS = derive(G);
    state.filters = G.params.map(() => -1);
    state.picked = -1;
    state.heatX = 0;
    state.heatY = Math.min(1, G.params.length - 1);
    // Fixed column widths: the browser then lays the table out from them instead of
    // measuring every cell of every row, which is most of the cost of 16 000 rows.
    const longest = ROWS.reduce((n, r) => Math.max(n, r.label.length), 8);
    const widths = { '#': 7, variant: longest + 2, samples: 15, sig: 5 };
    $('table-wrap').style.setProperty('--columns', ['#'].concat(DATA.header).map((h) => 'calc(' + (widths[h] || 10) + 'ch + 16px)').join(' '));
    $('title').textContent = G.title;
    const ok = ROWS.filter((r) => r.status === 'ok').length;
    $('counts').textContent = ROWS.length + ' variants (base included), ' + ok + ' ok, ' + (ROWS.length - ok) + ' not; ' + G.workloads.length + ' runtime workload' + (G.workloads.length === 1 ? '' : 's') + ': ' + G.workloads.join(', ');
    $('param-filters').innerHTML = G.params.map((p, i) => '<label>' + esc(p.name) + ' <select data-param="' + i + '"><option value="-1">any</option>' + p.values.map((v, k) => '<option value="' + k + '">' + esc(v) + '</option>').join('') + '</select></label>').join('');
    const opts = G.params.map((p, i) => '<option value="' + i + '">' + esc(p.name) + '</option>').join('');
    $('heat-x').innerHTML = opts;
    $('heat-y').innerHTML = opts;
    $('heat-x').value = String(state.heatX);
    $('heat-y').value = String(state.heatY);
    renderTimeline();
    renderDetails();
    render();
  }

  function init() {
    $('source').textContent = 'from ' + DATA.store + ' · ' + DATA.groups.length + ' group' + (DATA.groups.length === 1 ? '' : 's');
    $('head').innerHTML = ['#'].concat(DATA.header).map((h) => '<span role="columnheader" data-col="' + esc(h) + '">' + esc(h) + '</span>').join('');
    $('legend').innerHTML = DATA.legend.map((l) => '<li>' + esc(l) + '</li>').join('');
    // The groups of one function, or of all: the group list offers only those.
    const groupsOf = (f) => DATA.groups.map((g, k) => [g, k]).filter(([g]) => f === '' || g.function === f);
    const listGroups = (f) => {
      const shown = groupsOf(f);
      $('group').innerHTML = shown.map(([g, k]) => '<option value="' + k + '">' + esc(g.title) + '</option>').join('');
      $('group-choice').hidden = shown.length < 2;
      return shown;
    };
    const functions = [...new Set(DATA.groups.map((g) => g.function))].sort();
    $('function').innerHTML = '<option value="">all</option>' +
      functions.map((f) => '<option value="' + esc(f) + '">' + esc(f) + '</option>').join('');
    $('function-choice').hidden = functions.length < 2;
    $('function').addEventListener('change', (e) => {
      const shown = listGroups(e.target.value);
      if (shown.length) showGroup(shown[0][1]);
    });
    listGroups('');
    $('group').addEventListener('change', (e) => showGroup(+e.target.value));
    $('head').addEventListener('click', (e) => {
      const col = e.target.dataset && e.target.dataset.col;
      if (!col) return;
      state.dir = state.sort === col ? -state.dir : DESCENDING.has(col) ? -1 : 1;
      state.sort = col;
      renderTable();
      renderDistributions();
    });
    let timer = 0;
    $('search').addEventListener('input', (e) => {
      clearTimeout(timer);
      timer = setTimeout(() => { state.query = e.target.value; render(); }, 120);
    });
    $('status').addEventListener('change', (e) => { state.status = e.target.value; render(); });
    $('param-filters').addEventListener('change', (e) => {
      if (e.target.dataset.param === undefined) return;
      state.filters[+e.target.dataset.param] = +e.target.value;
      render();
    });
    $('clear').addEventListener('click', () => {
      state.query = '';
      state.status = '';
      $('search').value = '';
      $('status').value = '';
      G.params.forEach((_, p) => setFilter(p, -1));
      render();
    });
    $('heat-x').addEventListener('change', (e) => { state.heatX = +e.target.value; renderHeat(); });
    $('heat-y').addEventListener('change', (e) => { state.heatY = +e.target.value; renderHeat(); });
    $('rows').addEventListener('click', (e) => {
      const tr = e.target.closest('.row');
      if (!tr) return;
      const old = $('rows').querySelector('.row.picked');
      if (old) old.classList.remove('picked');
      tr.classList.add('picked');
      state.picked = +tr.dataset.i;
      renderDetails();
    });
    if (!DATA.groups.length) {
      $('title').textContent = 'The store holds no results.';
      return;
    }
    showGroup(0);
    // After the next frame, the table has been laid out and painted: the time to this mark
    // is what opening the page costs (scripts/local/report-png.py reads it).
    requestAnimationFrame(() => setTimeout(() => performance.mark('gputune-rendered'), 0));
  }

  init();
})();

// xpool's dashboard (docs/dashboard.md): lists nodes, pods and events from the API with the
// user's bearer token, keeps them current through the API's watches (fetch streaming), and draws
// the server's last hour (/ui/api/history). No framework: the DOM, built with textContent only,
// so nothing from the API is ever read as HTML.
'use strict';

const TOKEN_KEY = 'xpool.token';
const state = {
  token: null,
  nodes: new Map(), // name -> Node
  pods: new Map(), // namespace/name -> Pod
  events: new Map(), // namespace/name of a pod -> its FailedScheduling Event
  history: null,
  live: new Set(), // the watches now connected
  abort: null,
  timer: null,
};

const $ = (id) => document.getElementById(id);

// el('div', {class: 'x'}, child, 'text', ...): an element; strings become text nodes.
function el(tag, attrs, ...children) {
  const svg = ['svg', 'polyline', 'polygon', 'line', 'circle'].includes(tag);
  const node = svg ? document.createElementNS('http://www.w3.org/2000/svg', tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c !== null && c !== undefined && c !== false) node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

// ---- quantities --------------------------------------------------------------------------------

const SUFFIX = { n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };

function quantity(q) {
  if (typeof q === 'number') return q;
  const m = /^([+-]?[0-9.]+)(?:[eE]([+-]?[0-9]+))?([a-zA-Z]*)$/.exec(String(q || '').trim());
  if (!m || !(m[3] in SUFFIX)) return 0;
  return parseFloat(m[1]) * 10 ** (m[2] ? parseInt(m[2], 10) : 0) * SUFFIX[m[3]];
}

function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n >= 100 || i === 0 ? Math.round(n) : n.toFixed(1).replace(/\.0$/, '')} ${units[i]}`;
}

function amount(resource, n) {
  if (resource === 'memory' || resource === 'ephemeral-storage' || resource.endsWith('-memory') ||
      resource.startsWith('hugepages-')) return bytes(n);
  return Number.isInteger(n) ? String(n) : n.toFixed(2).replace(/0+$/, '').replace(/\.$/, '');
}

// What a pod asks for: requests, or limits where a container gives no request.
function podAsks(pod) {
  const asks = {};
  for (const c of (pod.spec && pod.spec.containers) || []) {
    const r = c.resources || {};
    const mine = Object.assign({}, ...Object.entries(r.limits || {}).map(([k, v]) => ({ [k]: quantity(v) })));
    for (const [k, v] of Object.entries(r.requests || {})) mine[k] = quantity(v);
    for (const [k, v] of Object.entries(mine)) asks[k] = (asks[k] || 0) + v;
  }
  return asks;
}

const podKey = (o) => `${o.metadata.namespace || ''}/${o.metadata.name}`;
const podActive = (p) => p.spec && p.spec.nodeName && !['Succeeded', 'Failed'].includes(p.status && p.status.phase);

function placement(pod) {
  const a = pod.metadata.annotations && pod.metadata.annotations['xpool.io/placement'];
  if (!a) return null;
  try { return JSON.parse(a); } catch (e) { return null; }
}

function kindClass(kind) {
  return ['gpu', 'npu', 'fpga', 'cpu'].includes(kind) ? `k-${kind}` : 'k-other';
}

// The device kind serving each resource, from the nodes' published devices.
function resourceKinds() {
  const kinds = { cpu: 'cpu', memory: 'cpu' };
  for (const n of state.nodes.values()) {
    for (const d of (n.status && n.status.xpool && n.status.xpool.devices) || []) {
      if (d.resourceName && d.kind) kinds[d.resourceName] = d.kind;
    }
  }
  return kinds;
}

// ---- the API -----------------------------------------------------------------------------------

class Unauthorized extends Error {}

async function api(path, signal) {
  const res = await fetch(path, {
    headers: { Authorization: `Bearer ${state.token}`, Accept: 'application/json' },
    cache: 'no-store',
    credentials: 'omit',
    signal,
  });
  if (res.status === 401) throw new Unauthorized('the server refused this token');
  if (res.status === 403) throw new Unauthorized('this token may not read the pool');
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return res;
}

const KINDS = [
  { name: 'nodes', path: '/api/v1/nodes', map: () => state.nodes, key: (o) => o.metadata.name, keep: () => true },
  { name: 'pods', path: '/api/v1/pods', map: () => state.pods, key: podKey, keep: () => true },
  {
    name: 'events', path: '/api/v1/events', map: () => state.events,
    key: (e) => `${(e.involvedObject && e.involvedObject.namespace) || ''}/${e.involvedObject && e.involvedObject.name}`,
    keep: (e) => e.reason === 'FailedScheduling' && e.involvedObject && e.involvedObject.kind === 'Pod',
  },
];

async function list(kind, signal) {
  const doc = await (await api(kind.path, signal)).json();
  const map = kind.map();
  map.clear();
  for (const o of doc.items || []) if (kind.keep(o)) map.set(kind.key(o), o);
  return doc.metadata && doc.metadata.resourceVersion;
}

// Lists a kind, then follows its watch; on any break lists again after a pause (bounded backoff).
async function follow(kind, signal) {
  let delay = 500;
  while (!signal.aborted) {
    try {
      let rv = await list(kind, signal);
      render();
      const res = await api(`${kind.path}?watch=true&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(rv || '')}`, signal);
      state.live.add(kind.name);
      liveState();
      delay = 500;
      await readStream(res, (ev) => {
        if (ev.type === 'ERROR') throw new Error((ev.object && ev.object.message) || 'watch error');
        const o = ev.object;
        if (ev.type === 'DELETED' || !kind.keep(o)) kind.map().delete(kind.key(o));
        else if (ev.type !== 'BOOKMARK') kind.map().set(kind.key(o), o);
        render();
      });
    } catch (e) {
      if (e instanceof Unauthorized) return signOut(e.message);
      if (signal.aborted) return;
    }
    state.live.delete(kind.name);
    liveState();
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 10000);
  }
}

// Reads a watch stream: one JSON event per line.
async function readStream(res, onEvent) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line) onEvent(JSON.parse(line));
    }
  }
}

async function pollHistory(signal) {
  while (!signal.aborted) {
    try {
      state.history = await (await api('/ui/api/history', signal)).json();
      renderHistory();
    } catch (e) {
      if (e instanceof Unauthorized) return signOut(e.message);
    }
    await new Promise((r) => setTimeout(r, 10000));
  }
}

function liveState() {
  const live = $('live');
  const all = state.live.size === KINDS.length;
  live.dataset.state = all ? 'live' : 'retry';
  live.textContent = all ? 'Live' : 'Connecting…';
}

// ---- rendering ---------------------------------------------------------------------------------

function render() {
  if (state.timer) return;
  state.timer = setTimeout(() => {
    state.timer = null;
    renderTiles();
    renderNodes();
    renderPods();
  }, 30);
}

function meter(fraction, label) {
  const fill = el('span');
  fill.style.width = `${Math.max(0, Math.min(1, fraction)) * 100}%`;
  return el('div', { class: 'meter', role: 'meter', 'aria-label': label, 'aria-valuemin': 0, 'aria-valuemax': 100,
    'aria-valuenow': Math.round(fraction * 100) }, fill);
}

function tile(label, value, sub, cls, fraction) {
  return el('div', { class: `tile ${cls || ''}` }, el('div', { class: 'label' }, label),
    el('div', { class: 'value' }, value), el('div', { class: 'sub' }, sub),
    fraction === undefined ? null : meter(fraction, `${label} allocated`));
}

function renderTiles() {
  const nodes = [...state.nodes.values()];
  const pods = [...state.pods.values()];
  const ready = nodes.filter((n) => ((n.status && n.status.conditions) || []).some((c) => c.type === 'Ready' && c.status === 'True'));
  const phase = (p) => (p.status && p.status.phase) || 'Pending';
  const tiles = [
    tile('Nodes', `${ready.length} / ${nodes.length}`, 'ready'),
    tile('Pods', String(pods.filter((p) => phase(p) === 'Running').length),
      `running · ${pods.filter((p) => phase(p) === 'Pending').length} pending`),
  ];
  const offer = {};
  const used = {};
  for (const n of nodes) {
    for (const [r, q] of Object.entries((n.status && n.status.allocatable) || {})) offer[r] = (offer[r] || 0) + quantity(q);
  }
  for (const p of pods.filter(podActive)) {
    for (const [r, q] of Object.entries(podAsks(p))) used[r] = (used[r] || 0) + q;
  }
  const kinds = resourceKinds();
  const shown = Object.keys(offer).filter((r) => r === 'cpu' || r === 'memory' || (kinds[r] && kinds[r] !== 'cpu')).sort((a, b) =>
    (kinds[a] === 'cpu') - (kinds[b] === 'cpu') || a.localeCompare(b));
  for (const r of shown) {
    const u = used[r] || 0;
    tiles.push(tile(r, `${amount(r, u)} / ${amount(r, offer[r])}`, `${kinds[r] === 'cpu' ? '' : `${kinds[r]} · `}allocated`,
      kindClass(kinds[r]), offer[r] ? u / offer[r] : 0));
  }
  $('tiles').replaceChildren(...tiles);
}

// Pods holding each device id (from their placements).
function holders() {
  const by = new Map();
  for (const p of state.pods.values()) {
    if (!podActive(p)) continue;
    const pl = placement(p);
    for (const d of (pl && pl.devices) || []) {
      if (!by.has(d.id)) by.set(d.id, []);
      by.get(d.id).push({ pod: podKey(p), milli: d.milli });
    }
  }
  return by;
}

function deviceItem(d, held) {
  const who = held.get(d.id) || [];
  const health = d.health && d.health !== 'Healthy'
    ? el('span', { class: 'badge bad', title: d.healthReason || '' }, d.health) : null;
  const facts = [d.memoryBytes ? bytes(d.memoryBytes) : null, (d.numaNode ?? -1) >= 0 ? `NUMA ${d.numaNode}` : null,
    d.pciAddress || null].filter(Boolean).join(' · ');
  const util = d.metrics && typeof d.metrics.utilizationPercent === 'number' ? ` · ${Math.round(d.metrics.utilizationPercent)} % busy` : '';
  return el('li', { class: `device ${kindClass(d.kind)} ${who.length ? 'held' : 'free'}` },
    el('div', { class: 'kind' }, `${d.kind || 'device'} ${d.index !== undefined ? d.index : ''}`, ' ', health),
    el('div', { class: 'model' }, d.model || d.vendor || d.resourceName || ''),
    el('div', { class: 'mono muted' }, d.id),
    el('div', { class: 'muted' }, facts + util),
    el('div', { class: 'holder' }, who.length
      ? who.map((h) => `${h.pod}${h.milli && h.milli < 1000 ? ` (${h.milli / 10} %)` : ''}`).join(', ')
      : 'free'));
}

function topology(x) {
  const numa = (x.numaNodes || []).map((n) => el('li', {}, `NUMA ${n.id}: CPUs ${n.cpus || '?'}${n.memoryBytes ? `, ${bytes(n.memoryBytes)}` : ''}`));
  const fast = (x.links || []).filter((l) => l.level !== 'SYS');
  const links = fast.map((l) => el('li', {}, el('span', { class: 'mono' }, `${l.a} ↔ ${l.b}`),
    ` ${l.level}${l.nvlinks ? ` ×${l.nvlinks}` : ''}${l.bandwidthGBps ? `, ${l.bandwidthGBps} GB/s` : ''}`));
  const slow = (x.links || []).length - fast.length;
  if (!numa.length && !links.length) return null;
  return el('details', { class: 'topo', open: true },
    el('summary', {}, 'Topology'),
    el('ul', { 'aria-label': 'NUMA nodes' }, numa),
    links.length ? el('ul', { class: 'links', 'aria-label': 'Device links' }, links) : null,
    slow ? el('p', { class: 'muted small' }, `${slow} more pairs only across the system bus (SYS)`) : null);
}

function renderNodes() {
  const held = holders();
  const cards = [...state.nodes.values()].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name)).map((n) => {
    const st = n.status || {};
    const x = st.xpool || {};
    const readyC = (st.conditions || []).find((c) => c.type === 'Ready');
    const ready = readyC && readyC.status === 'True';
    const cap = st.allocatable || {};
    const devices = x.devices || [];
    return el('article', { class: 'node', 'aria-label': `Node ${n.metadata.name}` },
      el('div', { class: 'node-head' }, el('h3', {}, n.metadata.name),
        el('span', { class: `badge ${ready ? 'ok' : 'bad'}`, title: (readyC && readyC.message) || '' }, ready ? 'Ready' : 'NotReady'),
        n.spec && n.spec.unschedulable ? el('span', { class: 'badge warn' }, 'Cordoned') : null,
        el('span', { class: 'muted small' }, `${cap.cpu || '?'} CPUs · ${cap.memory ? bytes(quantity(cap.memory)) : '?'}`)),
      devices.length ? el('ul', { class: 'devices', 'aria-label': `Devices of ${n.metadata.name}` }, devices.map((d) => deviceItem(d, held)))
        : el('p', { class: 'empty' }, 'No accelerators published.'),
      topology(x));
  });
  $('nodes').replaceChildren(...(cards.length ? cards : [el('p', { class: 'empty' }, 'No nodes yet: start an agent (xpool agent) or xpool up.')]));
  $('nodes-count').textContent = `${cards.length} node${cards.length === 1 ? '' : 's'}`;
}

function whyCell(p) {
  const cond = ((p.status && p.status.conditions) || []).find((c) => c.type === 'PodScheduled');
  const ev = podActive(p) ? null : state.events.get(podKey(p));
  const parts = [];
  if (cond && cond.status === 'False') {
    parts.push(el('div', {}, el('span', { class: 'reason' }, cond.reason || 'Unschedulable'), ': ', cond.message || ''));
  }
  if (ev) {
    const same = cond && cond.message === ev.message;
    parts.push(el('div', { class: 'muted small event' }, `${ev.type || 'Warning'} FailedScheduling`,
      (ev.count || 1) > 1 ? ` ×${ev.count}` : '', ev.source && ev.source.component ? ` from ${ev.source.component}` : '',
      same ? '' : `: ${ev.message || ''}`));
  }
  const reason = p.status && (p.status.reason || p.status.message);
  if (!parts.length && reason) parts.push(el('div', {}, reason));
  return el('td', { class: 'why' }, parts);
}

function renderPods() {
  const pods = [...state.pods.values()].sort((a, b) => podKey(a).localeCompare(podKey(b)));
  const badge = { Running: 'ok', Pending: 'warn', Failed: 'bad', Succeeded: '' };
  const rows = pods.map((p) => {
    const phase = (p.status && p.status.phase) || 'Pending';
    const pl = placement(p);
    const devs = ((pl && pl.devices) || []).map((d) => `${d.id}${d.milli && d.milli < 1000 ? ` (${d.milli / 10} %)` : ''}`);
    const extra = pl ? [pl.cpus ? `CPUs ${pl.cpus}` : null, (pl.numaNode ?? -1) >= 0 ? `NUMA ${pl.numaNode}` : null].filter(Boolean).join(' · ') : '';
    return el('tr', { 'data-pod': podKey(p) },
      el('td', {}, el('span', { class: 'mono' }, p.metadata.name), el('div', { class: 'muted small' }, p.metadata.namespace)),
      el('td', {}, el('span', { class: `badge ${badge[phase] || ''}` }, p.metadata.deletionTimestamp ? 'Terminating' : phase)),
      el('td', {}, (p.spec && p.spec.nodeName) || el('span', { class: 'muted' }, '—')),
      el('td', {}, devs.length ? el('div', { class: 'mono' }, devs.join(', ')) : el('span', { class: 'muted' }, '—'),
        extra ? el('div', { class: 'muted small' }, extra) : null),
      whyCell(p));
  });
  const body = $('pods').tBodies[0];
  body.replaceChildren(...(rows.length ? rows : [el('tr', {}, el('td', { colspan: 5, class: 'empty' }, 'No pods yet: kubectl apply -f a manifest.'))]));
  $('pods-count').textContent = `${pods.length} pod${pods.length === 1 ? '' : 's'}`;
}

// A small line chart of values (0..1) at times t over the window ending at now.
function chart(title, valueText, points, doc, cls, label) {
  const w = 300;
  const h = 60;
  const start = doc.now - doc.windowSeconds;
  const xy = points.map(([t, v]) => [((t - start) / doc.windowSeconds) * w, h - Math.max(0, Math.min(1, v)) * (h - 2) - 1]);
  const line = xy.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(' ');
  const area = xy.length ? `${xy[0][0].toFixed(1)},${h} ${line} ${xy[xy.length - 1][0].toFixed(1)},${h}` : '';
  return el('figure', { class: `chart ${cls}` },
    el('figcaption', {}, el('strong', {}, title), el('span', {}, valueText)),
    el('svg', { viewBox: `0 0 ${w} ${h}`, preserveAspectRatio: 'none', role: 'img', 'aria-label': label },
      el('line', { class: 'grid', x1: 0, y1: h / 2, x2: w, y2: h / 2 }),
      el('line', { class: 'grid', x1: 0, y1: h - 0.5, x2: w, y2: h - 0.5 }),
      xy.length > 1 ? el('polygon', { class: 'area', points: area }) : null,
      el('polyline', { class: 'line', points: line }),
      xy.length ? el('circle', { class: 'dot', cx: xy[xy.length - 1][0], cy: xy[xy.length - 1][1], r: 3 }) : null),
    el('div', { class: 'axis', 'aria-hidden': 'true' }, el('span', {}, '60 min ago'), el('span', {}, 'now')));
}

function renderHistory() {
  const doc = state.history;
  if (!doc) return;
  const totals = (doc.allocation || []).filter((s) => s.node === '' && s.resource !== 'pods' && s.points.length)
    .sort((a, b) => (a.kind === '') - (b.kind === '') || a.resource.localeCompare(b.resource));
  $('charts').replaceChildren(...totals.map((s) => {
    const [, a, c] = s.points[s.points.length - 1];
    const pts = s.points.map(([t, al, ca]) => [t, ca ? al / ca : 0]);
    return chart(s.resource, `${amount(s.resource, a)} / ${amount(s.resource, c)}`, pts, doc,
      kindClass(s.kind || 'cpu'), `${s.resource} allocated over the last hour, now ${Math.round(c ? (a / c) * 100 : 0)} %`);
  }));
  const usage = (doc.usage || []).filter((s) => s.points.length);
  $('usage-none').hidden = usage.length > 0;
  $('usage').replaceChildren(...usage.map((s) => {
    const last = s.points[s.points.length - 1][1];
    return chart(`${s.device}`, `${Math.round(last)} % busy`, s.points.map(([t, v]) => [t, v / 100]), doc,
      kindClass(s.kind), `${s.kind} ${s.device} on ${s.node} utilisation over the last hour, now ${Math.round(last)} %`);
  }));
}

// ---- signing in and out ------------------------------------------------------------------------

function show(signedIn) {
  $('login').hidden = signedIn;
  $('dash').hidden = !signedIn;
  $('signout').hidden = !signedIn;
}

function signIn(token) {
  state.token = token;
  sessionStorage.setItem(TOKEN_KEY, token);
  state.abort = new AbortController();
  show(true);
  $('live').dataset.state = 'retry';
  $('live').textContent = 'Connecting…';
  for (const kind of KINDS) follow(kind, state.abort.signal);
  pollHistory(state.abort.signal);
}

function signOut(message) {
  if (state.abort) state.abort.abort();
  state.abort = null;
  state.token = null;
  state.live.clear();
  sessionStorage.removeItem(TOKEN_KEY);
  for (const kind of KINDS) kind.map().clear();
  show(false);
  $('live').dataset.state = 'off';
  $('live').textContent = 'Signed out';
  $('login-error').textContent = message || '';
  $('token').value = '';
  $('token').focus();
}

document.addEventListener('DOMContentLoaded', () => {
  $('login-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const token = $('token').value.trim();
    if (token) signIn(token);
  });
  $('signout').addEventListener('click', () => signOut(''));
  // #token=... signs in too (scripts and tests); the fragment never reaches a server and is
  // removed from the address at once.
  const m = /^#token=(.+)$/.exec(location.hash);
  if (m) history.replaceState(null, '', location.pathname);
  const token = m ? decodeURIComponent(m[1]) : sessionStorage.getItem(TOKEN_KEY);
  if (token) signIn(token);
  else show(false);
});

// herald's admin page: a few views over the JSON API of the same server.
// Every value from the API goes into the page as text (textContent), never
// as HTML. Changes carry the session's CSRF token; the cookie does the rest.
'use strict';
(() => {
  const CSRF = document.querySelector('meta[name="csrf-token"]').content;
  const STATUSES = ['QUEUED', 'SENT_TO_NS', 'DELIVERED_TO_NS', 'SENT_TO_DEVICE', 'TO_RETRY',
    'DELIVERY_SUCCESSFUL', 'DELIVERY_FAILED', 'CANCELLED'];
  const WORDS = {
    QUEUED: 'Queued', SENT_TO_NS: 'Sent to the carrier', DELIVERED_TO_NS: 'Accepted by the carrier',
    SENT_TO_DEVICE: 'Sent to the device', TO_RETRY: 'Waiting to retry', DELIVERY_SUCCESSFUL: 'Delivered',
    DELIVERY_FAILED: 'Failed', CANCELLED: 'Cancelled',
  };
  const EXPLAIN = {
    terminal: 'It is finished: nothing more will happen to it unless it is replayed.',
    dispatching: 'It is due now and goes out as soon as a send slot is free.',
    backoff: 'It is waiting before its next attempt.',
    awaiting_carrier: 'The carrier has it; herald is waiting for its answer.',
    lane_spacing: 'Its lane spaces messages out, and its turn has not come yet.',
    lane_concurrency: 'Its lane already has as many messages in flight as it may.',
    rate_limited: 'A rate limit holds it back.',
    tenant_rate_limited: 'The tenant\'s rate limit on this route holds it back.',
    lane_paused: 'Its lane is paused: by an operator, or because the carrier asked herald to wait.',
    route_missing: 'Its route is not in the configuration: it waits until the route is back.',
    ordered_behind: 'Its target takes messages one at a time, in order, and an earlier one goes first.',
    scheduled: 'It is scheduled: it is not sent before its time.',
  };
  const waiting = (s) => s === 'QUEUED' || s === 'TO_RETRY';
  const terminal = (s) => s === 'DELIVERY_SUCCESSFUL' || s === 'DELIVERY_FAILED' || s === 'CANCELLED';
  const replayable = (s) => s === 'DELIVERY_FAILED' || s === 'CANCELLED';
  // A message an operator may send now: scheduled for later, or waiting to retry.
  const sendable = (m) => m.status === 'TO_RETRY' || (m.status === 'QUEUED' && !!m.next_attempt_at && new Date(m.next_attempt_at) > Date.now());

  // ---- DOM helpers -------------------------------------------------------

  const $ = (sel, root = document) => root.querySelector(sel);
  const $$ = (sel, root = document) => [...root.querySelectorAll(sel)];

  // el makes an element; strings among the children become text nodes.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    setAttrs(e, attrs);
    for (const c of children.flat()) if (c != null && c !== false) e.append(c);
    return e;
  }
  const SVG = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs, ...children) {
    const e = document.createElementNS(SVG, tag);
    setAttrs(e, attrs);
    for (const c of children.flat()) if (c != null) e.append(c);
    return e;
  }
  function setAttrs(e, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v == null || v === false) continue;
      if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
  }

  // fill replaces tbody's rows when sig differs from the last, keeping the
  // keyboard focus on the same link, button or box.
  function fill(tbody, sig, rows) {
    if (tbody.dataset.sig === sig) return false;
    const a = document.activeElement;
    const key = tbody.contains(a) ? a.dataset.key || a.getAttribute('href') : null;
    tbody.replaceChildren(...rows);
    tbody.dataset.sig = sig;
    if (key) {
      const same = $$('a, button, input', tbody).find((e) => (e.dataset.key || e.getAttribute('href')) === key);
      if (same) same.focus();
    }
    return true;
  }
  function emptyRow(cols, text) {
    return el('tr', { class: 'empty' }, el('td', { colspan: cols, text }));
  }

  // ---- formatting --------------------------------------------------------

  const pad = (n, w = 2) => String(n).padStart(w, '0');
  function fmtTime(iso, ms = false) {
    if (!iso) return '—';
    const d = new Date(iso);
    const s = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
    return ms ? `${s}.${pad(d.getMilliseconds(), 3)}` : s;
  }
  function timeEl(iso, ms = false) {
    if (!iso) return '—';
    return el('time', { datetime: iso, title: iso, text: fmtTime(iso, ms) });
  }
  function fmtDur(ms) {
    ms = Math.max(0, ms);
    if (ms < 1000) return `${Math.round(ms)} ms`;
    const s = ms / 1000;
    if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
    const m = Math.floor(s / 60);
    if (m < 60) return `${m} min ${Math.round(s - m * 60)} s`;
    const h = Math.floor(m / 60);
    if (h < 24) return `${h} h ${m - h * 60} min`;
    const d = Math.floor(h / 24);
    return `${d} d ${h - d * 24} h`;
  }
  function fmtFromNow(iso) {
    const ms = new Date(iso) - Date.now();
    return ms >= 0 ? `in ${fmtDur(ms)}` : `${fmtDur(-ms)} ago`;
  }
  const fmtNum = (n) => Number(n || 0).toLocaleString();
  const fmtMS = (ms) => (ms > 0 ? fmtDur(ms) : '—');
  function badge(status) {
    return el('span', { class: 'badge', 'data-status': status, title: status, text: WORDS[status] || status });
  }
  const msgLink = (id) => el('a', { href: `#/messages/${encodeURIComponent(id)}`, class: 'mono', text: id });

  // ---- the API -----------------------------------------------------------

  class APIError extends Error {
    constructor(message, status, code) { super(message); this.status = status; this.code = code; }
  }
  async function api(method, path, body) {
    const opts = { method, headers: { Accept: 'application/json' }, credentials: 'same-origin' };
    if (method !== 'GET') opts.headers['X-CSRF-Token'] = CSRF;
    if (body !== undefined) {
      opts.headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(path, opts);
    } catch (e) {
      throw new APIError('herald does not answer', 0, 'network');
    }
    if (res.status === 401) {
      location.assign('/ui/login');
      throw new APIError('the session has ended: log in again', 401, 'unauthorized');
    }
    const data = await res.json().catch(() => null);
    if (!res.ok) {
      throw new APIError((data && data.error && data.error.message) || res.statusText, res.status, data && data.error && data.error.code);
    }
    return data;
  }
  const enc = encodeURIComponent;

  // ---- announcements -----------------------------------------------------

  let flashTimer = 0;
  function flash(text, kind = 'info') {
    const f = $('#flash');
    clearTimeout(flashTimer);
    f.dataset.kind = kind;
    f.textContent = text;
    if (kind === 'info') flashTimer = setTimeout(() => { f.textContent = ''; }, 8000);
  }
  let pollFailed = false;
  function pollError(e) {
    pollFailed = true;
    flash(`Could not refresh: ${e.message}. Trying again.`, 'error');
  }
  function pollOK() {
    if (pollFailed) {
      pollFailed = false;
      flash('');
    }
  }

  // poller runs fn now and then every ms until stopped; refresh runs it at
  // once. fn gets live(), false once the page has moved on.
  function poller(fn, ms) {
    let timer = 0;
    let stopped = false;
    let running = false;
    let again = false;
    const live = () => !stopped;
    async function tick() {
      clearTimeout(timer);
      if (stopped) return;
      if (running) { again = true; return; }
      running = true;
      try {
        await fn(live);
        pollOK();
      } catch (e) {
        if (!stopped && e.status !== 401) pollError(e);
      }
      running = false;
      if (stopped) return;
      if (again) { again = false; tick(); return; }
      timer = setTimeout(tick, ms);
    }
    tick();
    return { stop() { stopped = true; clearTimeout(timer); }, refresh: tick };
  }

  // confirm asks in the page's dialog; it resolves true when confirmed.
  function confirmDialog({ title, text, yes, no = 'Cancel' }) {
    const d = $('#confirm');
    $('#confirm-title').textContent = title;
    $('#confirm-text').textContent = text;
    $('#confirm-yes').textContent = yes;
    $('#confirm-no').textContent = no;
    d.returnValue = '';
    return new Promise((resolve) => {
      d.addEventListener('close', () => resolve(d.returnValue === 'ok'), { once: true });
      d.showModal();
    });
  }

  // The routes the overview has seen, offered in the route fields.
  function knowRoutes(routes) {
    const list = $('#routes');
    const sig = routes.join('\n');
    if (list.dataset.sig === sig) return;
    list.dataset.sig = sig;
    list.replaceChildren(...routes.map((r) => el('option', { value: r })));
  }

  // ---- Overview ----------------------------------------------------------

  // The orphaned routes are read every ORPHANS_EVERY refreshes only: they
  // change with a restart or an operator's act, and counting them costs the
  // store a count of every message.
  const ORPHANS_EVERY = 5;
  function overview() {
    let ticks = 0;
    let orphaned = [];
    return poller(async (live) => {
      const [h, lanes, routes] = await Promise.all([api('GET', '/v1/health'), api('GET', '/v1/lanes?limit=10'),
        ticks++ % ORPHANS_EVERY === 0 ? api('GET', '/v1/routes') : null]);
      if (routes) orphaned = routes.orphaned || [];
      if (!live()) return;
      renderOverview(h, lanes.lanes || []);
      renderHolds(lanes.pauses || [], orphaned);
    }, 2000);
  }

  function renderOverview(h, lanes) {
    $('#health').dataset.state = h.status;
    $('#health-status').textContent = h.status;
    $('#health-message').textContent = h.message;
    const warnings = h.warnings || [];
    fill($('#health-warnings'), JSON.stringify(warnings),
      warnings.length ? warnings.map((w) => el('li', { text: w })) : [el('li', { text: 'No warnings.' })]);

    const stat = (k, v) => { $(`#summary [data-stat="${k}"]`).textContent = v; };
    stat('waiting', fmtNum(h.waiting));
    stat('oldest', h.oldest_queued_seconds > 0 ? fmtDur(h.oldest_queued_seconds * 1000) : 'none');
    stat('dead_letters', fmtNum(h.dead_letters));
    stat('success_rate', `${(h.success_rate * 100).toFixed(1)} %`);
    stat('p50', fmtMS(h.latency_p50_ms));
    stat('p99', fmtMS(h.latency_p99_ms));
    for (const k of ['enqueued', 'succeeded', 'retried', 'dead_lettered']) {
      $(`#counters [data-counter="${k}"]`).textContent = fmtNum(h[k]);
    }

    const byStatus = h.by_status || {};
    fill($('#status-counts tbody'), JSON.stringify(byStatus), STATUSES.map((s) => el('tr', {},
      el('th', { scope: 'row' }, el('a', { href: `#/messages?status=${s}`, text: WORDS[s] }), ' ', el('code', { text: s })),
      el('td', { class: 'num', 'data-count': s, text: fmtNum(byStatus[s]) }))));

    const byRoute = h.by_route || {};
    const routes = Object.keys(byRoute).sort();
    knowRoutes(routes);
    const head = $('#route-counts thead');
    if (!head.firstChild) {
      head.append(el('tr', {}, el('th', { scope: 'col', text: 'Route' }),
        STATUSES.map((s) => el('th', { scope: 'col', class: 'num', title: s, text: WORDS[s] })),
        el('th', { scope: 'col', class: 'num', text: 'Total' })));
    }
    fill($('#route-counts tbody'), JSON.stringify(byRoute), routes.length ? routes.map((r) => {
      const c = byRoute[r];
      const total = STATUSES.reduce((n, s) => n + (c[s] || 0), 0);
      return el('tr', { 'data-route': r }, el('th', { scope: 'row', text: r }),
        STATUSES.map((s) => el('td', { class: 'num', 'data-route': r, 'data-status': s },
          c[s] ? el('a', { href: `#/messages?route=${enc(r)}&status=${s}`, 'aria-label': `${c[s]} ${WORDS[s]} on ${r}`, text: fmtNum(c[s]) }) : '0')),
        el('td', { class: 'num', text: fmtNum(total) }));
    }) : [emptyRow(STATUSES.length + 2, 'No messages yet.')]);

    fill($('#lanes tbody'), JSON.stringify(lanes), lanes.length ? lanes.map((l) => el('tr', { 'data-route': l.route, 'data-lane': l.lane },
      el('td', { text: l.route }), el('td', { class: 'mono', text: l.lane }),
      el('td', { class: 'num', text: fmtNum(l.queued) }), el('td', { class: 'num', text: fmtNum(l.in_flight) }),
      el('td', {}, l.operator_pause ? pausedText(l.operator_pause)
        : l.paused_until ? [timeEl(l.paused_until), ` (${fmtFromNow(l.paused_until)})`, l.pause_reason ? `: ${l.pause_reason}` : ''] : 'not paused'),
      el('td', {}, l.next_at ? [timeEl(l.next_at), ` (${fmtFromNow(l.next_at)})`] : 'now'),
      el('td', { class: 'admin-only' }, l.operator_pause && l.operator_pause.lane === l.lane
        ? pauseButton('Resume', l.route, l.lane, () => resume(l.route, l.lane))
        : l.operator_pause ? '' : pauseButton('Pause', l.route, l.lane, () => pause({ route: l.route, lane: l.lane }))))) : [emptyRow(7, 'No lane holds messages: only routes with admission limits have lanes.')]);

    const now = new Date().toISOString();
    const u = $('#overview-updated');
    u.dateTime = now;
    u.textContent = fmtTime(now);
  }

  // ---- Pauses and orphans ------------------------------------------------

  // pausedText says how long an operator's pause p lasts, and why.
  function pausedText(p) {
    return [p.until ? [timeEl(p.until), ` (${fmtFromNow(p.until)})`] : 'until resumed', ' by an operator', p.reason ? `: ${p.reason}` : ''];
  }
  function pauseButton(verb, route, lane, onclick) {
    const what = lane ? `lane ${lane} of ${route}` : `route ${route}`;
    return el('button', { type: 'button', class: 'small admin-only', 'data-key': `${verb}:${route}|${lane}`, 'aria-label': `${verb} ${what}`, text: verb, onclick });
  }
  async function pause(body) {
    try {
      await api('POST', '/v1/lanes/pause', body);
      flash(`Paused ${body.lane ? `lane ${body.lane} of ${body.route}` : `route ${body.route}`}.`);
    } catch (e) {
      flash(`Could not pause: ${e.message}`, 'error');
    }
    if (current) current.refresh();
  }
  async function resume(route, lane) {
    try {
      await api('POST', '/v1/lanes/resume', lane ? { route, lane } : { route });
      flash(`Resumed ${lane ? `lane ${lane} of ${route}` : `route ${route}`}.`);
    } catch (e) {
      flash(`Could not resume: ${e.message}`, 'error');
    }
    if (current) current.refresh();
  }
  $('#pause-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const body = { route: $('#p-route').value.trim() };
    const lane = $('#p-lane').value.trim();
    const minutes = Number($('#p-minutes').value);
    const reason = $('#p-reason').value.trim();
    if (lane) body.lane = lane;
    if (minutes > 0) body.until = new Date(Date.now() + minutes * 60000).toISOString();
    if (reason) body.reason = reason;
    pause(body);
  });

  function renderHolds(pauses, orphaned) {
    fill($('#pauses tbody'), JSON.stringify(pauses), pauses.length ? pauses.map((p) => el('tr', { 'data-route': p.route, 'data-lane': p.lane },
      el('td', { text: p.route }), el('td', { class: 'mono', text: p.lane || 'the whole route' }),
      el('td', {}, p.until ? [timeEl(p.until), ` (${fmtFromNow(p.until)})`] : 'until resumed'),
      el('td', { text: p.reason || '—' }), el('td', {}, timeEl(p.at)),
      el('td', { class: 'admin-only' }, pauseButton('Resume', p.route, p.lane, () => resume(p.route, p.lane))))) : [emptyRow(6, 'Nothing is paused.')]);
    $('#orphans').hidden = orphaned.length === 0;
    fill($('#orphans-list'), JSON.stringify(orphaned), orphaned.map((o) => el('li', { 'data-route': o.route },
      el('strong', { text: o.route }), `: ${fmtNum(o.messages)} pending ${o.messages === 1 ? 'message' : 'messages'}`)));
  }

  // ---- Messages ----------------------------------------------------------

  // The search's query parameters and their fields.
  const SEARCH = { target: '#f-target', correlation_id: '#f-correlation', route: '#f-route', status: '#f-status' };
  const statusSelect = $('#f-status');
  for (const s of STATUSES) statusSelect.append(el('option', { value: s, text: `${WORDS[s]} (${s})` }));

  // An id may be given whole, or by a unique prefix of 8 characters or
  // more (as the CLI and the demo shorten ids), resolved as the CLI does.
  const ID_LENGTH = 36;
  const MIN_ID_PREFIX = 8;
  async function resolveID(id) {
    if (id.length >= ID_LENGTH) return id;
    if (id.length < MIN_ID_PREFIX) throw new Error(`The id ${id} is too short: give the whole id or its first ${MIN_ID_PREFIX} characters at least.`);
    const res = await api('GET', `/v1/messages?${new URLSearchParams({ id_prefix: id, limit: '4' })}`);
    const ids = res.messages.map((m) => m.id);
    if (ids.length === 1) return ids[0];
    if (ids.length === 0) throw new Error(`No message's id starts with ${id}.`);
    throw new Error(`The id prefix ${id} names several messages (${ids.slice(0, 3).join(', ')}${ids.length > 3 ? ', …' : ''}): give more of its characters.`);
  }

  $('#search').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const id = $('#f-id').value.trim();
    if (id) {
      try {
        location.hash = `#/messages/${enc(await resolveID(id))}`;
      } catch (e) { flash(e.message, 'error'); }
      return;
    }
    const q = new URLSearchParams();
    for (const [k, field] of Object.entries(SEARCH)) {
      const v = $(field).value.trim();
      if (v) q.set(k, v);
    }
    const hash = `#/messages${q.toString() ? `?${q}` : ''}`;
    if (location.hash === hash) route();
    else location.hash = hash;
  });
  $('#search').addEventListener('reset', () => { setTimeout(() => { location.hash = '#/messages'; }, 0); });

  function messages(_, params) {
    $('#f-id').value = '';
    const q = new URLSearchParams();
    for (const [k, field] of Object.entries(SEARCH)) {
      const v = params.get(k) || '';
      $(field).value = v;
      if (v) q.set(k, v);
    }
    q.set('limit', '50');
    let shown = [];
    let cursor = '';
    let paged = false; // more than the first page is shown: keep it as it is
    const more = $('#results-more');
    const render = () => {
      const tbody = $('#results tbody');
      fill(tbody, JSON.stringify(shown), shown.length ? shown.map((m) => el('tr', { 'data-id': m.id },
        el('td', {}, msgLink(m.id)), el('td', {}, badge(m.status)), el('td', { text: m.route }),
        el('td', { class: 'mono', text: m.target }), el('td', { class: 'num', text: `${m.attempt} / ${m.max_attempts}` }),
        el('td', { class: 'mono', text: m.correlation_id }), el('td', {}, timeEl(m.updated_at)),
        el('td', { class: 'err', text: m.last_error }))) : [emptyRow(8, 'No message matches.')]);
      const filtered = [...q.keys()].some((k) => k !== 'limit');
      $('#results-summary').textContent = `${shown.length} message${shown.length === 1 ? '' : 's'}${filtered ? ' matching the search' : ''}, newest first${cursor ? '; more below' : ''}.`;
      more.hidden = !cursor;
    };
    more.onclick = async () => {
      try {
        const res = await api('GET', `/v1/messages?${q}&cursor=${enc(cursor)}`);
        paged = true;
        shown = shown.concat(res.messages);
        cursor = res.next_cursor;
        render();
      } catch (e) { flash(e.message, 'error'); }
    };
    return poller(async (live) => {
      if (paged) return;
      const res = await api('GET', `/v1/messages?${q}`);
      if (!live() || paged) return;
      shown = res.messages;
      cursor = res.next_cursor;
      render();
    }, 2000);
  }

  // ---- One message -------------------------------------------------------

  function message(id) {
    $('#msg-id').textContent = id;
    $('#msg-missing').hidden = true;
    $('#msg-body').hidden = true;
    for (const s of ['#timeline', '#msg-details']) delete $(s).dataset.sig;
    const cancel = $('#msg-cancel');
    const replay = $('#msg-replay');
    const sendNow = $('#msg-send-now');
    const path = `/v1/messages/${enc(id)}`;
    const p = poller(async (live) => {
      let m;
      try {
        m = await api('GET', path);
      } catch (e) {
        if (e.status !== 404) throw e;
        if (live()) {
          $('#msg-missing').hidden = false;
          $('#msg-body').hidden = true;
        }
        return;
      }
      const x = await api('GET', `${path}/explain`).catch(() => null);
      if (live()) renderMessage(m, x);
    }, 2000);
    const act = async (what, done) => {
      try {
        await api('POST', `${path}/${what}`);
        flash(done);
      } catch (e) {
        flash(`Could not ${what}: ${e.message}`, 'error');
      }
      await p.refresh();
      if (document.activeElement === document.body || document.activeElement.hidden) $('#h-message').focus();
    };
    cancel.onclick = async () => {
      const ok = await confirmDialog({
        title: 'Cancel this message?', text: `Message ${id} will not be sent. It can be replayed later.`,
        yes: 'Cancel message', no: 'Keep it',
      });
      if (ok) act('cancel', 'Cancelled: the message will not be sent.');
    };
    replay.onclick = () => act('replay', 'Replayed: the message is queued again, with its attempts reset.');
    sendNow.onclick = () => act('send-now', 'Sent now: the message is due at once.');
    return p;
  }

  function renderMessage(m, x) {
    $('#msg-body').hidden = false;
    $('#msg-missing').hidden = true;
    const st = $('#msg-status');
    st.dataset.status = m.status;
    st.textContent = m.status;
    $('#msg-status-words').textContent = `${WORDS[m.status] || m.status}; attempt ${m.attempt} of ${m.max_attempts}`;
    $('#msg-cancel').hidden = !waiting(m.status);
    $('#msg-replay').hidden = !replayable(m.status);
    $('#msg-send-now').hidden = !sendable(m);

    if (x) {
      $('#msg-explain-headline').textContent = EXPLAIN[x.reason] || x.reason;
      let detail = x.detail ? x.detail.charAt(0).toUpperCase() + x.detail.slice(1) + '.' : '';
      if (x.until) detail += ` Until ${fmtTime(x.until)} (${fmtFromNow(x.until)}).`;
      $('#msg-explain-detail').textContent = detail;
      const blocking = $('#msg-explain-blocking');
      blocking.hidden = !(x.blocking_ids && x.blocking_ids.length);
      // Another tenant's message may block a lane: its id is shown, its page is not ours to open.
      $('span', blocking).replaceChildren(...(x.blocking_ids || []).flatMap((b, i) => [i ? ', ' : '', el('code', { text: b })]));
    }

    const tl = m.timeline || [];
    fill($('#timeline'), JSON.stringify(tl), tl.map((e, i) => {
      const prev = i ? tl[i - 1] : null;
      const step = e.from ? `${WORDS[e.from] || e.from} → ${WORDS[e.to] || e.to}` : `Created: ${WORDS[e.to] || e.to}`;
      return el('li', { 'data-from': e.from, 'data-to': e.to },
        el('span', { class: 'when' }, timeEl(e.at, true)), ' ',
        el('span', { class: 'step', text: step }),
        e.attempt ? el('span', { class: 'attempt', text: ` · attempt ${e.attempt}` }) : null,
        prev ? el('span', { class: 'gap', text: ` · +${fmtDur(new Date(e.at) - new Date(prev.at))} after the step before` }) : null,
        e.reason ? el('span', { class: 'reason', text: e.reason }) : null,
        // What the carrier answered to the attempt this entry ends.
        e.answer || e.duration_ms ? el('span', { class: 'reason answer', text:
          `Carrier answered ${e.answer || '(no code)'}${e.duration_ms ? ` in ${fmtDur(e.duration_ms)}` : ''}` }) : null,
        e.error ? el('span', { class: 'reason error-text', text: `Error: ${e.error}` }) : null,
        // An entry kept before answers were: the last error belongs to the failure it caused.
        !e.error && i === tl.length - 1 && m.last_error && (e.to === 'DELIVERY_FAILED' || e.to === 'TO_RETRY')
          ? el('span', { class: 'reason error-text', text: `Error: ${m.last_error}` }) : null);
    }));
    const end = terminal(m.status) && tl.length ? new Date(tl[tl.length - 1].at) : new Date();
    $('#timeline-total').textContent = terminal(m.status)
      ? `From its creation to its end: ${fmtDur(end - new Date(m.created_at))}.`
      : `Since its creation: ${fmtDur(end - new Date(m.created_at))}.`;

    const dd = (label, value) => [el('dt', { text: label }), el('dd', {}, value == null || value === '' ? '—' : value)];
    const corr = m.correlation_id ? el('a', { href: `#/messages?correlation_id=${enc(m.correlation_id)}`, class: 'mono', text: m.correlation_id }) : '';
    const target = m.target ? el('a', { href: `#/messages?target=${enc(m.target)}`, class: 'mono', text: m.target }) : '';
    const details = [
      dd('Route', m.route), dd('Target', target), dd('Lane', m.lane), dd('Attempts', `${m.attempt} of ${m.max_attempts}`),
      dd('Priority', String(m.priority)), dd('Correlation id', corr), dd('Created', timeEl(m.created_at, true)),
      dd('Updated', timeEl(m.updated_at, true)), dd('Next attempt', m.next_attempt_at ? [timeEl(m.next_attempt_at), ` (${fmtFromNow(m.next_attempt_at)})`] : ''),
      dd('Stage deadline', m.deadline ? [timeEl(m.deadline), ` (${fmtFromNow(m.deadline)})`] : ''),
      dd('Expires', m.expires_at ? timeEl(m.expires_at) : ''), dd('Carrier id', m.external_id),
      dd('Last error', m.last_error),
    ].flat();
    // Relative times change every second: compare without them.
    fill($('#msg-details'), JSON.stringify({ ...m, timeline: null, now: Math.floor(Date.now() / 10000) }), details);
    let content = m.text || '';
    if (!content && m.payload) content = `payload (base64): ${m.payload}`;
    if (m.params && Object.keys(m.params).length) content += `\nparams: ${JSON.stringify(m.params)}`;
    $('#msg-content-text').textContent = content.trim() || '(empty)';
  }

  // ---- Dead letters ------------------------------------------------------

  $('#dl-filter').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams();
    const route = $('#dl-route').value.trim();
    const reason = $('#dl-reason').value.trim();
    if (route) q.set('route', route);
    if (reason) q.set('reason', reason);
    const hash = `#/dead-letters${q.toString() ? `?${q}` : ''}`;
    if (location.hash === hash) route();
    else location.hash = hash;
  });
  $('#dl-filter').addEventListener('reset', () => { setTimeout(() => { location.hash = '#/dead-letters'; }, 0); });

  function rate() {
    const r = Number($('#dl-rate').value);
    return Number.isFinite(r) && r > 0 ? r : 0;
  }
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  function deadLetters(_, params) {
    const route = params.get('route') || '';
    const reason = params.get('reason') || '';
    $('#dl-route').value = route;
    $('#dl-reason').value = reason;
    const q = new URLSearchParams();
    if (route) q.set('route', route);
    if (reason) q.set('reason', reason);
    q.set('limit', '200');
    let list = [];
    let cursor = '';
    let paged = false;
    const selected = new Set();
    const replaySel = $('#dl-replay-selected');
    const all = $('#dl-all');
    const scope = () => `${route ? `of route ${route}` : 'of every route'}${reason ? ` whose last error contains “${reason}”` : ''}`;

    const syncSelection = () => {
      for (const id of [...selected]) if (!list.some((m) => m.id === id)) selected.delete(id);
      replaySel.disabled = selected.size === 0;
      replaySel.textContent = `Replay selected (${selected.size})`;
      all.checked = list.length > 0 && selected.size === list.length;
      all.indeterminate = selected.size > 0 && selected.size < list.length;
      for (const box of $$('#dl-list tbody input[type=checkbox]')) box.checked = selected.has(box.dataset.id);
    };
    const render = () => {
      const groups = new Map();
      for (const m of list) groups.set(m.last_error, (groups.get(m.last_error) || 0) + 1);
      const sorted = [...groups].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
      fill($('#dl-groups tbody'), JSON.stringify(sorted), sorted.length ? sorted.map(([err, n]) => el('tr', {},
        el('td', { class: 'err', text: err || '(no error recorded)' }), el('td', { class: 'num', text: fmtNum(n) }),
        el('td', {}, err ? [
          el('button', { type: 'button', class: 'quiet small', 'data-key': `show:${err}`, text: 'Show only these', onclick: () => {
            const h = new URLSearchParams(); if (route) h.set('route', route); h.set('reason', err);
            location.hash = `#/dead-letters?${h}`;
          } }), ' ',
          el('button', { type: 'button', class: 'small write-only', 'data-key': `replay:${err}`, text: 'Replay these', onclick: () => replayMatching(err) }),
        ] : ''))) : [emptyRow(3, 'No dead letters.')]);
      $('#dl-groups-note').textContent = list.length ? `Of the ${list.length} dead letters shown${cursor ? ' (there are more)' : ''}.` : '';
      fill($('#dl-list tbody'), JSON.stringify(list), list.length ? list.map((m) => el('tr', { 'data-id': m.id },
        el('td', {}, el('input', { type: 'checkbox', class: 'write-only', 'data-id': m.id, 'data-key': `sel:${m.id}`, 'aria-label': `Select ${m.id}`,
          onchange: (ev) => { if (ev.target.checked) selected.add(m.id); else selected.delete(m.id); syncSelection(); } })),
        el('td', {}, msgLink(m.id)), el('td', { text: m.route }), el('td', { class: 'mono', text: m.target }),
        el('td', { class: 'num', text: `${m.attempt} / ${m.max_attempts}` }), el('td', {}, timeEl(m.updated_at)),
        el('td', { class: 'err', text: m.last_error }),
        el('td', {}, el('button', { type: 'button', class: 'small write-only', 'data-key': `replay1:${m.id}`, 'aria-label': `Replay ${m.id}`, text: 'Replay',
          onclick: () => replayIDs([m.id]) })))) : [emptyRow(8, 'No dead letters match.')]);
      $('#dl-summary').textContent = `${list.length} dead letter${list.length === 1 ? '' : 's'} ${scope()}${cursor ? '; more below' : ''}.`;
      $('#dl-more').hidden = !cursor;
      syncSelection();
    };

    const p = poller(async (live) => {
      if (paged) return;
      const res = await api('GET', `/v1/dead-letters?${q}`);
      if (!live() || paged) return;
      list = res.messages;
      cursor = res.next_cursor;
      render();
    }, 5000);
    const reload = () => { paged = false; return p.refresh(); };

    $('#dl-more').onclick = async () => {
      try {
        const res = await api('GET', `/v1/dead-letters?${q}&cursor=${enc(cursor)}`);
        paged = true;
        list = list.concat(res.messages);
        cursor = res.next_cursor;
        render();
      } catch (e) { flash(e.message, 'error'); }
    };
    all.onchange = () => {
      selected.clear();
      if (all.checked) for (const m of list) selected.add(m.id);
      syncSelection();
    };

    // replayIDs replays messages one by one, spaced at the rate.
    async function replayIDs(ids) {
      const r = rate();
      let done = 0;
      const failed = [];
      for (const id of ids) {
        if (ids.length > 1) flash(`Replaying ${done + failed.length + 1} of ${ids.length}…`);
        try {
          await api('POST', `/v1/messages/${enc(id)}/replay`);
          done++;
          selected.delete(id);
        } catch (e) {
          failed.push(`${id}: ${e.message}`);
        }
        if (r > 0 && id !== ids[ids.length - 1]) await sleep(1000 / r);
      }
      flash(`Replayed ${done} dead letter${done === 1 ? '' : 's'}.${failed.length ? ` Not replayed: ${failed.join('; ')}` : ''}`, failed.length ? 'error' : 'info');
      await reload();
    }
    replaySel.onclick = () => replayIDs([...selected]);

    // replayMatching replays every dead letter of the filter (with the
    // error given, when one is) on the server, spaced at the rate.
    async function replayMatching(err) {
      const r = rate();
      const what = err ? `${route ? `of route ${route}` : 'of every route'} whose last error contains “${err}”` : scope();
      const ok = await confirmDialog({
        title: 'Replay these dead letters?',
        text: `Every dead letter ${what} is queued again, with its attempts reset, ${r > 0 ? `at most ${r} per second` : 'all at once'}.`,
        yes: 'Replay them', no: 'Cancel',
      });
      if (!ok) return;
      try {
        const body = { rate_per_s: r };
        if (route) body.route = route;
        if (err || reason) body.reason = err || reason;
        const res = await api('POST', '/v1/dead-letters/replay', body);
        flash(`Replayed ${res.replayed} dead letter${res.replayed === 1 ? '' : 's'}${r > 0 ? `, sent at most ${r} per second` : ''}.`);
      } catch (e) {
        flash(`Could not replay: ${e.message}`, 'error');
      }
      await reload();
    }
    $('#dl-replay-all').onclick = () => replayMatching('');

    $('#dl-purge').onclick = async () => {
      const count = cursor ? `more than ${list.length}` : String(list.length);
      const ok = await confirmDialog({
        title: 'Purge dead letters?',
        text: `Every dead letter ${route ? `of route ${route}` : 'of every route'} (${reason ? 'whatever its error: a purge takes the route only; ' : ''}${count} shown here) is deleted for good.`,
        yes: 'Purge them', no: 'Keep them',
      });
      if (!ok) return;
      try {
        const res = await api('DELETE', `/v1/dead-letters${route ? `?route=${enc(route)}` : ''}`);
        flash(`Purged ${res.purged} dead letter${res.purged === 1 ? '' : 's'}.`);
      } catch (e) {
        flash(`Could not purge: ${e.message}`, 'error');
      }
      await reload();
    };
    return p;
  }

  // ---- Dead outcome events -----------------------------------------------

  function outcomeEvents() {
    let list = [];
    let cursor = '';
    let paged = false;
    const render = () => {
      fill($('#ev-list tbody'), JSON.stringify(list), list.length ? list.map((e) => el('tr', { 'data-id': e.id },
        el('td', { class: 'mono', text: e.id }), el('td', { text: e.subscriber }), el('td', {}, badge(e.type)),
        el('td', {}, e.message_id ? msgLink(e.message_id) : ''), el('td', {}, timeEl(e.at)),
        el('td', { class: 'num', text: fmtNum(e.attempts) }), el('td', { class: 'err', text: e.last_error }),
        el('td', {}, el('button', { type: 'button', class: 'small', 'data-key': `replay:${e.id}`, 'aria-label': `Replay ${e.id}`, text: 'Replay',
          onclick: () => replay({ ids: [e.id] }, 'the event') })))) : [emptyRow(8, 'No dead outcome events.')]);
      $('#ev-summary').textContent = `${list.length} dead outcome event${list.length === 1 ? '' : 's'}${cursor ? '; more below' : ''}.`;
      $('#ev-more').hidden = !cursor;
    };
    const p = poller(async (live) => {
      if (paged) return;
      const res = await api('GET', '/v1/outcome-events?status=dead&limit=200');
      if (!live() || paged) return;
      list = res.events;
      cursor = res.next_cursor;
      render();
    }, 5000);
    const reload = () => { paged = false; return p.refresh(); };
    $('#ev-more').onclick = async () => {
      try {
        const res = await api('GET', `/v1/outcome-events?status=dead&limit=200&cursor=${enc(cursor)}`);
        paged = true;
        list = list.concat(res.events);
        cursor = res.next_cursor;
        render();
      } catch (e) { flash(e.message, 'error'); }
    };
    async function replay(body, what) {
      try {
        const res = await api('POST', '/v1/outcome-events/replay', body);
        flash(`Sent ${what} again: ${res.replayed} event${res.replayed === 1 ? '' : 's'}.`);
      } catch (e) {
        flash(`Could not replay: ${e.message}`, 'error');
      }
      await reload();
    }
    $('#ev-replay-all').onclick = async () => {
      const ok = await confirmDialog({
        title: 'Replay every dead outcome event?',
        text: 'Every dead outcome event about your messages is sent again at once, each with its subscriber\'s attempts afresh.',
        yes: 'Replay them', no: 'Cancel',
      });
      if (ok) await replay({}, 'every dead outcome event');
    };
    return p;
  }

  // ---- Charts ------------------------------------------------------------

  function charts() {
    return poller(async (live) => {
      const a = await api('GET', '/v1/activity');
      if (!live()) return;
      renderCharts(a.minutes || []);
      const now = new Date().toISOString();
      const u = $('#charts-updated');
      u.dateTime = now;
      u.textContent = fmtTime(now);
    }, 5000);
  }

  const hhmm = (iso) => { const d = new Date(iso); return `${pad(d.getHours())}:${pad(d.getMinutes())}`; };

  // niceScale returns a round top for values up to v, and how many equal
  // steps divide it into round numbers.
  function niceScale(v) {
    if (v <= 0) return { max: 1, steps: 4 };
    const p = 10 ** Math.floor(Math.log10(v));
    for (const [m, steps] of [[1, 4], [2, 4], [2.5, 5], [5, 5], [10, 5]]) if (v <= m * p) return { max: m * p, steps };
    return { max: 10 * p, steps: 5 };
  }

  // lineChart draws series over minutes into box: each series is
  // {key, label, get}; a value of null leaves a gap. With dots, each value
  // is marked too, so that a lone minute shows.
  function lineChart(box, minutes, series, fmt, labelledBy, dots = false) {
    const W = 760, H = 250, L = 64, R = 12, T = 12, B = 30;
    const n = minutes.length;
    const x = (i) => L + (n > 1 ? (i * (W - L - R)) / (n - 1) : 0);
    let max = 0;
    for (const s of series) for (const m of minutes) { const v = s.get(m); if (v != null) max = Math.max(max, v); }
    const scale = niceScale(max);
    max = scale.max;
    const y = (v) => T + (H - T - B) * (1 - v / max);
    const grid = [];
    for (let k = 0; k <= scale.steps; k++) {
      const v = (max * k) / scale.steps;
      grid.push(svg('line', { x1: L, x2: W - R, y1: y(v), y2: y(v) }),
        svg('text', { x: L - 6, y: y(v) + 4, 'text-anchor': 'end', text: fmt(v) }));
    }
    const ticks = [];
    minutes.forEach((m, i) => {
      if ((n - 1 - i) % 10 === 0) ticks.push(svg('text', { x: x(i), y: H - 8, 'text-anchor': i === n - 1 ? 'end' : 'middle', text: hhmm(m.start) }));
    });
    const lines = series.map((s) => {
      let d = '';
      let pen = false;
      minutes.forEach((m, i) => {
        const v = s.get(m);
        if (v == null) { pen = false; return; }
        d += `${pen ? 'L' : 'M'}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
        pen = true;
      });
      return svg('path', { class: 'line', 'data-series': s.key, d: d || 'M0,0' });
    });
    const marks = dots ? series.flatMap((s) => minutes.flatMap((m, i) => {
      const v = s.get(m);
      return v == null ? [] : [svg('circle', { class: 'dot', 'data-series': s.key, cx: x(i), cy: y(v), r: 3.5 })];
    })) : [];
    // One hover strip per minute, titled with its numbers.
    const step = n > 1 ? (W - L - R) / (n - 1) : W;
    const strips = minutes.map((m, i) => svg('rect', { x: x(i) - step / 2, y: T, width: step, height: H - T - B, fill: 'transparent' },
      svg('title', { text: `${hhmm(m.start)}: ${series.map((s) => `${s.label} ${s.get(m) == null ? '—' : fmt(s.get(m))}`).join(', ')}` })));
    const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': labelledBy },
      svg('g', { class: 'grid axis' }, grid), svg('g', { class: 'axis' }, ticks), svg('g', {}, lines), svg('g', {}, marks), svg('g', {}, strips));
    const legend = el('ul', { class: 'legend' }, series.map((s) => el('li', { 'data-series': s.key, text: s.label })));
    box.replaceChildren(chart, legend);
  }

  function renderCharts(minutes) {
    const sum = (k) => minutes.reduce((n, m) => n + (m[k] || 0), 0);
    const flow = [
      { key: 'sent', label: 'Sent', get: (m) => m.sent },
      { key: 'succeeded', label: 'Succeeded', get: (m) => m.succeeded },
      { key: 'failed', label: 'Failed', get: (m) => m.failed },
      { key: 'retried', label: 'Retried', get: (m) => m.retried },
    ];
    const lat = [
      { key: 'p50', label: 'p50', get: (m) => (m.succeeded ? m.latency_p50_ms : null) },
      { key: 'p90', label: 'p90', get: (m) => (m.succeeded ? m.latency_p90_ms : null) },
      { key: 'p99', label: 'p99', get: (m) => (m.succeeded ? m.latency_p99_ms : null) },
    ];
    const sig = JSON.stringify(minutes);
    const box = $('#chart-flow');
    if (box.dataset.sig === sig) return;
    box.dataset.sig = sig;
    lineChart(box, minutes, flow, (v) => (v % 1 ? v.toFixed(1) : fmtNum(v)), 'cap-flow');
    const total = el('p', { class: 'note', id: 'flow-total', 'data-sent': sum('sent'), 'data-succeeded': sum('succeeded'),
      'data-failed': sum('failed'), 'data-retried': sum('retried'),
      text: `In the hour: ${fmtNum(sum('sent'))} sent, ${fmtNum(sum('succeeded'))} succeeded, ${fmtNum(sum('failed'))} failed, ${fmtNum(sum('retried'))} retried.` });
    box.append(total);
    lineChart($('#chart-latency'), minutes, lat, (v) => fmtDur(v), 'cap-latency', true);
    fill($('#chart-table tbody'), sig, minutes.slice().reverse().map((m) => el('tr', {},
      el('th', { scope: 'row' }, el('time', { datetime: m.start, text: hhmm(m.start) })),
      el('td', { class: 'num', text: fmtNum(m.sent) }), el('td', { class: 'num', text: fmtNum(m.succeeded) }),
      el('td', { class: 'num', text: fmtNum(m.failed) }), el('td', { class: 'num', text: fmtNum(m.retried) }),
      el('td', { class: 'num', text: m.succeeded ? fmtDur(m.latency_p50_ms) : '—' }),
      el('td', { class: 'num', text: m.succeeded ? fmtDur(m.latency_p90_ms) : '—' }),
      el('td', { class: 'num', text: m.succeeded ? fmtDur(m.latency_p99_ms) : '—' }))));
  }

  // ---- Rooms -------------------------------------------------------------

  // hostOf is a push URL as the page shows it: its host, never its path,
  // query or user, which may hold a secret.
  function hostOf(u) {
    try { return new URL(u).host || '—'; } catch (e) { return '—'; }
  }
  const never = (d) => (!d || d === '0s' ? 'never' : d);
  // fmtPolicy says a room's delivery policy, or the fields a subscription
  // overrides (none: "the room's").
  function fmtPolicy(d, partial = false) {
    const parts = [];
    if (d && d.delay != null) parts.push(`delay ${d.delay}`);
    if (d && d.multiplier != null) parts.push(`multiplier ${d.multiplier}`);
    if (d && d.attempts != null) parts.push(`${d.attempts} redeliver${d.attempts === 1 ? 'y' : 'ies'}`);
    return parts.length ? parts.join(', ') : (partial ? 'the room\'s' : '—');
  }
  const fmtTypes = (types) => (types && types.length
    ? types.map((t) => (t.version ? `${t.type} v${t.version}` : t.type)).join(', ') : 'every event');
  const roomLink = (name) => el('a', { href: `#/rooms/${enc(name)}`, text: name });
  const subLink = (id) => el('a', { href: `#/subscriptions/${enc(id)}`, class: 'mono', text: id });
  function updated(sel) {
    const now = new Date().toISOString();
    const u = $(sel);
    u.dateTime = now;
    u.textContent = fmtTime(now);
  }

  function rooms() {
    return poller(async (live) => {
      const res = await api('GET', '/v1/rooms');
      if (!live()) return;
      const list = res.rooms || [];
      fill($('#rooms-list tbody'), JSON.stringify(list), list.length ? list.map((r) => el('tr', { 'data-room': r.name },
        el('th', { scope: 'row' }, roomLink(r.name)), el('td', { text: never(r.expiration) }),
        el('td', { text: fmtPolicy(r.delivery) }), el('td', { class: 'num', 'data-subscriptions': r.subscriptions, text: fmtNum(r.subscriptions) }),
        el('td', {}, timeEl(r.created_at)))) : [emptyRow(5, 'No rooms: make one with POST /v1/rooms or herald rooms create.')]);
      $('#rooms-summary').textContent = `${list.length} room${list.length === 1 ? '' : 's'}.`;
      updated('#rooms-updated');
    }, 5000);
  }

  function room(name) {
    $('#room-name').textContent = name;
    $('#room-missing').hidden = true;
    $('#room-body').hidden = true;
    for (const sel of ['#room-details', '#room-subs tbody']) delete $(sel).dataset.sig;
    return poller(async (live) => {
      let r;
      let subs;
      try {
        [r, subs] = await Promise.all([api('GET', `/v1/rooms/${enc(name)}`), api('GET', `/v1/rooms/${enc(name)}/subscriptions`)]);
      } catch (e) {
        if (e.status !== 404) throw e;
        if (live()) { $('#room-missing').hidden = false; $('#room-body').hidden = true; }
        return;
      }
      if (!live()) return;
      $('#room-body').hidden = false;
      const dd = (label, value) => [el('dt', { text: label }), el('dd', {}, value)];
      fill($('#room-details'), JSON.stringify(r), [
        dd('Expiration', never(r.expiration)), dd('Delivery policy', fmtPolicy(r.delivery)),
        dd('Route of its deliveries', el('code', { text: `room:${r.name}` })), dd('Created', timeEl(r.created_at)),
      ].flat());
      const list = subs.subscriptions || [];
      // Only what the table shows goes into its signature: a URL's path stays out of the page.
      const shown = list.map((s) => ({ id: s.id, type: s.type, host: s.type === 'push' ? hostOf(s.url) : '', types: fmtTypes(s.event_types),
        delivery: fmtPolicy(s.delivery, true), created: s.created_at }));
      fill($('#room-subs tbody'), JSON.stringify(shown), shown.length ? shown.map((s) => el('tr', { 'data-id': s.id },
        el('td', {}, subLink(s.id)), el('td', {}, el('span', { class: 'badge', 'data-type': s.type, text: s.type })),
        el('td', { class: 'mono', text: s.type === 'push' ? s.host : 'pulled by the subscriber' }),
        el('td', { text: s.types }), el('td', { text: s.delivery }), el('td', {}, timeEl(s.created)))) : [emptyRow(6, 'No subscriptions.')]);
      $('#room-subs-summary').textContent = `${list.length} subscription${list.length === 1 ? '' : 's'}.`;
    }, 5000);
  }

  const subStatus = $('#sub-status');
  for (const st of STATUSES) subStatus.append(el('option', { value: st, text: `${WORDS[st]} (${st})` }));

  function subscription(id, params) {
    $('#sub-id').textContent = id;
    $('#sub-missing').hidden = true;
    $('#sub-body').hidden = true;
    $('#sub-route').textContent = '';
    for (const sel of ['#sub-details', '#sub-deliveries tbody']) delete $(sel).dataset.sig;
    const status = params.get('status') || '';
    subStatus.value = status;
    subStatus.onchange = () => { location.hash = `#/subscriptions/${enc(id)}${subStatus.value ? `?status=${enc(subStatus.value)}` : ''}`; };
    const replay = $('#sub-replay-dead');
    replay.disabled = true;
    let sub = null;
    let list = [];
    let cursor = '';
    let paged = false;
    const query = () => {
      const q = new URLSearchParams({ route: `room:${sub.room}`, target: id, limit: '50' });
      if (status) q.set('status', status);
      return q;
    };
    const render = () => {
      fill($('#sub-deliveries tbody'), JSON.stringify(list), list.length ? list.map((m) => {
        const p = m.params || {};
        return el('tr', { 'data-id': m.id },
          el('td', {}, msgLink(m.id)), el('td', {}, badge(m.status)), el('td', { class: 'num', text: `${m.attempt} / ${m.max_attempts}` }),
          el('td', { class: 'mono', text: p.event_id || '—' }), el('td', { text: p.type ? `${p.type}${p.version ? ` v${p.version}` : ''}` : '—' }),
          el('td', {}, timeEl(m.created_at)), el('td', {}, timeEl(m.updated_at)), el('td', { class: 'err', text: m.last_error }));
      }) : [emptyRow(8, status ? 'No delivery of this status.' : 'No deliveries yet.')]);
      $('#sub-summary').textContent = `${list.length} deliver${list.length === 1 ? 'y' : 'ies'}${status ? ` ${WORDS[status] || status}` : ''}, newest first${cursor ? '; more below' : ''}.`;
      $('#sub-more').hidden = !cursor;
    };
    const p = poller(async (live) => {
      let s;
      try {
        s = await api('GET', `/v1/subscriptions/${enc(id)}`);
      } catch (e) {
        if (e.status !== 404) throw e;
        if (live()) { $('#sub-missing').hidden = false; $('#sub-body').hidden = true; }
        return;
      }
      sub = s;
      const route = `room:${s.room}`;
      const dead = new URLSearchParams({ route, target: id, status: 'DELIVERY_FAILED', limit: '1' });
      const [page, anyDead] = await Promise.all([paged ? null : api('GET', `/v1/messages?${query()}`), api('GET', `/v1/messages?${dead}`)]);
      if (!live()) return;
      $('#sub-body').hidden = false;
      $('#sub-route').textContent = route;
      const back = $('#sub-back');
      back.href = `#/rooms/${enc(s.room)}`;
      back.textContent = `← Room ${s.room}`;
      const dd = (label, value) => [el('dt', { text: label }), el('dd', {}, value)];
      const facts = [dd('Room', roomLink(s.room)), dd('Type', s.type)];
      if (s.type === 'push') facts.push(dd('Endpoint', el('span', { class: 'mono', text: hostOf(s.url) })));
      else facts.push(dd('Waiting to be pulled', el('span', { id: 'sub-queued', 'data-queued': s.queued, text: `${fmtNum(s.queued)} deliver${s.queued === 1 ? 'y' : 'ies'}` })));
      facts.push(dd('Event types', fmtTypes(s.event_types)), dd('Delivery overrides', fmtPolicy(s.delivery, true)), dd('Created', timeEl(s.created_at)));
      fill($('#sub-details'), JSON.stringify({ ...s, url: s.type === 'push' ? hostOf(s.url) : '' }), facts.flat());
      replay.disabled = anyDead.messages.length === 0;
      replay.title = replay.disabled ? 'It has no dead deliveries.' : '';
      if (page && !paged) {
        list = page.messages;
        cursor = page.next_cursor;
        render();
      }
    }, 3000);
    $('#sub-more').onclick = async () => {
      try {
        const res = await api('GET', `/v1/messages?${query()}&cursor=${enc(cursor)}`);
        paged = true;
        list = list.concat(res.messages);
        cursor = res.next_cursor;
        render();
      } catch (e) { flash(e.message, 'error'); }
    };
    replay.onclick = async () => {
      if (!sub) return;
      const ok = await confirmDialog({
        title: 'Replay its dead deliveries?',
        text: `Every failed delivery to subscription ${id} is queued again, with its attempts reset.`,
        yes: 'Replay them', no: 'Cancel',
      });
      if (!ok) return;
      try {
        const res = await api('POST', '/v1/dead-letters/replay', { route: `room:${sub.room}`, target: id });
        flash(`Replayed ${res.replayed} dead deliver${res.replayed === 1 ? 'y' : 'ies'}.`);
      } catch (e) {
        flash(`Could not replay: ${e.message}`, 'error');
      }
      paged = false;
      await p.refresh();
    };
    return p;
  }

  // ---- routing -----------------------------------------------------------

  const PAGES = {
    overview: { view: overview, title: 'Overview', nav: 'overview' },
    messages: { view: messages, title: 'Messages', nav: 'messages' },
    message: { view: message, title: 'Message', nav: 'messages' },
    'dead-letters': { view: deadLetters, title: 'Dead letters', nav: 'dead-letters' },
    'outcome-events': { view: outcomeEvents, title: 'Outcome events', nav: 'outcome-events' },
    charts: { view: charts, title: 'Charts', nav: 'charts' },
    rooms: { view: rooms, title: 'Rooms', nav: 'rooms' },
    room: { view: room, title: 'Room', nav: 'rooms' },
    subscription: { view: subscription, title: 'Subscription', nav: 'rooms' },
  };
  let current = null;
  let first = true;

  // decode is decodeURIComponent, but keeps a malformed part (a lone %) as
  // it is rather than throw: any address leads somewhere.
  const decode = (s) => { try { return decodeURIComponent(s); } catch (e) { return s; } };

  function route() {
    const raw = location.hash.replace(/^#\/?/, '');
    const [path, query] = raw.split('?');
    const parts = path.split('/').filter(Boolean).map(decode);
    let name = parts[0] || 'overview';
    let arg;
    if (name === 'messages' && parts[1]) { name = 'message'; arg = parts.slice(1).join('/'); }
    if ((name === 'rooms' || name === 'subscriptions') && parts[1]) { name = name === 'rooms' ? 'room' : 'subscription'; arg = parts.slice(1).join('/'); }
    if (!Object.hasOwn(PAGES, name)) name = 'overview';
    const page = PAGES[name];
    if (current) current.stop();
    if (!first) flash('');
    for (const s of $$('[data-page]')) s.hidden = s.id !== `page-${name}`;
    for (const a of $$('[data-nav]')) {
      if (a.dataset.nav === page.nav) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
    document.title = `${page.title}${arg ? ` ${arg}` : ''} · herald`;
    current = page.view(arg, new URLSearchParams(query || ''));
    // Tell a screen reader the page changed; not on the first load.
    if (!first) $(`#page-${name} h1`).focus();
    first = false;
  }
  window.addEventListener('hashchange', route);
  api('GET', '/v1/stats').then((s) => knowRoutes(Object.keys(s.by_route || {}).sort())).catch(() => {});
  document.addEventListener('visibilitychange', () => { if (!document.hidden && current) current.refresh(); });
  route();
})();

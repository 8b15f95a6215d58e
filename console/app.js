/**
 * The tenant console: endpoints with their health and 24-hour chart, an endpoint's deliveries
 * and attempts, test / pause / reactivate / resend / recover, and the live stream. State is
 * the API's: every action calls it and shows its answer, errors included, then reloads.
 */
import { api, session } from './api.js';
import { outcomeChart } from './chart.js';
import { $, badge, h, isoOfLocal, localOf, relative, when } from './views.js';

const CURSOR_ITEM = 'webhookConsole.streamCursor';
const STREAM_KEEP = 100;
const state = { endpoints: [], endpointsAfter: undefined, selected: undefined, page: {}, open: undefined, streaming: false };

function showError(e) {
  const box = $('error');
  box.textContent = e && e.code ? `${e.code}: ${e.message}${e.status ? ` (HTTP ${e.status})` : ''}` : `error: ${e}`;
  box.hidden = false;
  if (e && e.status === 401) signOut(false);
}

function notice(text) {
  $('notice').textContent = text;
  $('notice').hidden = false;
}

function clearMessages() {
  for (const id of ['error', 'notice']) {
    $(id).hidden = true;
    $(id).textContent = '';
  }
}

/** A user action: clears the last message, shows the API's error if any, keeps the button busy meanwhile. */
async function act(button, fn) {
  clearMessages();
  if (button) button.disabled = true;
  try {
    await fn();
  } catch (e) {
    showError(e);
  } finally {
    if (button) button.disabled = false;
  }
}

// ---- sign in / out

function showSignedIn(yes) {
  $('signin').hidden = yes;
  $('app').hidden = !yes;
  $('sign-out').hidden = !yes;
  $('who').textContent = yes ? 'signed in (key kept in this tab only)' : '';
}

function signOut(clearError = true) {
  stopStream();
  session.signOut();
  state.selected = undefined;
  $('endpoints').replaceChildren();
  $('deliveries-panel').hidden = true;
  $('stream').replaceChildren();
  if (clearError) clearMessages();
  showSignedIn(false);
}

$('signin-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const input = $('api-key');
  const key = input.value.trim();
  input.value = '';
  if (!key) return;
  session.signIn(key);
  showSignedIn(true);
  void act(null, loadEndpoints);
});
$('sign-out').addEventListener('click', () => signOut());

// ---- endpoints

async function loadEndpoints() {
  const page = await api.listWebhooks({ limit: 20 });
  state.endpoints = page.data;
  state.endpointsAfter = page.paging.next;
  await renderEndpoints();
}

async function renderEndpoints() {
  const stats = await Promise.all(
    state.endpoints.map((e) =>
      api.getWebhookStats(e.id).then(
        (r) => r.data,
        (err) => err,
      ),
    ),
  );
  const list = $('endpoints');
  list.replaceChildren(...state.endpoints.map((e, i) => endpointCard(e, stats[i])));
  if (state.endpoints.length === 0) list.append(h('p', { class: 'muted' }, 'No endpoint yet: create one.'));
  $('endpoints-more').hidden = !state.endpointsAfter;
  const failed = stats.find((s) => s instanceof Error);
  if (failed) showError(failed);
}

function endpointCard(e, stats) {
  const facts = [
    `streak ${e.failure_streak}`,
    `next POST ${e.next_attempt_at ? `${relative(e.next_attempt_at)} (${when(e.next_attempt_at)})` : '—'}`,
    `last code ${e.last_response_code ?? '—'}`,
    `last success ${relative(e.last_success_at)}`,
    `last failure ${relative(e.last_failure_at)}`,
    `categories ${e.events.join(', ')}`,
  ];
  const test = h('button', { type: 'button', class: 'test' }, 'Send test');
  test.addEventListener('click', () => act(test, () => sendTest(e)));
  const toggle = e.active
    ? h('button', { type: 'button', class: 'pause' }, 'Pause')
    : h('button', { type: 'button', class: 'reactivate', title: 'Sends a test; a 2xx reactivates' }, 'Reactivate (test)');
  toggle.addEventListener('click', () => act(toggle, () => (e.active ? pause(e) : sendTest(e))));
  const open = h('button', { type: 'button', class: 'open' }, 'Deliveries');
  open.addEventListener('click', () => act(open, () => selectEndpoint(e)));
  return h(
    'div',
    {
      class: `endpoint${state.selected?.id === e.id ? ' selected' : ''}`,
      dataset: { endpointId: e.id, health: e.health_status, active: e.active },
    },
    h('div', {}, h('span', { class: 'url' }, e.url), badge(e.health_status), e.active ? null : badge('paused')),
    h(
      'div',
      { class: 'chart-cell' },
      stats && !(stats instanceof Error) ? outcomeChart(stats.hours) : h('span', { class: 'muted' }, 'no chart'),
    ),
    h('div', { class: 'facts' }, facts.join(' · ')),
    h('div', { class: 'actions' }, open, test, toggle),
  );
}

async function sendTest(e) {
  const r = (await api.testWebhook(e.id)).data;
  notice(`Test delivered to ${e.url}: HTTP ${r.response_code}, now ${r.health_status}${r.active ? ', active' : ''}.`);
  await refreshAll();
}

async function pause(e) {
  await api.updateWebhook(e.id, { active: false });
  notice(`Paused ${e.url}: deliveries are held until a test succeeds.`);
  await refreshAll();
}

$('refresh').addEventListener('click', (ev) => act(ev.currentTarget, refreshAll));
$('endpoints-more').addEventListener('click', (ev) =>
  act(ev.currentTarget, async () => {
    const page = await api.listWebhooks({ limit: 20, after: state.endpointsAfter });
    state.endpoints = state.endpoints.concat(page.data);
    state.endpointsAfter = page.paging.next;
    await renderEndpoints();
  }),
);

$('create-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const button = ev.submitter;
  void act(button, async () => {
    const events = [...$('create-events').querySelectorAll('input:checked')].map((i) => i.value);
    const created = (await api.createWebhook({ url: $('create-url').value.trim(), events })).data;
    const box = $('secret');
    const dismiss = h('button', { type: 'button' }, 'I saved it');
    dismiss.addEventListener('click', () => {
      box.replaceChildren();
      box.hidden = true;
    });
    box.replaceChildren(
      h('div', {}, `Signing secret of ${created.url}, shown this once: copy it now.`),
      h('code', { id: 'secret-value' }, created.secret),
      h('div', {}, dismiss),
    );
    box.hidden = false;
    $('create-url').value = '';
    await loadEndpoints();
  });
});

// ---- deliveries

async function selectEndpoint(e) {
  state.selected = e;
  state.page = {};
  state.open = undefined;
  $('deliveries-title').textContent = `Deliveries of ${e.url}`;
  $('deliveries-panel').hidden = false;
  $('recover-since').value ||= localOf(new Date(Date.now() - 24 * 3600_000));
  $('delivery-detail').replaceChildren();
  await Promise.all([loadDeliveries(), renderEndpoints()]);
}

async function loadDeliveries() {
  if (!state.selected) return;
  const page = await api.listDeliveries({
    endpoint_id: state.selected.id,
    status: $('filter-status').value,
    event_type: $('filter-type').value.trim(),
    limit: 20,
    ...state.page,
  });
  $('deliveries').replaceChildren(deliveryTable(page.data));
  $('deliveries-older').hidden = !page.paging.next;
  $('deliveries-newer').hidden = !page.paging.previous;
  state.older = page.paging.next;
  state.newer = page.paging.previous;
  if (state.open) await showDelivery(state.open);
}

function deliveryTable(rows) {
  if (rows.length === 0) return h('p', { class: 'muted' }, 'No delivery matches.');
  const head = h('tr', {}, ...['created', 'event type', 'status', 'attempts', 'code', 'next attempt', ''].map((t) => h('th', {}, t)));
  return h('table', {}, h('thead', {}, head), h('tbody', {}, ...rows.map(deliveryRow)));
}

function deliveryRow(d) {
  const resendable = d.event_id && ['failed', 'exhausted', 'limited'].includes(d.status);
  const resend = resendable ? h('button', { type: 'button', class: 'resend' }, 'Resend') : null;
  resend?.addEventListener('click', (ev) => {
    ev.stopPropagation();
    void act(resend, async () => {
      const r = (await api.resendDelivery(d.id)).data;
      notice(`Delivery ${d.id} is ${r.status} again.`);
      await loadDeliveries();
    });
  });
  const row = h(
    'tr',
    { class: `delivery${state.open === d.id ? ' open' : ''}`, dataset: { deliveryId: d.id, status: d.status, eventType: d.event_type } },
    h('td', {}, when(d.created_at)),
    h('td', {}, d.event_type),
    h('td', {}, badge(d.status), d.terminal_reason ? h('span', { class: 'muted' }, ` ${d.terminal_reason}`) : null),
    h('td', {}, String(d.attempts)),
    h('td', {}, d.response_code ?? '—'),
    h('td', {}, d.next_attempt_at ? relative(d.next_attempt_at) : '—'),
    h('td', {}, resend),
  );
  row.addEventListener('click', () => act(null, () => showDelivery(d.id)));
  return row;
}

async function showDelivery(id) {
  state.open = id;
  const d = (await api.getDelivery(id)).data;
  const attempts = d.attempts_log.map((a) =>
    h(
      'tr',
      { class: 'attempt', dataset: { number: a.number, code: a.response_code ?? '', error: a.error ?? '' } },
      h('td', {}, String(a.number)),
      h('td', {}, when(a.started_at)),
      h('td', {}, `${a.duration_ms} ms`),
      h('td', { class: a.error ? 'failed' : 'success' }, a.response_code ?? '—'),
      h('td', {}, a.error ?? '—'),
      h('td', {}, a.response_excerpt ? h('pre', {}, a.response_excerpt) : '—'),
    ),
  );
  const head = h('tr', {}, ...['#', 'started', 'duration', 'code', 'error', 'response excerpt'].map((t) => h('th', {}, t)));
  $('delivery-detail').replaceChildren(
    h('h2', {}, `Delivery ${d.id}`),
    h('p', { class: 'muted' }, `${d.event_type} · ${d.idempotency_key} · event ${d.event_id ?? '— (test send)'} · status ${d.status}`),
    attempts.length
      ? h('table', { id: 'attempts' }, h('thead', {}, head), h('tbody', {}, ...attempts))
      : h('p', { class: 'muted' }, 'No attempt yet.'),
  );
  for (const tr of $('deliveries').querySelectorAll('tr.delivery')) tr.classList.toggle('open', tr.dataset.deliveryId === id);
}

$('filter-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  state.page = {};
  void act(ev.submitter, loadDeliveries);
});
$('deliveries-older').addEventListener('click', (ev) => {
  state.page = { after: state.older };
  void act(ev.currentTarget, loadDeliveries);
});
$('deliveries-newer').addEventListener('click', (ev) => {
  state.page = { before: state.newer };
  void act(ev.currentTarget, loadDeliveries);
});
$('deliveries-close').addEventListener('click', () => {
  state.selected = undefined;
  state.open = undefined;
  $('deliveries-panel').hidden = true;
  void act(null, renderEndpoints);
});

$('recover-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const e = state.selected;
  void act(ev.submitter, async () => {
    const statuses = [...$('recover-form').querySelectorAll('input[type=checkbox]:checked')].map((i) => i.value);
    const body = { since: isoOfLocal($('recover-since').value), until: isoOfLocal($('recover-until').value), statuses };
    const r = (await api.recoverWebhook(e.id, body)).data;
    notice(`Recovered ${r.recovered} ${r.recovered === 1 ? 'delivery' : 'deliveries'} of ${e.url}.`);
    await refreshAll();
  });
});

// ---- live stream: polls GET /events after the cursor saved in this tab

let streamTimer;

async function pollStream() {
  let cursor = sessionStorage.getItem(CURSOR_ITEM) ?? '0';
  // Catch up a bounded number of pages per tick, so a long backlog cannot monopolise the rate limit.
  for (let pages = 0; pages < 10 && state.streaming; pages++) {
    const page = await api.listEvents({ after: cursor, limit: 100 });
    const list = $('stream');
    for (const item of page.data) {
      list.prepend(
        h(
          'li',
          { value: item.cursor, dataset: { cursor: item.cursor, type: item.type } },
          `#${item.cursor} ${item.type} · ${item.environment} · ${when(item.created_at)} · ${item.id}`,
        ),
      );
    }
    while (list.children.length > STREAM_KEEP) list.lastElementChild.remove();
    cursor = page.paging.cursor;
    sessionStorage.setItem(CURSOR_ITEM, cursor);
    $('stream-cursor').textContent = `cursor ${cursor}`;
    if (!page.paging.has_more) break;
  }
}

async function streamTick() {
  try {
    await pollStream();
  } catch (e) {
    showError(e);
    stopStream();
    return;
  }
  if (state.streaming) streamTimer = setTimeout(streamTick, 2000);
}

function stopStream() {
  state.streaming = false;
  clearTimeout(streamTimer);
  $('stream-toggle').textContent = 'Start';
}

$('stream-toggle').addEventListener('click', () => {
  if (state.streaming) return stopStream();
  clearMessages();
  state.streaming = true;
  $('stream-toggle').textContent = 'Stop';
  void streamTick();
});

// ---- refresh: the API is the state; a quiet reload every few seconds shows deliveries arriving

async function refreshAll() {
  await loadEndpoints();
  if (state.selected) {
    state.selected = state.endpoints.find((e) => e.id === state.selected.id) ?? state.selected;
    await loadDeliveries();
  }
}

setInterval(() => {
  if (!session.key() || document.hidden) return;
  // Only the first page refreshes on its own: a reader paging back keeps the rows in view.
  if (state.selected && !state.page.after && !state.page.before) loadDeliveries().catch(showError);
}, 3000);
setInterval(() => {
  if (session.key() && !document.hidden) loadEndpoints().catch(showError);
}, 10000);

if (session.key()) {
  showSignedIn(true);
  void act(null, loadEndpoints);
} else showSignedIn(false);

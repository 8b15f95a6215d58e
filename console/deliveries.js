/** An endpoint's deliveries: filters, pages, each attempt's code, duration, error and excerpt; resend and recover. */
import { api } from './api.js';
import { CHART_MAX_AGE_MS } from './endpoints.js';
import { act, notice } from './messages.js';
import { state } from './state.js';
import { $, badge, h, isoOfLocal, localOf, relative, when } from './views.js';

/** Set by the app: redrawing the endpoint list (the open one is marked), and reloading everything. */
const hooks = { renderEndpoints: async () => {}, refresh: async () => {} };

export async function selectEndpoint(e) {
  state.selected = e;
  state.page = {};
  state.open = undefined;
  $('deliveries-title').textContent = `Deliveries of ${e.url}`;
  $('deliveries-panel').hidden = false;
  $('recover-since').value ||= localOf(new Date(Date.now() - 24 * 3600_000));
  $('delivery-detail').replaceChildren();
  $('test-now').hidden = true;
  await Promise.all([loadDeliveries(), hooks.renderEndpoints(CHART_MAX_AGE_MS)]);
}

export async function loadDeliveries() {
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
    h(
      'td',
      { class: 'next', dataset: { reason: d.next_attempt_reason ?? '' } },
      d.next_attempt_at ? relative(d.next_attempt_at) : '—',
      d.next_attempt_reason ? h('span', { class: 'muted' }, ` · ${SHORT_REASON[d.next_attempt_reason] ?? d.next_attempt_reason}`) : null,
    ),
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
  const next = d.next_attempt_at || d.next_attempt_reason ? nextAttemptLine(d) : null;
  // (DOM replaceChildren would write a null as the text "null": only the parts there are.)
  $('delivery-detail').replaceChildren(
    h('h2', {}, `Delivery ${d.id}`),
    h('p', { class: 'muted' }, `${d.event_type} · ${d.idempotency_key} · event ${d.event_id ?? '— (test send)'} · status ${d.status}`),
    ...(next ? [next] : []),
    h('h3', {}, 'Attempts'),
    attempts.length
      ? h('table', { id: 'attempts' }, h('thead', {}, head), h('tbody', {}, ...attempts))
      : h('p', { class: 'muted' }, 'No attempt yet.'),
    signedRequest(d.request),
  );
  for (const tr of $('deliveries').querySelectorAll('tr.delivery')) tr.classList.toggle('open', tr.dataset.deliveryId === id);
}

const SHORT_REASON = {
  endpoint_paused: 'held: endpoint paused',
  endpoint_inactive: 'held: endpoint inactive',
  endpoint_unverified: 'held: endpoint unverified',
  endpoint_pacing: "at the failing endpoint's next POST",
  endpoint_queue: 'behind others on a failing endpoint',
};

/** The plain words of a delivery's `next_attempt_reason` (null: its own retry time stands). */
export const REASON_WORDS = {
  endpoint_paused: 'the endpoint is paused (circuit open): nothing is sent until a 2xx test or a recovery',
  endpoint_inactive: 'the endpoint is inactive: deliveries are held until a 2xx test reactivates it',
  endpoint_unverified: 'the endpoint is unverified: nothing is sent until a test answers 2xx',
  endpoint_pacing: "it is first in line on a failing endpoint: it goes at the endpoint's next POST",
  endpoint_queue: 'it waits behind others on a failing endpoint: this is the earliest it can go',
};

function nextAttemptLine(d) {
  const at = d.next_attempt_at ? `next attempt ${relative(d.next_attempt_at)} (${when(d.next_attempt_at)})` : 'no attempt planned';
  const why = d.next_attempt_reason ? `, because ${REASON_WORDS[d.next_attempt_reason] ?? d.next_attempt_reason}` : ', its own retry time';
  return h('p', { id: 'next-attempt', dataset: { reason: d.next_attempt_reason ?? '' } }, at + why + '.');
}

/** JSON pretty-printed for reading; the exact bytes that were signed stay one click away. */
function pretty(body) {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

function signedRequest(req) {
  if (!req) return h('p', { class: 'muted', id: 'request' }, 'The request cannot be shown: its event or its endpoint was deleted.');
  const headers = Object.entries(req.headers).map(([name, value]) =>
    h('tr', { dataset: { header: name } }, h('th', {}, name), h('td', {}, h('code', {}, value))),
  );
  return h(
    'div',
    { id: 'request', dataset: { attempt: req.attempt } },
    h('h3', {}, `Request as signed (attempt ${req.attempt})`),
    h('table', { class: 'headers' }, h('tbody', {}, ...headers)),
    h('pre', { class: 'body pretty' }, pretty(req.body)),
    h('details', {}, h('summary', {}, 'Exact body (the signed bytes)'), h('pre', { class: 'body exact' }, req.body)),
  );
}

/**
 * After a recovery on a failing endpoint the deliveries wait for its next POST (the retry curve
 * at the streak); a 2xx test closes the circuit at once and they go now.
 */
function offerTestNow(e) {
  const box = $('test-now');
  if (e.failure_streak === 0 && e.health_status !== 'paused') {
    box.replaceChildren();
    box.hidden = true;
    return;
  }
  const button = h('button', { type: 'button', id: 'test-now-button' }, 'Test now');
  button.addEventListener('click', () =>
    act(button, async () => {
      const t = (await api.testWebhook(e.id)).data;
      box.replaceChildren();
      box.hidden = true;
      notice(`Test delivered to ${e.url}: HTTP ${t.response_code}, now ${t.health_status}: the recovered deliveries go now.`);
      await hooks.refresh();
    }),
  );
  const next = e.next_attempt_at ? ` ${relative(e.next_attempt_at)}` : '';
  box.replaceChildren(
    h(
      'span',
      {},
      `${e.url} is failing (streak ${e.failure_streak}): the recovered deliveries wait for its next POST${next}. ` +
        'A 2xx test closes the circuit and sends them now. ',
    ),
    button,
  );
  box.hidden = false;
}

export function wireDeliveries({ renderEndpoints, refresh }) {
  hooks.renderEndpoints = renderEndpoints;
  hooks.refresh = refresh;
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
    void act(null, () => hooks.renderEndpoints(CHART_MAX_AGE_MS));
  });

  $('recover-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const e = state.selected;
    void act(ev.submitter, async () => {
      const statuses = [...$('recover-form').querySelectorAll('input[type=checkbox]:checked')].map((i) => i.value);
      const body = { since: isoOfLocal($('recover-since').value), until: isoOfLocal($('recover-until').value), statuses };
      const r = (await api.recoverWebhook(e.id, body)).data;
      notice(`Recovered ${r.recovered} ${r.recovered === 1 ? 'delivery' : 'deliveries'} of ${e.url}.`);
      await hooks.refresh();
      offerTestNow(state.selected ?? e);
    });
  });
}

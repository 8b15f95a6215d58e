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
    });
  });
}

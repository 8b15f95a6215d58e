/** The endpoint list: health, streak, next POST, the 24-hour chart; test, pause, reactivate, create. */
import { api } from './api.js';
import { outcomeChart } from './chart.js';
import { act, notice, showError } from './messages.js';
import { state } from './state.js';
import { $, badge, h, relative, when } from './views.js';

/** Set by the app: opening an endpoint's deliveries, and reloading everything after an action. */
const hooks = { open: async () => {}, refresh: async () => {} };

/**
 * Charts by endpoint id with when they were read. The quiet refresh reuses one for a minute: the
 * stats route counts in Postgres, and a chart of 24 hours moves little in 10 seconds.
 */
const charts = new Map();
export const CHART_MAX_AGE_MS = 60_000;

/** `statsMaxAgeMs` 0 (after an action): every chart is read again. */
export async function loadEndpoints(statsMaxAgeMs = 0) {
  const page = await api.listWebhooks({ limit: 20 });
  state.endpoints = page.data;
  state.endpointsAfter = page.paging.next;
  await renderEndpoints(statsMaxAgeMs);
}

function chartOf(id, maxAgeMs) {
  const known = charts.get(id);
  if (known && Date.now() - known.at < maxAgeMs) return known.data;
  return api.getWebhookStats(id).then(
    (r) => {
      charts.set(id, { at: Date.now(), data: r.data });
      return r.data;
    },
    (err) => err,
  );
}

export async function renderEndpoints(statsMaxAgeMs = 0) {
  const stats = await Promise.all(state.endpoints.map((e) => chartOf(e.id, statsMaxAgeMs)));
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
    ? h('button', { type: 'button', class: 'pause', title: 'PATCH active: false' }, 'Pause')
    : h('button', { type: 'button', class: 'reactivate', title: 'Sends a test; a 2xx reactivates' }, 'Reactivate (test)');
  toggle.addEventListener('click', () => act(toggle, () => (e.active ? pause(e) : sendTest(e))));
  const open = h('button', { type: 'button', class: 'open' }, 'Deliveries');
  open.addEventListener('click', () => act(open, () => hooks.open(e)));
  return h(
    'div',
    {
      class: `endpoint${state.selected?.id === e.id ? ' selected' : ''}`,
      dataset: { endpointId: e.id, health: e.health_status, active: e.active },
    },
    h('div', {}, h('span', { class: 'url' }, e.url), badge(e.health_status), e.active ? null : badge('inactive')),
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
  await hooks.refresh();
}

async function pause(e) {
  await api.updateWebhook(e.id, { active: false });
  // active: false (the Account's choice) is not health `paused` (the circuit breaker's): the badge says "inactive".
  notice(`Paused ${e.url}: it is inactive, new events are not delivered to it and accepted deliveries are held until a 2xx test.`);
  await hooks.refresh();
}

export function wireEndpoints({ open, refresh }) {
  hooks.open = open;
  hooks.refresh = refresh;
  $('refresh').addEventListener('click', (ev) => act(ev.currentTarget, hooks.refresh));
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
}

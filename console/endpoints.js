/** The endpoint list: health, streak, why it fails and its next POST, the 24-hour chart; test, pause, reactivate, create, edit, delete, secrets. */
import { api } from './api.js';
import { outcomeChart } from './chart.js';
import { act, notice, showError } from './messages.js';
import { state } from './state.js';
import { $, badge, h, relative, when } from './views.js';

/** Set by the app: opening an endpoint's deliveries, and reloading everything after an action. */
const hooks = { open: async () => {}, refresh: async () => {} };

/**
 * Charts by endpoint id with when they were read. The quiet refresh reuses one for a minute: a
 * chart of 24 hours moves little in 10 seconds.
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

/**
 * Why a failing endpoint fails, in its last failed attempt's words: the endpoint carries the last
 * code, the attempt carries the error kind. Read only for endpoints with a streak.
 */
async function lastFailureOf(e) {
  if (e.failure_streak === 0) return null;
  const page = await api.listDeliveries({ endpoint_id: e.id, limit: 20 });
  const tried = page.data.filter((d) => d.event_id && d.last_attempt_at);
  if (tried.length === 0) return null;
  const latest = tried.reduce((a, b) => (Date.parse(b.last_attempt_at) > Date.parse(a.last_attempt_at) ? b : a));
  const attempt = (await api.getDelivery(latest.id)).data.attempts_log.at(-1);
  return attempt && attempt.error ? { kind: attempt.error, code: attempt.response_code } : null;
}

const ERROR_WORDS = {
  non_2xx: 'the receiver answered',
  timeout: 'the receiver did not answer in time',
  connection_error: 'the receiver could not be reached',
  tls_error: 'the TLS handshake with the receiver failed',
  blocked_destination: 'the destination resolves to an address that is not public',
};

/** "because …": the last failure in plain words, its error kind and code. */
function cause(e, failure) {
  if (!failure) return e.last_response_code ? `the last POST got HTTP ${e.last_response_code}` : 'the last POST failed';
  const code = failure.code ? ` HTTP ${failure.code}` : '';
  return `${ERROR_WORDS[failure.kind] ?? failure.kind}${code} (${failure.kind})`;
}

/** Beside the badge (which says `healthy` until streak 5): what is going on and when the next POST goes. */
function failingLine(e, failure) {
  if (e.failure_streak === 0) return null;
  const next =
    e.health_status === 'paused'
      ? 'nothing sent until a 2xx test'
      : !e.active
        ? 'nothing sent while inactive'
        : e.next_attempt_at
          ? `next POST ${relative(e.next_attempt_at)} (${when(e.next_attempt_at)})`
          : 'no POST due';
  return h(
    'div',
    { class: 'failing', dataset: { streak: e.failure_streak, errorKind: failure?.kind ?? '', errorCode: failure?.code ?? '' } },
    `failing: streak ${e.failure_streak}, ${next}, because ${cause(e, failure)}`,
  );
}

export async function renderEndpoints(statsMaxAgeMs = 0) {
  const [stats, failures] = await Promise.all([
    Promise.all(state.endpoints.map((e) => chartOf(e.id, statsMaxAgeMs))),
    Promise.all(state.endpoints.map((e) => lastFailureOf(e).catch(() => null))),
  ]);
  const list = $('endpoints');
  list.replaceChildren(...state.endpoints.map((e, i) => endpointCard(e, stats[i], failures[i])));
  if (state.endpoints.length === 0) list.append(h('p', { class: 'muted' }, 'No endpoint yet: create one.'));
  $('endpoints-more').hidden = !state.endpointsAfter;
  const failed = stats.find((s) => s instanceof Error);
  if (failed) showError(failed);
}

function endpointCard(e, stats, failure) {
  const facts = [
    `streak ${e.failure_streak}`,
    `next POST ${e.next_attempt_at ? `${relative(e.next_attempt_at)} (${when(e.next_attempt_at)})` : '—'}`,
    `last code ${e.last_response_code ?? '—'}`,
    failure ? `last error ${failure.kind}${failure.code ? ` ${failure.code}` : ''}` : null,
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
  const edit = h('button', { type: 'button', class: 'edit' }, 'Edit');
  edit.addEventListener('click', () => editEndpoint(e));
  return h(
    'div',
    {
      class: `endpoint${state.selected?.id === e.id ? ' selected' : ''}`,
      dataset: { endpointId: e.id, health: e.health_status, active: e.active },
    },
    h(
      'div',
      {},
      h('span', { class: 'url' }, e.url),
      badge(e.health_status),
      e.active ? null : badge('inactive'),
      // Beside the badge, which stays `healthy` until streak 5: what is going on.
      failingLine(e, failure),
      e.description ? h('div', { class: 'description' }, e.description) : null,
    ),
    h(
      'div',
      { class: 'chart-cell' },
      stats && !(stats instanceof Error) ? outcomeChart(stats.hours) : h('span', { class: 'muted' }, 'no chart'),
    ),
    h('div', { class: 'facts' }, facts.filter(Boolean).join(' · ')),
    h('div', { class: 'actions' }, open, test, toggle, edit),
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

/** A secret the API will never show again (the creation's, or one the console set): shown once, then dismissed. */
function showSecret(box, text, secret) {
  const dismiss = h('button', { type: 'button' }, 'I saved it');
  dismiss.addEventListener('click', () => {
    box.replaceChildren();
    box.hidden = true;
  });
  box.replaceChildren(h('div', {}, text), h('code', { id: 'secret-value' }, secret), h('div', {}, dismiss));
  box.hidden = false;
}

/** A new secret in the Standard Webhooks form the API itself generates: `whsec_` + base64 of 32 random bytes. */
function newSecret() {
  const bytes = window.crypto.getRandomValues(new Uint8Array(32));
  return `whsec_${window.btoa(String.fromCharCode(...bytes))}`;
}

const CATEGORIES = ['messages', 'statuses', 'crm', 'account', 'app_messages'];

/** The edit panel of one endpoint: PATCH of what changed, the secret, delete. */
function editEndpoint(e) {
  const panel = $('edit-panel');
  const field = (label, input) => h('label', {}, label, input);
  const url = h('input', { id: 'edit-url', type: 'url', value: e.url, required: true });
  const categories = CATEGORIES.map((c) =>
    h('label', {}, h('input', { type: 'checkbox', value: c, checked: e.events.includes(c) }), ` ${c}`),
  );
  const authorization = h('input', {
    id: 'edit-authorization',
    type: 'password',
    placeholder: e.has_authorization ? 'set (kept when left empty)' : 'none',
    autocomplete: 'off',
  });
  const removeAuthorization = h('input', { id: 'edit-authorization-remove', type: 'checkbox', disabled: !e.has_authorization });
  const rateLimit = h('input', {
    id: 'edit-rate-limit',
    type: 'number',
    min: 1,
    max: 10000,
    value: e.rate_limit ?? '',
    placeholder: 'unlimited',
  });
  const description = h('textarea', { id: 'edit-description', maxlength: 512, rows: 2 }, e.description ?? '');
  const save = h('button', { type: 'submit' }, 'Save');
  const form = h(
    'form',
    { id: 'edit-form', autocomplete: 'off' },
    field('URL ', url),
    h('fieldset', { id: 'edit-events' }, h('legend', {}, 'Categories'), ...categories),
    field('Authorization header ', authorization),
    h('label', {}, removeAuthorization, ' remove it'),
    field('Rate limit (POSTs per second) ', rateLimit),
    field('Description ', description),
    h('div', {}, save),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void act(save, async () => {
      const body = {};
      if (url.value.trim() !== e.url) body.url = url.value.trim();
      const events = categories
        .map((l) => l.querySelector('input'))
        .filter((i) => i.checked)
        .map((i) => i.value);
      if (events.join() !== e.events.join()) body.events = events;
      if (removeAuthorization.checked) body.headers = { Authorization: null };
      else if (authorization.value) body.headers = { Authorization: authorization.value };
      const limit = rateLimit.value === '' ? null : Number(rateLimit.value);
      if (limit !== e.rate_limit) body.rate_limit = limit;
      const text = description.value.trim() || null;
      if (text !== e.description) body.description = text;
      if (Object.keys(body).length === 0) return notice('Nothing changed.');
      const updated = (await api.updateWebhook(e.id, body)).data;
      editEndpoint(updated);
      notice(`Saved ${updated.url}: ${Object.keys(body).join(', ')} changed; now ${updated.health_status}.`);
      await hooks.refresh();
    });
  });

  const secretBox = h('div', { id: 'edit-secret', class: 'secret', hidden: true });
  const setSecret = async (secret, how) => {
    await api.updateWebhook(e.id, { secret });
    showSecret(secretBox, `${how} for ${e.url}; every attempt from now on signs with it. Shown this once: copy it now.`, secret);
  };
  const rotate = h('button', { type: 'button', id: 'rotate-secret' }, 'Rotate secret now');
  rotate.addEventListener('click', () => act(rotate, () => setSecret(newSecret(), 'New signing secret')));
  const own = h('input', { id: 'own-secret', type: 'password', placeholder: '16 to 256 characters', autocomplete: 'off' });
  const setOwn = h('button', { type: 'button', id: 'set-secret' }, 'Set this secret');
  setOwn.addEventListener('click', () =>
    act(setOwn, async () => {
      await setSecret(own.value, 'Your signing secret is set');
      own.value = '';
    }),
  );

  const del = h('button', { type: 'button', id: 'delete-endpoint', class: 'danger' }, 'Delete endpoint');
  del.addEventListener('click', () => {
    if (!window.confirm(`Delete ${e.url}? Its deliveries not yet made end exhausted (endpoint_deleted); this cannot be undone.`)) return;
    void act(del, async () => {
      await api.deleteWebhook(e.id);
      closeEdit();
      notice(`Deleted ${e.url}.`);
      if (state.selected?.id === e.id) $('deliveries-close').click();
      await hooks.refresh();
    });
  });
  const close = h('button', { type: 'button' }, 'Close');
  close.addEventListener('click', closeEdit);

  panel.replaceChildren(
    h('div', { class: 'bar' }, h('h2', {}, `Edit ${e.url}`), close),
    form,
    h('h3', {}, 'Signing secret'),
    h('div', { class: 'inline' }, rotate, own, setOwn),
    secretBox,
    h('h3', {}, 'Danger'),
    del,
  );
  panel.dataset.endpointId = e.id;
  panel.hidden = false;
}

function closeEdit() {
  $('edit-panel').replaceChildren();
  $('edit-panel').hidden = true;
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
      showSecret($('secret'), `Signing secret of ${created.url}, shown this once: copy it now.`, created.secret);
      $('create-url').value = '';
      await loadEndpoints();
    });
  });
}

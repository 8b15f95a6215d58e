/**
 * A tiny fetch client over /api/v1 with the shapes of the OpenAPI document
 * (/api/v1/openapi.json): `{ data }`, `{ data, paging }`, errors `{ error: { code, message } }`.
 * The key lives in this tab's sessionStorage and leaves only in the X-API-Key header: never in
 * a path or a query (the API logs both), never in localStorage, never in a log.
 */
const KEY_ITEM = 'webhookConsole.apiKey';

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export const session = {
  key: () => sessionStorage.getItem(KEY_ITEM),
  signIn: (key) => sessionStorage.setItem(KEY_ITEM, key),
  signOut: () => sessionStorage.clear(),
};

const seg = (id) => encodeURIComponent(id);

async function call(method, path, { query, body } = {}) {
  const key = session.key();
  if (!key) throw new ApiError(401, 'signed_out', 'sign in with an API key first');
  const url = new URL(`/api/v1${path}`, location.origin);
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== null && value !== '') url.searchParams.set(name, String(value));
  }
  const headers = { 'X-API-Key': key, Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
  } catch (e) {
    throw new ApiError(0, 'network_error', `the API could not be reached (${e.message})`);
  }
  const text = await res.text();
  let json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    const err = json && json.error;
    throw new ApiError(res.status, err?.code ?? `http_${res.status}`, err?.message ?? (text.slice(0, 200) || res.statusText));
  }
  return json;
}

/** One function per route the console uses, named as in the SDK's ROUTES. */
export const api = {
  listWebhooks: (query) => call('GET', '/webhooks', { query }),
  createWebhook: (body) => call('POST', '/webhooks', { body }),
  updateWebhook: (id, body) => call('PATCH', `/webhooks/${seg(id)}`, { body }),
  testWebhook: (id) => call('POST', `/webhooks/${seg(id)}/test`),
  getWebhookStats: (id) => call('GET', `/webhooks/${seg(id)}/stats`),
  recoverWebhook: (id, body) => call('POST', `/webhooks/${seg(id)}/recover`, { body }),
  listDeliveries: (query) => call('GET', '/webhook_deliveries', { query }),
  getDelivery: (id) => call('GET', `/webhook_deliveries/${seg(id)}`),
  resendDelivery: (id) => call('POST', `/webhook_deliveries/${seg(id)}/resend`),
  listEvents: (query) => call('GET', '/events', { query }),
  getEvent: (id) => call('GET', `/events/${seg(id)}`),
  deleteWebhook: (id) => call('DELETE', `/webhooks/${seg(id)}`),
};

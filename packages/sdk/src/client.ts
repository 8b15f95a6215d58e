/** The REST client: one typed method per /api/v1 operation, the error model of SPEC 7, a per-request timeout and retries. */
import { WebhookPlatformError } from './errors.js';
import type { components, paths } from './openapi.js';
import { ROUTES, type RouteName, type Shape } from './routes.js';
import { EventStream, type StreamOptions } from './stream.js';

export const SDK_VERSION = '0.12.0';
export const DEFAULT_BASE_URL = 'http://localhost:3000/api/v1';

type Schemas = components['schemas'];
export type Endpoint = Schemas['Endpoint'];
export type EndpointWithSecret = Schemas['EndpointWithSecret'];
export type CreateEndpoint = Schemas['CreateEndpoint'];
export type UpdateEndpoint = Schemas['UpdateEndpoint'];
export type TestResult = Schemas['TestResult'];
export type Delivery = Schemas['Delivery'];
export type DeliveryDetail = Schemas['DeliveryDetail'];
export type Attempt = Schemas['Attempt'];
export type SignedRequest = Schemas['SignedRequest'];
export type Paging = Schemas['Paging'];
export type StreamItem = Schemas['StreamItem'];
export type StreamPaging = Schemas['StreamPaging'];
export type PublishEvent = Schemas['PublishEvent'];
export type EventType = Schemas['EventType'];
export type ErrorEnvelope = Schemas['Error'];
export type Contact = Schemas['Contact'];
export type Stage = Schemas['Stage'];
export type ConsentRecord = Schemas['ConsentRecord'];
export type Conversation = Schemas['Conversation'];
export type Message = Schemas['Message'];
export type OutboundMessage = Schemas['OutboundMessage'];
export type ChannelAccount = Schemas['ChannelAccount'];
export type Template = Schemas['Template'];
export type SetupLink = Schemas['SetupLink'];
export type Broadcast = Schemas['Broadcast'];
export type BroadcastRecipient = Schemas['BroadcastRecipient'];
export type AddRecipientsResult = Schemas['AddRecipientsResult'];
export type RecoverDeliveries = Schemas['RecoverDeliveries'];
export type RecoveryResult = Schemas['RecoveryResult'];

type Op<N extends RouteName> = NonNullable<paths[(typeof ROUTES)[N]['path']][(typeof ROUTES)[N]['method']]>;
type JsonOf<R> = R extends { content: { 'application/json': infer B } } ? B : undefined;
type Responses<N extends RouteName> = Op<N> extends { responses: infer R } ? R : never;
/** The JSON of the 200, 201 or 202 answer of a route, as the server documents it. */
export type ResponseOf<N extends RouteName> =
  Responses<N> extends { 200: infer R }
    ? JsonOf<R>
    : Responses<N> extends { 201: infer R }
      ? JsonOf<R>
      : Responses<N> extends { 202: infer R }
        ? JsonOf<R>
        : undefined;
/** What `data` holds in a success answer (a 202 documents the error envelope beside it: never returned, thrown). */
export type DataOf<N extends RouteName> = Extract<ResponseOf<N>, { data: unknown }> extends { data: infer D } ? D : never;
export type BodyOf<N extends RouteName> = Op<N> extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
/** Query parameters as documented (strings on the wire); numbers are accepted for convenience. */
export type QueryOf<N extends RouteName> = Op<N> extends { parameters: { query?: infer Q } } ? { [K in keyof Q]?: Q[K] | number } : never;

export type Page<T> = { data: T[]; paging: Paging };
export type DeliveryFilter = QueryOf<'listDeliveries'>;

export interface ClientOptions {
  /** Ends in /api/v1. Default http://localhost:3000/api/v1. */
  baseUrl?: string;
  /** Sent as X-API-Key. Required unless `anonymous` is set. */
  apiKey?: string;
  /** Call only the public routes (no X-API-Key). Without it, a missing apiKey is refused at construction. */
  anonymous?: boolean;
  /** Default: the global fetch (Node 20.19+). */
  fetch?: typeof fetch;
  /**
   * Retries of a 429 answer, each after its Retry-After; and, for a request that is safe to send
   * again (a GET, an event publish, a send with an idempotency key), of a network failure, a
   * timeout and a 502, 503 or 504. Default 2.
   */
  maxRetries?: number;
  /** Delay before a retry when the answer has no Retry-After; doubles with each retry. Default 1000 ms. */
  defaultRetryDelayMs?: number;
  /** A request with no complete answer by then fails with code `timeout` (status 0). Default 30000 ms; 0 waits forever. */
  timeoutMs?: number;
  userAgent?: string;
}

type Opts = { signal?: AbortSignal };

interface CallArgs {
  params?: Record<string, string>;
  headers?: Record<string, string>;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  signal?: AbortSignal;
}

/** Answers that mean the request may not have been handled, so a request safe to repeat is sent again. */
const TRANSIENT_STATUSES = new Set([502, 503, 504]);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Seconds of a Retry-After header: delta-seconds or an HTTP date. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The most telling part of a fetch failure: undici's cause code (ECONNREFUSED, UND_ERR_SOCKET), else a message. */
function causeOf(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err as Error).message;
}

function checkShape(shape: Shape, body: unknown, what: string): void {
  const data = isObject(body) ? body.data : undefined;
  const ok =
    shape === 'item'
      ? isObject(data)
      : shape === 'array'
        ? Array.isArray(data)
        : shape === 'page'
          ? Array.isArray(data) && isObject((body as { paging?: unknown }).paging)
          : true;
  if (!ok)
    throw WebhookPlatformError.malformed(
      `${what}: the answer is not the documented shape (${shape === 'item' ? '{ data: {...} }' : shape === 'page' ? '{ data: [...], paging }' : '{ data: [...] }'})`,
    );
}

export class WebhookPlatform {
  readonly baseUrl: string;
  readonly #apiKey: string | undefined;
  readonly #fetch: typeof fetch;
  readonly #maxRetries: number;
  readonly #defaultRetryDelayMs: number;
  readonly #timeoutMs: number;
  readonly #userAgent: string;

  constructor(options: ClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
    // An unset variable (`apiKey: process.env.KEY`) would otherwise surface only later, as a 401.
    if (!options.anonymous && (typeof options.apiKey !== 'string' || options.apiKey.trim() === ''))
      throw new TypeError(
        `@webhook-platform/sdk: apiKey is ${options.apiKey === undefined ? 'undefined' : 'empty'}: pass an API key (wh_live_… or wh_sandbox_…; is the environment variable set?), or anonymous: true for the public routes only`,
      );
    this.#apiKey = options.anonymous ? undefined : options.apiKey;
    const f = options.fetch ?? globalThis.fetch;
    if (typeof f !== 'function') throw new Error('@webhook-platform/sdk needs a global fetch (Node 20.19 or later) or the fetch option');
    this.#fetch = f;
    this.#maxRetries = options.maxRetries ?? 2;
    this.#defaultRetryDelayMs = options.defaultRetryDelayMs ?? 1000;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#userAgent = options.userAgent ?? `webhook-platform-sdk/${SDK_VERSION}`;
  }

  readonly webhooks = {
    /** The answer is the only place the signing secret is ever shown. */
    create: (body: BodyOf<'createWebhook'>, o?: { signal?: AbortSignal }) => this.#data<'createWebhook'>('createWebhook', { body, ...o }),
    list: (query: QueryOf<'listWebhooks'> = {}, o?: { signal?: AbortSignal }) => this.call('listWebhooks', { query, ...o }),
    get: (id: string, o?: { signal?: AbortSignal }) => this.#data<'getWebhook'>('getWebhook', { params: { id }, ...o }),
    update: (id: string, body: BodyOf<'updateWebhook'>, o?: { signal?: AbortSignal }) =>
      this.#data<'updateWebhook'>('updateWebhook', { params: { id }, body, ...o }),
    delete: async (id: string, o?: { signal?: AbortSignal }): Promise<void> => {
      await this.call('deleteWebhook', { params: { id }, ...o });
    },
    /** A non-2xx answer of the receiver is a WebhookPlatformError with status 502, code test_delivery_failed. */
    test: (id: string, o?: { signal?: AbortSignal }) => this.#data<'testWebhook'>('testWebhook', { params: { id }, ...o }),
    /** Attempts per hour over the last 24 hours, the current hour last. */
    stats: (id: string, o?: { signal?: AbortSignal }) => this.#data<'getWebhookStats'>('getWebhookStats', { params: { id }, ...o }),
    /**
     * Puts the endpoint's failed, exhausted and limited deliveries created in [since, until] back to
     * pending; `recovered` says how many. Repeating it recovers 0 more.
     */
    recover: (id: string, body: BodyOf<'recoverWebhook'>, o?: { signal?: AbortSignal }) =>
      this.#data<'recoverWebhook'>('recoverWebhook', { params: { id }, body, ...o }),
  };

  readonly deliveries = {
    /** Newest first. Filters: endpoint_id, status, event_type (the fine name); `after` takes paging.next. */
    list: (query: DeliveryFilter = {}, o?: { signal?: AbortSignal }) => this.call('listDeliveries', { query, ...o }),
    /** One delivery with `attempts_log` and `request`: the body and headers as signed (a stored Authorization shows as `<set>`). */
    get: (id: string, o?: { signal?: AbortSignal }) => this.#data<'getDelivery'>('getDelivery', { params: { id }, ...o }),
    resend: (id: string, o?: { signal?: AbortSignal }) => this.#data<'resendDelivery'>('resendDelivery', { params: { id }, ...o }),
  };

  readonly events = {
    /** One page of the durable stream after the exclusive cursor `after` (default 0). */
    list: (query: QueryOf<'listEvents'> = {}, o?: { signal?: AbortSignal }) => this.call('listEvents', { query, ...o }),
    /** One event of the key's Account and environment, as a stream item; 404 `not_found` otherwise. */
    get: (id: string, o?: { signal?: AbortSignal }) => this.#data<'getEvent'>('getEvent', { params: { id }, ...o }),
    /** `created` is false when the service already had this event (same idempotency key): `event` is then the first one. */
    publish: async (body: BodyOf<'publishEvent'>, o?: { signal?: AbortSignal }): Promise<{ event: StreamItem; created: boolean }> => {
      const { status, body: answer } = await this.#request('publishEvent', { body, ...o });
      return { event: (answer as { data: StreamItem }).data, created: status === 201 };
    },
    /** Reads the stream from a saved cursor as an async iterator; see EventStream. */
    stream: (options: StreamOptions = {}) => new EventStream((query, signal) => this.events.list(query, { signal }), options),
  };

  readonly eventTypes = {
    list: async (o?: { signal?: AbortSignal }): Promise<EventType[]> => (await this.call('listEventTypes', { ...o })).data,
  };

  readonly contacts = {
    /** Newest first. Filters: channel_account_id, stage (a stage key), wa_id. */
    list: (query: QueryOf<'listContacts'> = {}, o?: Opts) => this.call('listContacts', { query, ...o }),
    get: (id: string, o?: Opts) => this.#data<'getContact'>('getContact', { params: { id }, ...o }),
    /** `stage` (a stage key, or null to leave the funnel) emits crm.contact.stage_changed when it really changes. */
    update: (id: string, body: BodyOf<'updateContact'>, o?: Opts) =>
      this.#data<'updateContact'>('updateContact', { params: { id }, body, ...o }),
    /** Deletes the contact and removes its events from the stream. */
    delete: async (id: string, o?: Opts): Promise<void> => {
      await this.call('deleteContact', { params: { id }, ...o });
    },
    consents: {
      /** Records a consent; a change of state emits crm.contact.consent_changed. */
      create: (contactId: string, body: BodyOf<'createConsent'>, o?: Opts) =>
        this.#data<'createConsent'>('createConsent', { params: { id: contactId }, body, ...o }),
      list: (contactId: string, query: QueryOf<'listConsents'> = {}, o?: Opts) =>
        this.call('listConsents', { params: { id: contactId }, query, ...o }),
    },
  };

  readonly stages = {
    list: (query: QueryOf<'listStages'> = {}, o?: Opts) => this.call('listStages', { query, ...o }),
    create: (body: BodyOf<'createStage'>, o?: Opts) => this.#data<'createStage'>('createStage', { body, ...o }),
    /** Its contacts leave the funnel, each with a crm.contact.stage_changed (changed_by system). */
    delete: async (id: string, o?: Opts): Promise<void> => {
      await this.call('deleteStage', { params: { id }, ...o });
    },
  };

  readonly messages = {
    /**
     * Sends through a channel account's provider; the answer is the registered message (status
     * `queued`), whose statuses arrive as chatapp.message.* events. Media still processing is a
     * WebhookPlatformError with code media_not_ready and `retryAfter`. `idempotencyKey` makes a
     * retry answer the first send instead of sending again.
     */
    send: (body: BodyOf<'sendMessage'>, o?: Opts & { idempotencyKey?: string }) =>
      this.#data<'sendMessage'>('sendMessage', {
        body,
        signal: o?.signal,
        headers: o?.idempotencyKey ? { 'idempotency-key': o.idempotencyKey } : undefined,
      }),
    list: (query: QueryOf<'listMessages'> = {}, o?: Opts) => this.call('listMessages', { query, ...o }),
  };

  readonly conversations = {
    list: (query: QueryOf<'listConversations'> = {}, o?: Opts) => this.call('listConversations', { query, ...o }),
  };

  readonly channelAccounts = {
    list: (query: QueryOf<'listChannelAccounts'> = {}, o?: Opts) => this.call('listChannelAccounts', { query, ...o }),
    /** Photoapp accounts show token_status; expired, invalid or revoked tokens refuse sends. */
    get: (id: string, o?: Opts) => this.#data<'getChannelAccount'>('getChannelAccount', { params: { id }, ...o }),
  };

  readonly templates = {
    list: (query: QueryOf<'listTemplates'> = {}, o?: Opts) => this.call('listTemplates', { query, ...o }),
    /** Reads the channel account's templates from the provider into the platform. */
    sync: (body: BodyOf<'syncTemplates'>, o?: Opts) => this.#data<'syncTemplates'>('syncTemplates', { body, ...o }),
  };

  readonly setupLinks = {
    /** The answer's url is shown only now: the Customer finishes the provider's embedded signup (or, with `channel: 'photoapp'`, its login) through it. */
    create: (customerId: string, body: BodyOf<'createSetupLink'> = {}, o?: Opts) =>
      this.#data<'createSetupLink'>('createSetupLink', { params: { id: customerId }, body, ...o }),
    list: (customerId: string, query: QueryOf<'listSetupLinks'> = {}, o?: Opts) =>
      this.call('listSetupLinks', { params: { id: customerId }, query, ...o }),
  };

  readonly broadcasts = {
    create: (body: BodyOf<'createBroadcast'>, o?: Opts) => this.#data<'createBroadcast'>('createBroadcast', { body, ...o }),
    list: (query: QueryOf<'listBroadcasts'> = {}, o?: Opts) => this.call('listBroadcasts', { query, ...o }),
    get: (id: string, o?: Opts) => this.#data<'getBroadcast'>('getBroadcast', { params: { id }, ...o }),
    /** At most 1000 per call; invalid items come back in `errors` by index, repeats count in `duplicates`. */
    addRecipients: (id: string, body: BodyOf<'addBroadcastRecipients'>, o?: Opts) =>
      this.#data<'addBroadcastRecipients'>('addBroadcastRecipients', { params: { id }, body, ...o }),
    listRecipients: (id: string, query: QueryOf<'listBroadcastRecipients'> = {}, o?: Opts) =>
      this.call('listBroadcastRecipients', { params: { id }, query, ...o }),
    send: (id: string, o?: Opts) => this.#data<'sendBroadcast'>('sendBroadcast', { params: { id }, ...o }),
  };

  /** Calls one route by its name in ROUTES and returns the answer's JSON. */
  async call<N extends RouteName>(name: N, args: CallArgs = {}): Promise<ResponseOf<N>> {
    return (await this.#request(name, args)).body as ResponseOf<N>;
  }

  async #data<N extends RouteName>(name: N, args: CallArgs): Promise<DataOf<N>> {
    return ((await this.call(name, args)) as unknown as { data: never }).data;
  }

  async #request(name: RouteName, args: CallArgs): Promise<{ status: number; body: unknown }> {
    const route = ROUTES[name];
    const path = route.path.replace(/\{(\w+)\}/g, (_, key: string) => {
      const value = args.params?.[key];
      if (value === undefined || value === '') throw new TypeError(`${name}: missing path parameter ${key}`);
      return encodeURIComponent(value);
    });
    const url = new URL(this.baseUrl + path);
    for (const [key, value] of Object.entries(args.query ?? {}))
      if (value !== undefined && value !== '') url.searchParams.set(key, String(value));
    const method = route.method.toUpperCase();
    const what = `${method} ${url.pathname}`;
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': this.#userAgent };
    if (this.#apiKey) headers['x-api-key'] = this.#apiKey;
    Object.assign(headers, args.headers);
    if (args.body !== undefined) headers['content-type'] = 'application/json';
    const body = args.body === undefined ? undefined : JSON.stringify(args.body);

    // Sending these again cannot do a thing twice: a read, a publish (the event's idempotency key
    // makes a repeat answer the stored event), a send under an idempotency key.
    const repeatable = method === 'GET' || name === 'publishEvent' || args.headers?.['idempotency-key'] !== undefined;
    for (let attempt = 0; ; attempt++) {
      const retry = attempt < this.#maxRetries;
      const backoff = (retryAfter?: number) =>
        sleep(retryAfter !== undefined ? retryAfter * 1000 : this.#defaultRetryDelayMs * 2 ** attempt, args.signal);
      const timeout = this.#timeoutMs > 0 ? AbortSignal.timeout(this.#timeoutMs) : undefined;
      const signal = timeout && args.signal ? AbortSignal.any([args.signal, timeout]) : (timeout ?? args.signal);
      let res: Response;
      let text: string;
      try {
        res = await this.#fetch(url, { method, headers, body, signal });
        text = await res.text();
      } catch (err) {
        if (args.signal?.aborted) throw err;
        const failure = timeout?.aborted
          ? WebhookPlatformError.timeout(`${what}: no complete answer within ${this.#timeoutMs} ms`, err)
          : WebhookPlatformError.network(`${what}: ${causeOf(err)}`, err);
        if (!(repeatable && retry)) throw failure;
        await backoff();
        continue;
      }
      const retryAfter = parseRetryAfter(res.headers.get('retry-after'));
      if (retry && (res.status === 429 || (repeatable && TRANSIENT_STATUSES.has(res.status)))) {
        await backoff(retryAfter);
        continue;
      }
      return { status: res.status, body: this.#interpret(route.shape, what, res.status, text, retryAfter) };
    }
  }

  #interpret(shape: Shape, what: string, status: number, text: string, retryAfter: number | undefined): unknown {
    const ok = status >= 200 && status < 300;
    if (ok && shape === 'empty' && text === '') return undefined;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw WebhookPlatformError.malformed(`${what}: HTTP ${status} with a body that is not JSON`);
    }
    // The envelope is an error whatever the status (SPEC 7), so it is looked for first.
    if (isObject(json) && isObject(json.error)) {
      const { code, message } = json.error;
      if (typeof code !== 'string' || typeof message !== 'string')
        throw WebhookPlatformError.malformed(`${what}: HTTP ${status} with an error envelope lacking code or message`);
      throw new WebhookPlatformError(status, code, message, { retryAfter });
    }
    if (!ok) throw WebhookPlatformError.malformed(`${what}: HTTP ${status} without the error envelope`);
    checkShape(shape, json, what);
    return json;
  }
}

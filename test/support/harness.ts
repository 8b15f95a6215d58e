import type { AccountId } from '../../src/core/ids.js';
/** Shared test fixtures built on the real components started by global-setup. */
import crypto from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { inject } from 'vitest';
import { createApp } from '../../src/api/app.js';
import { getEventDefinition } from '../../src/core/catalog/index.js';
import { ingestEvent, storeEvent } from '../../src/events/store-event.js';
import { createApiKeyCache } from '../../src/api/api-key-cache.js';
import type { ApiDeps } from '../../src/api/deps.js';
import { issueApiKey } from '../../src/db/api-keys.js';
import { createAccount, createCustomer, type Plan } from '../../src/db/directory.js';
import { insertEndpoint } from '../../src/db/endpoints.js';
import { dueChannel } from '../../src/db/due-notifications.js';
import { createPool, type Db } from '../../src/db/pool.js';
import { createDueWakes } from '../../src/events/due-wakes.js';
import { createHttpClient } from '../../src/delivery/http-client.js';
import { endpointWorkflows } from '../../src/delivery/workflow-client.js';
import { SCOPES, type Environment, type Scope } from '../../src/security/api-key.js';
import { createDestinationPolicy, type Resolver } from '../../src/security/destination-policy.js';
import { createSecretBox } from '../../src/security/secret-box.js';
import type { ProviderHttp } from '../../src/channels/provider-http.js';

export const TASK_QUEUE_PREFIX = 'test-webhooks';

let sharedDb: Db | undefined;
export function testDb(): Db {
  sharedDb ??= createPool(inject('databaseUrl'), 5);
  return sharedDb;
}

export interface Tenant {
  accountId: AccountId;
  /** All scopes, live environment. */
  key: string;
  keyFor(scopes: Scope[], environment?: Environment): Promise<string>;
  customerId: string;
}

/** On the run's shared database unless a test with its own database passes its pool. */
export async function createTenant(opts: { plan?: Plan; createdAt?: Date; db?: Db } = {}): Promise<Tenant> {
  const db = opts.db ?? testDb();
  const account = await createAccount(db, {
    name: `acct-${crypto.randomUUID().slice(0, 8)}`,
    ownerEmail: 'owner@example.com',
    plan: opts.plan ?? 'paid',
    createdAt: opts.createdAt,
  });
  const keyFor = async (scopes: Scope[], environment: Environment = 'live') =>
    (await issueApiKey(db, { accountId: account.id, environment, scopes })).key;
  const customer = await createCustomer(db, { accountId: account.id, name: 'Customer A' });
  return { accountId: account.id, key: await keyFor([...SCOPES]), keyFor, customerId: customer.id };
}

/**
 * An endpoint of the Account stored as a row (not through the API: not verified, nothing sent),
 * subscribed to crm: for tests of the tables below the API. Its id.
 */
export async function insertTestEndpoint(db: Db, accountId: string): Promise<string> {
  const e = await insertEndpoint(db, {
    accountId,
    customerId: null,
    url: 'https://public.example/hooks',
    events: ['crm'],
    active: true,
    secretCiphertext: createSecretBox(TEST_ENCRYPTION_KEY).seal(`whsec_${crypto.randomBytes(24).toString('base64')}`),
    limit: 50,
  });
  return e.id;
}

/** Static DNS for tests: names map to fixed addresses, anything else does not resolve. */
export function staticResolver(hosts: Record<string, string[]>): Resolver {
  return async (hostname) => {
    const found = hosts[hostname.toLowerCase()];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return found;
  };
}

export const TEST_HOSTS: Record<string, string[]> = {
  'receiver.test': ['127.0.0.1'],
  'public.example': ['93.184.215.14'],
  'public-v6.example': ['2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
  'private.example': ['10.1.2.3'],
  'mixed.example': ['93.184.215.14', '192.168.1.10'],
  localhost: ['127.0.0.1', '::1'],
};

export interface TestApi {
  url: string;
  deps: ApiDeps;
  request(
    method: string,
    path: string,
    opts?: { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> },
  ): Promise<{
    status: number;
    body: any;
    headers: Headers;
    /** The body as text; after a 500's, the error the API met (its logger is silent in tests). */
    text: string;
  }>;
  close(): Promise<void>;
}

/**
 * The real Koa app on a loopback port with a real Temporal client (dev server) and the
 * test DNS. Receivers on 127.0.0.0/8 are let through only when `allowLoopback` is set.
 */
export const PROVIDER_APP_SECRET = 'provider-app-secret-for-tests';
export const PROVIDER_VERIFY_TOKEN = 'provider-verify-token';

export async function startTestApi(
  opts: {
    allowLoopback?: boolean;
    timeoutMs?: number;
    rateLimit?: { capacity: number; refillPerSecond: number };
    taskQueue?: string;
    resolver?: Resolver;
    temporalAddress?: string;
    /** The clock ingest judges the Free plan by, so plan tests give the same verdict on any date. */
    now?: () => Date;
    /** A test with its own Postgres passes its pool; closing the API leaves that pool to the test. */
    db?: Db;
    /**
     * Without the SDK's retrying interceptor: for a Temporal that is down, whose retries would
     * otherwise fire on timers after close() and throw "Channel has been shut down".
     */
    noTemporalRetries?: boolean;
    /** The API key cache's TTL and clock (src/api/api-key-cache.ts), as in production unless given. */
    apiKeyCache?: { ttlMs?: number; now?: () => number };
    /** The provider's API client (e.g. on a local provider, test/support/local-provider.ts); routes needing it answer 503 when unset. */
    providerApi?: ProviderHttp;
  } = {},
): Promise<TestApi> {
  const db = opts.db ?? testDb();
  const connection = await Connection.connect({
    address: opts.temporalAddress ?? inject('devServerAddress'),
    ...(opts.noTemporalRetries ? { interceptors: [] } : {}),
  });
  const client = new Client({ connection });
  const policy = createDestinationPolicy({
    allowCidrs: opts.allowLoopback ? ['127.0.0.0/8'] : [],
    resolver: opts.resolver ?? staticResolver(TEST_HOSTS),
  });
  const httpClient = createHttpClient({ policy, timeoutMs: opts.timeoutMs ?? 10_000 });
  const workflows = endpointWorkflows(client, opts.taskQueue ?? `${TASK_QUEUE_PREFIX}-unpolled`);
  // As in production; listening before the first request, so tests see the cache in use.
  const apiKeys = createApiKeyCache(db, opts.apiKeyCache);
  await apiKeys.ready;
  // As in production: the audit list on connections that plan without sorts.
  const auditDb = createPool(db.options.connectionString!, 2, 0, { withoutSorts: true });
  const deps: ApiDeps = {
    config: { endpointLimit: 50, rateLimit: opts.rateLimit ?? { capacity: 10_000, refillPerSecond: 10_000 } },
    db,
    auditDb,
    secretBox: createSecretBox(TEST_ENCRYPTION_KEY),
    policy,
    httpClient,
    workflows,
    wakes: createDueWakes(db, dueChannel(opts.taskQueue ?? `${TASK_QUEUE_PREFIX}-unpolled`)),
    apiKeys,
    provider: { appSecret: PROVIDER_APP_SECRET, verifyToken: PROVIDER_VERIFY_TOKEN },
    providerApi: opts.providerApi,
    now: opts.now,
    temporalHealthy: async () => {
      await connection.withDeadline(Date.now() + 2_000, () => connection.workflowService.getSystemInfo({}));
      return true;
    },
  };
  const app = createApp(deps);
  // The cause of each 500 by request id: the logger is silent in tests, and a failure should say why.
  const unexpected = new Map<string, unknown>();
  app.on('error', (err: unknown, ctx?: { state?: { requestId?: string } }) => unexpected.set(ctx?.state?.requestId ?? '', err));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    deps,
    async request(method, path, o = {}) {
      const headers: Record<string, string> = { ...(o.headers ?? {}) };
      if (o.key) headers['x-api-key'] = o.key;
      let body: string | undefined = o.rawBody;
      if (o.body !== undefined) {
        body = JSON.stringify(o.body);
        headers['content-type'] ??= 'application/json';
      }
      const res = await fetch(url + path, { method, headers, body });
      const text = await res.text();
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      const cause = res.status === 500 ? unexpected.get(res.headers.get('x-request-id') ?? '') : undefined;
      if (cause) {
        // In the text a failed assertion can show, and on stderr for one that does not.
        const said = `${text}\n(the API's error: ${cause instanceof Error ? (cause.stack ?? cause.message) : String(cause)})`;
        process.stderr.write(`${method} ${path} answered 500: ${said}\n`);
        return { status: res.status, body: parsed, headers: res.headers, text: said };
      }
      return { status: res.status, body: parsed, headers: res.headers, text };
    },
    async close() {
      await new Promise((r) => server.close(r));
      server.closeAllConnections();
      await deps.wakes.flush();
      await apiKeys.close();
      await auditDb.end();
      await httpClient.close();
      await connection.close();
    },
  };
}

export const TEST_ENCRYPTION_KEY = crypto.randomBytes(32).toString('base64');

/** Polls `check` until it returns a truthy value or the deadline passes. */
export async function eventually<T>(check: () => Promise<T | undefined | null | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Stores a `crm.demand.created` event through the real ingest path, as a publisher's would be. */
export function storeDemandEvent(accountId: string, entityId: string) {
  return storeEvent(testDb(), demandEvent(accountId, entityId));
}

/** A `crm.demand.created` event of the Account's live stream, ready to store. */
export function demandEvent(accountId: string, entityId: string) {
  const def = getEventDefinition('crm.demand.created')!;
  const data = def.data.parse({
    entity_type: 'demand',
    entity_id: entityId,
    before_data: null,
    after_data: { id: entityId, version: 1, status: 'open', contact_id: 'c', title: `Demand ${entityId}` },
    actor_user_id: null,
  });
  return ingestEvent({ accountId, environment: 'live', def, data });
}

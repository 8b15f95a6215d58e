/** Endpoints a benchmark creates and verifies through the public API, as a tenant would. */
import type { AccountId } from '../src/core/ids.js';
import { issueApiKey } from '../src/db/api-keys.js';
import { createAccount, createCustomer } from '../src/db/directory.js';
import type { Db } from '../src/db/pool.js';
import { SCOPES } from '../src/security/api-key.js';
import type { ApiCall } from './api-client.js';
import type { ReceiverHandle } from './receiver-client.js';

/** Runs fn(0) … fn(count - 1), eight at a time. */
export async function eachOf(count: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(8, count) }, async () => {
      for (let i = next++; i < count; i = next++) await fn(i);
    }),
  );
}

/**
 * One endpoint per path on the bench receiver (for Customer `customerIds[i]` when given),
 * created, its secret handed to the receiver, then verified by a signed test; their ids in order.
 */
export async function createVerifiedEndpoints(
  api: ApiCall,
  key: string,
  receiver: Pick<ReceiverHandle, 'port' | 'secrets'>,
  urlPaths: string[],
  customerIds: readonly string[] = [],
): Promise<string[]> {
  const created: { id: string; path: string; secret: string }[] = [];
  await eachOf(urlPaths.length, async (i) => {
    const res = await api('POST', '/api/v1/webhooks', key, {
      url: `https://127.0.0.1:${receiver.port}${urlPaths[i]}`,
      events: ['crm'],
      ...(customerIds.length ? { customer_id: customerIds[i] } : {}),
    });
    if (res.status !== 201) throw new Error(`endpoint not created: ${res.status} ${JSON.stringify(res.body)}`);
    created[i] = { id: res.body.data.id, path: urlPaths[i]!, secret: res.body.data.secret };
  });
  receiver.secrets(Object.fromEntries(created.map((c) => [c.path, c.secret])));
  await eachOf(created.length, async (i) => {
    const res = await api('POST', `/api/v1/webhooks/${created[i]!.id}/test`, key);
    if (res.status !== 200) throw new Error(`endpoint not verified: ${res.status} ${JSON.stringify(res.body)}`);
  });
  return created.map((c) => c.id);
}

export interface BenchTenant {
  accountId: AccountId;
  key: string;
  /** One per endpoint, in order, with `perCustomer`; empty otherwise. */
  customerIds: string[];
  endpointIds: string[];
}

/**
 * An Account with a live key and `endpoints` endpoints at `/<pathPrefix>/<i>` on the bench
 * receiver, created and verified through the API; each for a Customer of its own with `perCustomer`.
 */
export async function createBenchTenant(
  db: Db,
  api: ApiCall,
  receiver: Pick<ReceiverHandle, 'port' | 'secrets'>,
  o: { name: string; endpoints: number; perCustomer: boolean; pathPrefix: string },
): Promise<BenchTenant> {
  const account = await createAccount(db, { name: o.name, ownerEmail: 'bench@example.com', plan: 'paid' });
  const { key } = await issueApiKey(db, { accountId: account.id, environment: 'live', scopes: [...SCOPES] });
  const customerIds: string[] = [];
  if (o.perCustomer)
    await eachOf(o.endpoints, async (i) => {
      customerIds[i] = (await createCustomer(db, { accountId: account.id, name: `customer ${i}` })).id;
    });
  const paths = Array.from({ length: o.endpoints }, (_, i) => `/${o.pathPrefix}/${i}`);
  const endpointIds = await createVerifiedEndpoints(api, key, receiver, paths, customerIds);
  return { accountId: account.id, key, customerIds, endpointIds };
}

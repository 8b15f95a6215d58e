/** Endpoints a benchmark creates and verifies through the public API, as a tenant would. */
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

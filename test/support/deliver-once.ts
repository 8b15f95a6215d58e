/** Runs one delivery session for an endpoint, as the worker runs it, and returns the POST the receiver got. */
import { expect } from 'vitest';
import { createAttemptRecorder } from '../../src/delivery/attempt-recorder.js';
import { runDeliverySession } from '../../src/delivery/delivery-session.js';
import { createSessionRegistry } from '../../src/delivery/session-registry.js';
import { testDb, type TestApi } from './harness.js';
import type { ReceivedRequest, Receiver } from './https-receiver.js';

/** The id of the endpoint's only delivery. */
export async function onlyDeliveryOf(endpointId: string): Promise<string> {
  const { rows } = await testDb().query<{ id: string }>(`SELECT id FROM deliveries WHERE endpoint_id = $1`, [endpointId]);
  expect(rows).toHaveLength(1);
  return rows[0]!.id;
}

export async function deliverOnce(api: TestApi, receiver: Receiver, endpointId: string, deliveryId: string): Promise<ReceivedRequest> {
  const round = await runDeliverySession(
    {
      db: testDb(),
      secretBox: api.deps.secretBox,
      httpClient: api.deps.httpClient,
      sessions: createSessionRegistry(),
      recorder: createAttemptRecorder(testDb()),
      concurrency: 1,
      lingerMs: 0,
      maxSessionMs: 10_000,
    },
    { endpointId, owner: `deliver-once/${deliveryId}`, clock: Date.now, limit: 1, signal: new AbortController().signal },
  );
  expect(round.outcomes).toMatchObject([{ ok: true, responseCode: 200 }]);
  const post = receiver.received.find((r) => r.headers['webhook-id'] === deliveryId);
  expect(post).toBeDefined();
  return post!;
}

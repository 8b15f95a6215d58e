/** A worker's warm-up sends synthetic deliveries to a loopback receiver of its own, and nowhere else. */
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createHttpClient } from '../../src/delivery/http-client.js';
import { warmUpSending } from '../../src/delivery/sending-warm-up.js';
import { webhookSends } from '../../src/runtime/metrics.js';
import { createDestinationPolicy } from '../../src/security/destination-policy.js';
import { createSecretBox } from '../../src/security/secret-box.js';

const secretBox = createSecretBox(crypto.randomBytes(32).toString('base64'));
const sendsCounted = async () => (await webhookSends.get()).values.reduce((sum, v) => sum + v.value, 0);

describe('warmUpSending', () => {
  it('POSTs every synthetic delivery, signed, to its loopback receiver, which acknowledges each; no metric counts them', async () => {
    const before = await sendsCounted();
    const report = await warmUpSending({ requests: 40, concurrency: 4, secretBox, timeoutMs: 5_000 });
    expect(report).toMatchObject({ requests: 40, acknowledged: 40 });
    expect(await sendsCounted()).toBe(before);
  });

  it('sends nothing and opens nothing when asked for no POSTs', async () => {
    expect(await warmUpSending({ requests: 0, concurrency: 16, secretBox, timeoutMs: 5_000 })).toEqual({
      requests: 0,
      acknowledged: 0,
      ms: 0,
    });
  });

  it("keeps its loopback exception to itself: a client on the worker's policy still refuses loopback after it", async () => {
    await warmUpSending({ requests: 8, concurrency: 2, secretBox, timeoutMs: 5_000 });
    const client = createHttpClient({ policy: createDestinationPolicy(), timeoutMs: 5_000 });
    try {
      const result = await client.post({ endpointId: 'e', url: 'http://127.0.0.1:9/' }, {}, Buffer.from('{}'));
      expect(result.error).toBe('blocked_destination');
    } finally {
      await client.close();
    }
  });
});

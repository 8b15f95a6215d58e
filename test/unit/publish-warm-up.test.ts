/** An API process's warm-up publishes to a loopback copy of the publish route that stores nothing. */
import { describe, expect, it } from 'vitest';
import { warmUpPublishing } from '../../src/api/publish-warm-up.js';
import { httpRequestDuration } from '../../src/runtime/metrics.js';

const requestsCounted = async () =>
  (await httpRequestDuration.get()).values.filter((v) => v.metricName?.endsWith('_count')).reduce((sum, v) => sum + v.value, 0);

describe('warmUpPublishing', () => {
  it("answers every synthetic publish 201 once the catalog's check passed it; no request metric counts them", async () => {
    const before = await requestsCounted();
    const report = await warmUpPublishing({ requests: 40, concurrency: 4 });
    expect(report).toMatchObject({ requests: 40, acknowledged: 40 });
    expect(await requestsCounted()).toBe(before);
  });

  it('publishes nothing and listens nowhere when asked for no requests', async () => {
    expect(await warmUpPublishing({ requests: 0, concurrency: 16 })).toEqual({ requests: 0, acknowledged: 0, ms: 0 });
  });
});

/**
 * One API process's rate limiter in a process of its own (test/integration/rate-limit-shared.test.ts):
 * once ready it says so and waits for the start time (epoch ms) from its parent; from then for
 * DURATION_MS, CONCURRENCY loops take tokens for KEY_ID, as requests would; then it sends back
 * what it was allowed.
 */
import { createRateLimiter } from '../../src/api/rate-limiter.js';
import { createPool } from '../../src/db/pool.js';

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const db = createPool(env('DATABASE_URL'), 4);
const limiter = createRateLimiter(db, { capacity: Number(env('CAPACITY')), refillPerSecond: Number(env('PER_SECOND')) });
const keyId = env('KEY_ID');
const startAt = await new Promise<number>((resolve) => {
  process.once('message', (m) => resolve(Number(m)));
  process.send!('ready');
});
const until = startAt + Number(env('DURATION_MS'));
let allowed = 0;
let refused = 0;

await new Promise((r) => setTimeout(r, Math.max(0, startAt - Date.now())));
await Promise.all(
  Array.from({ length: Number(env('CONCURRENCY')) }, async () => {
    while (Date.now() < until) {
      const verdict = await limiter.take(keyId);
      if (verdict.allowed) allowed++;
      else refused++;
      // About a request per millisecond per loop, not a spin.
      await new Promise((r) => setTimeout(r, 1));
    }
  }),
);
const endedAt = Date.now();
await limiter.close();
await db.end();
process.send!({ allowed, refused, statements: limiter.statements, endedAt });
process.disconnect();

/**
 * How a process runs its warm-up before it takes traffic (WARM_UP_REQUESTS: src/api/publish-warm-up.ts,
 * src/delivery/sending-warm-up.ts): one log line of what it did, and a failure only leaves it colder.
 */
import type { WarmUpReport } from '../core/warm-up-event.js';
import { logger } from './logger.js';

/** Warms `what` ("sending path") up with `run(requests)`; nothing when `requests` is 0. */
export async function warmUpLogged(what: string, requests: number, run: (requests: number) => Promise<WarmUpReport>): Promise<void> {
  if (requests === 0) return;
  try {
    logger.info(await run(requests), `${what} warmed up`);
  } catch (err) {
    logger.warn({ err }, `the ${what} was not warmed up; its first requests run colder`);
  }
}

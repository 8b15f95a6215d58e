/**
 * Coalesces "wake up" signals: many events for one endpoint within a short window become
 * one signal. Postgres is the queue; the signal only says "look".
 */
import { logger } from '../runtime/logger.js';
import type { EndpointWorkflows } from './client.js';

export interface WakeCoalescer {
  wake(endpointId: string, accountId: string): void;
  /** Sends what is queued now; resolves when sent. */
  flush(): Promise<void>;
}

export function createWakeCoalescer(workflows: Pick<EndpointWorkflows, 'wake'>, windowMs = 25): WakeCoalescer {
  let queued = new Map<string, string>();
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> = Promise.resolve();

  async function send(batch: Map<string, string>) {
    await Promise.all(
      [...batch].map(([endpointId, accountId]) =>
        // A lost wake is not a lost delivery: the row stays pending for the workflow's next look.
        workflows.wake(endpointId, accountId).catch((err) => logger.warn({ err, endpointId }, 'wake signal failed')),
      ),
    );
  }

  function flush(): Promise<void> {
    if (timer) clearTimeout(timer);
    timer = undefined;
    const batch = queued;
    queued = new Map();
    inFlight = inFlight.then(() => send(batch));
    return inFlight;
  }

  return {
    wake(endpointId, accountId) {
      queued.set(endpointId, accountId);
      timer ??= setTimeout(() => void flush(), windowMs);
    },
    flush,
  };
}

/**
 * The worker's fair-share gate in front of its HTTP pool: a POST of an endpoint starts once the
 * endpoint's share of the URL's origin allows it (src/core/fair-share.ts), one queue per origin.
 * Waiting here is no attempt: the request timeout starts when the slot is granted.
 */
import { FairShareQueue, type PostTicket, type Started } from '../core/fair-share.js';

export interface Slot {
  /** The origin this slot counts against (`new URL(url).origin`). */
  readonly origin: string;
  /** The slot was not free when asked for: what the caller read before waiting may be stale. */
  readonly waited: boolean;
  /** How long the caller waited for it (0 when it was free). */
  readonly waitedMs: number;
  /** Gives the slot back (to the next POST on the next turn of the event loop); later calls do nothing. */
  release(): void;
}

export interface OriginSlots {
  /** Waits for a slot of `endpointId` on the URL's origin; null when `signal` aborts first. */
  take(endpointId: string, url: string, signal?: AbortSignal): Promise<Slot | null>;
  /** A connection to `origin` began (+1) or ended (-1) opening: nobody passes its cap meanwhile (src/core/fair-share.ts). */
  connecting(origin: string, delta: 1 | -1): void;
  /** POSTs in flight and endpoints active, per origin (for metrics and tests). */
  usage(): Map<string, { running: number; active: number }>;
}

export function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

export function createOriginSlots(capPerOrigin: number): OriginSlots {
  const origins = new Map<string, FairShareQueue<(ticket: PostTicket) => void>>();
  /** Per origin with waiters, the timer for when a POST in flight turns slow (`FairShareQueue.pass`). */
  const passTimers = new Map<string, { at: number; timer: NodeJS.Timeout }>();

  function starting(
    origin: string,
    queue: FairShareQueue<(ticket: PostTicket) => void>,
    started: Started<(ticket: PostTicket) => void>[],
  ): void {
    if (queue.idle) origins.delete(origin);
    for (const s of started) s.waiter(s.ticket);
    armPass(origin, queue);
  }

  /** Asks the queue again when its oldest young POST turns slow, while endpoints wait. */
  function armPass(origin: string, queue: FairShareQueue<(ticket: PostTicket) => void>): void {
    const at = queue.nextPassAt;
    const armed = passTimers.get(origin);
    if (armed && armed.at === at) return;
    if (armed) clearTimeout(armed.timer);
    passTimers.delete(origin);
    if (at === null) return;
    const timer = setTimeout(
      () => {
        passTimers.delete(origin);
        starting(origin, queue, queue.pass(performance.now()));
      },
      Math.max(0, at - performance.now()) + 1,
    ).unref();
    passTimers.set(origin, { at, timer });
  }

  function slot(origin: string, endpointId: string, ticket: PostTicket, askedAt: number | null): Slot {
    let released = false;
    return {
      origin,
      waited: askedAt !== null,
      waitedMs: askedAt === null ? 0 : performance.now() - askedAt,
      release() {
        if (released) return;
        released = true;
        // Handed on once the HTTP pool has the POST's connection back, after its response's last
        // callbacks: handed on at once, the next POST found that connection busy and opened another
        // (the cold phase of `npm run bench -- --peer` opened 31 connections for a cap of 16).
        setImmediate(() => {
          const queue = origins.get(origin)!;
          starting(origin, queue, queue.release(endpointId, ticket, performance.now()));
        });
      },
    };
  }

  return {
    take(endpointId, url, signal) {
      const origin = originOf(url);
      if (signal?.aborted) return Promise.resolve(null);
      let queue = origins.get(origin);
      if (!queue) origins.set(origin, (queue = new FairShareQueue(capPerOrigin)));
      const askedAt = performance.now();
      return new Promise<Slot | null>((resolve) => {
        const onAbort = () => {
          if (queue.cancel(endpointId, granted)) resolve(null);
          if (queue.idle) origins.delete(origin);
          armPass(origin, queue);
        };
        function granted(ticket: PostTicket) {
          signal?.removeEventListener('abort', onAbort);
          resolve(slot(origin, endpointId, ticket, askedAt));
        }
        const ticket = queue.request(endpointId, granted, askedAt);
        if (ticket) return resolve(slot(origin, endpointId, ticket, null));
        signal?.addEventListener('abort', onAbort, { once: true });
        armPass(origin, queue);
      });
    },
    connecting(origin, delta) {
      const queue = origins.get(origin);
      if (queue) starting(origin, queue, queue.connecting(delta, performance.now()));
    },
    usage: () => new Map([...origins].map(([origin, q]) => [origin, { running: q.running, active: q.active }])),
  };
}

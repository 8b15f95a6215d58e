/**
 * Why a delivery session stops, and the waits a stop cuts short. The first reason wins (but a cut
 * after `idle` wins over it); stopping wakes the claims waiting for work (through the session's
 * registry entry). Every reason but `idle` also cuts short the lanes waiting for the endpoint's
 * throttle or for a share of its origin's connections (`signal`): their deliveries stay unsent and
 * are released. `idle` only means nothing more is due: a lane holding a delivery still sends it.
 */
import { setMaxListeners } from 'node:events';
import type { Session } from './session-registry.js';

/** `lease_lost`: the endpoint's lease may be another session's now (`HeldSession.current`). */
export type StopReason = 'failure' | 'not_sending' | 'idle' | 'time' | 'cancelled' | 'error' | 'lease_lost';

export class SessionStopping {
  private why: StopReason | null = null;
  private cut = false;
  private readonly pauses = new Set<() => void>();
  private readonly aborts = new AbortController();

  constructor(private readonly news: Session) {
    // Every lane waiting for a share of a busy origin listens: as many as the session's lanes.
    setMaxListeners(0, this.aborts.signal);
  }

  get reason(): StopReason | null {
    return this.why;
  }

  get stopped(): boolean {
    return this.why !== null;
  }

  /** Stopped for a reason that leaves the deliveries lanes hold unsent (any but `idle`, even after it). */
  get cutShort(): boolean {
    return this.cut;
  }

  /** Aborted when the session is cut short. */
  get signal(): AbortSignal {
    return this.aborts.signal;
  }

  halt(reason: StopReason): void {
    // A cut after `idle` (the session's time, a failure of a POST still in hand) is the one reported.
    if (this.why === null || (this.why === 'idle' && reason !== 'idle')) this.why = reason;
    this.news.interrupt();
    if (reason === 'idle') return;
    this.cut = true;
    for (const resume of [...this.pauses]) resume();
    this.aborts.abort();
  }

  /** Waits `ms`, or less when the session stops meanwhile. */
  pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      const pauses = this.pauses;
      function done() {
        clearTimeout(timer);
        pauses.delete(done);
        resolve();
      }
      pauses.add(done);
    });
  }
}

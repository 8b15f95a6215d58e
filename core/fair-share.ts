/**
 * Fair shares of one origin's connections among the endpoints that POST to it (many tenants'
 * receivers sit on the same automation or script-hosting hosts). The worker allows an origin
 * `cap` POSTs in flight; each endpoint active on it (in flight or waiting) may hold at most its
 * fair share, `max(1, floor(cap / active))`, and endpoints that wait are served round-robin, so
 * the origin is no first-come first-served queue that one tenant's slow receiver can fill.
 *
 * An endpoint with nothing in flight may always start one POST, even with the origin at its cap:
 * otherwise, once `cap` slow endpoints hold the origin, a fast one waits for a slow receiver to
 * answer. So the cap can be exceeded, by at most one POST per active endpoint (only a POST of an
 * endpoint with none in flight starts past it), and the HTTP pool must allow that many.
 *
 * Pure and synchronous: the caller keeps the waiters (`T`) and starts those it is handed.
 */

/** The most POSTs one endpoint may have in flight to an origin while `active` endpoints use it. */
export function fairShare(cap: number, active: number): number {
  return Math.max(1, Math.floor(cap / Math.max(1, active)));
}

/** Whether one more POST of an endpoint may start now. */
export function mayStart(s: { cap: number; originInFlight: number; endpointInFlight: number; active: number }): boolean {
  if (s.endpointInFlight === 0) return true;
  return s.originInFlight < s.cap && s.endpointInFlight < fairShare(s.cap, s.active);
}

/** One origin's POSTs in flight and waiters, by endpoint. */
export class FairShareQueue<T> {
  private readonly inFlight = new Map<string, number>();
  /** Endpoints with waiters, in round-robin order: one served goes to the back. */
  private readonly waiting = new Map<string, T[]>();
  private total = 0;

  constructor(private readonly cap: number) {}

  /** POSTs in flight to the origin. */
  get running(): number {
    return this.total;
  }

  /** Endpoints in flight or waiting. */
  get active(): number {
    let n = this.inFlight.size;
    for (const id of this.waiting.keys()) if (!this.inFlight.has(id)) n++;
    return n;
  }

  /** Nothing in flight, nobody waiting: the origin's queue can be dropped. */
  get idle(): boolean {
    return this.total === 0 && this.waiting.size === 0;
  }

  /** True when the POST may start now (it is counted in flight); false when `waiter` waits its turn. */
  request(endpointId: string, waiter: T): boolean {
    const queued = this.waiting.get(endpointId);
    const known = this.inFlight.has(endpointId) || queued !== undefined;
    // Behind its own waiters: an endpoint's POSTs start in the order they asked.
    if (!queued && this.allowed(endpointId, known ? this.active : this.active + 1)) {
      this.start(endpointId);
      return true;
    }
    if (queued) queued.push(waiter);
    else this.waiting.set(endpointId, [waiter]);
    return false;
  }

  /** A waiter gives up (its session stopped); false when it had already been started. */
  cancel(endpointId: string, waiter: T): boolean {
    const queued = this.waiting.get(endpointId);
    const at = queued?.indexOf(waiter) ?? -1;
    if (at < 0) return false;
    queued!.splice(at, 1);
    if (queued!.length === 0) this.waiting.delete(endpointId);
    return true;
  }

  /** A POST ended: the waiters that may start now, in round-robin order (already counted in flight). */
  release(endpointId: string): T[] {
    const n = this.inFlight.get(endpointId) ?? 0;
    if (n <= 0) throw new Error(`no POST of endpoint ${endpointId} in flight`);
    if (n === 1) this.inFlight.delete(endpointId);
    else this.inFlight.set(endpointId, n - 1);
    this.total--;
    const started: T[] = [];
    for (let id = this.nextAllowed(); id !== undefined; id = this.nextAllowed()) {
      const queued = this.waiting.get(id)!;
      started.push(queued.shift()!);
      this.waiting.delete(id);
      if (queued.length) this.waiting.set(id, queued);
      this.start(id);
    }
    return started;
  }

  private allowed(endpointId: string, active: number): boolean {
    return mayStart({ cap: this.cap, originInFlight: this.total, endpointInFlight: this.inFlight.get(endpointId) ?? 0, active });
  }

  /** The first waiting endpoint, in round-robin order, that may start a POST now. */
  private nextAllowed(): string | undefined {
    const active = this.active;
    for (const id of this.waiting.keys()) if (this.allowed(id, active)) return id;
    return undefined;
  }

  private start(endpointId: string): void {
    this.inFlight.set(endpointId, (this.inFlight.get(endpointId) ?? 0) + 1);
    this.total++;
  }
}

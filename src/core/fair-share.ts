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

interface EndpointTurns<T> {
  inFlight: number;
  waiters: T[];
}

/**
 * One origin's POSTs in flight and waiters, by endpoint. Only an endpoint with nothing in flight
 * can ever wait with the origin at its cap or at a share of one, and only the one whose POST just
 * ended can have reached nothing in flight: so at most `cap / 2` endpoints are looked at per grant,
 * however many share the origin.
 */
export class FairShareQueue<T> {
  /** The active endpoints: a POST in flight or waiting. */
  private readonly endpoints = new Map<string, EndpointTurns<T>>();
  /** Endpoints with waiters, in round-robin order: one served goes to the back. */
  private readonly turns = new Map<string, EndpointTurns<T>>();
  private total = 0;

  constructor(private readonly cap: number) {}

  /** POSTs in flight to the origin. */
  get running(): number {
    return this.total;
  }

  /** Endpoints in flight or waiting. */
  get active(): number {
    return this.endpoints.size;
  }

  /** Nothing in flight, nobody waiting: the origin's queue can be dropped. */
  get idle(): boolean {
    return this.endpoints.size === 0;
  }

  /** True when the POST may start now (it is counted in flight); false when `waiter` waits its turn. */
  request(endpointId: string, waiter: T): boolean {
    let e = this.endpoints.get(endpointId);
    if (!e) this.endpoints.set(endpointId, (e = { inFlight: 0, waiters: [] }));
    // Behind its own waiters: an endpoint's POSTs start in the order they asked.
    if (e.waiters.length === 0 && this.allowed(e)) {
      this.start(e);
      return true;
    }
    e.waiters.push(waiter);
    if (!this.turns.has(endpointId)) this.turns.set(endpointId, e);
    return false;
  }

  /** A waiter gives up (its session stopped); false when it had already been started. */
  cancel(endpointId: string, waiter: T): boolean {
    const e = this.endpoints.get(endpointId);
    const at = e?.waiters.indexOf(waiter) ?? -1;
    if (at < 0) return false;
    e!.waiters.splice(at, 1);
    if (e!.waiters.length === 0) this.turns.delete(endpointId);
    if (e!.inFlight === 0 && e!.waiters.length === 0) this.endpoints.delete(endpointId);
    return true;
  }

  /** A POST ended: the waiters that may start now, in round-robin order (already counted in flight). */
  release(endpointId: string): T[] {
    const e = this.endpoints.get(endpointId);
    if (!e || e.inFlight <= 0) throw new Error(`no POST of endpoint ${endpointId} in flight`);
    e.inFlight--;
    this.total--;
    if (e.inFlight === 0 && e.waiters.length === 0) this.endpoints.delete(endpointId);
    const started: T[] = [];
    for (let id = this.nextAllowed(endpointId); id !== undefined; id = this.nextAllowed(endpointId)) {
      const next = this.turns.get(id)!;
      started.push(next.waiters.shift()!);
      this.turns.delete(id);
      if (next.waiters.length) this.turns.set(id, next);
      this.start(next);
    }
    return started;
  }

  private allowed(e: EndpointTurns<T>): boolean {
    return mayStart({ cap: this.cap, originInFlight: this.total, endpointInFlight: e.inFlight, active: this.endpoints.size });
  }

  /** The first waiting endpoint, in round-robin order, that may start a POST now. */
  private nextAllowed(released: string): string | undefined {
    if (this.total >= this.cap || fairShare(this.cap, this.endpoints.size) === 1) {
      // Every other waiting endpoint has a POST in flight, and may start no more.
      const e = this.turns.get(released);
      return e && this.allowed(e) ? released : undefined;
    }
    for (const [id, e] of this.turns) if (this.allowed(e)) return id;
    return undefined;
  }

  private start(e: EndpointTurns<T>): void {
    e.inFlight++;
    this.total++;
  }
}

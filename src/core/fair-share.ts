/**
 * Fair shares of one origin's connections among the endpoints that POST to it (many tenants'
 * receivers sit on the same automation or script-hosting hosts). The worker allows an origin
 * `cap` POSTs in flight; each endpoint active on it (in flight or waiting) may hold at most its
 * fair share, `max(1, floor(cap / active))`, and endpoints that wait are served round-robin, so
 * the origin is no first-come first-served queue that one tenant's slow receiver can fill.
 *
 * An endpoint with nothing in flight may start one POST past the cap while POSTs that have run
 * SLOW_POST_MS or longer hold the origin: otherwise, once `cap` slow endpoints hold it, a fast one
 * waits for a slow receiver to answer. So the cap can be exceeded, by at most one POST per active
 * endpoint, and the HTTP pool must allow that many. While the POSTs in flight are young, a newcomer
 * waits its turn instead: the origin's connections free up within moments, where a hundred
 * endpoints starting together each opened a connection of their own (84 TLS handshakes to one
 * receiver in a benchmark phase, against 0–9 for the peer, whose pool kept its connections).
 *
 * Pure and synchronous, on the caller's clock: the caller keeps the waiters (`T`), starts those it
 * is handed, and asks again (`pass`) at `nextPassAt`, when a POST in flight turns slow.
 */

/** How long a POST runs before it no longer keeps an endpoint with nothing in flight from passing the cap. */
export const SLOW_POST_MS = 100;

/**
 * A worker's cap of POSTs in flight per origin: twice a session's 16 lanes, so a lane's next POST
 * need not wait the turn its last one takes to hand its slot back, and a burst over many endpoints
 * (a group commit's worth) seldom waits for a slot. Newcomers wait for these instead of opening a
 * connection each (docs/delivery.md, "Endpoints that share an origin").
 */
export const ORIGIN_CAP = 32;

/** The most POSTs one endpoint may have in flight to an origin while `active` endpoints use it. */
export function fairShare(cap: number, active: number): number {
  return Math.max(1, Math.floor(cap / Math.max(1, active)));
}

/**
 * Whether one more POST of an endpoint may start now. `recentInFlight`: the origin's POSTs in
 * flight that started less than SLOW_POST_MS ago. `opening`: connections to the origin being
 * opened now; while one is, nobody passes the cap: a POST slow with its handshake is no slow
 * receiver, and each pass opens one more (32–62 connections in a benchmark's first contact).
 */
export function mayStart(s: {
  cap: number;
  originInFlight: number;
  recentInFlight: number;
  endpointInFlight: number;
  active: number;
  opening?: number;
}): boolean {
  if (s.endpointInFlight === 0) return s.originInFlight < s.cap || (s.recentInFlight < s.cap && !s.opening);
  return s.originInFlight < s.cap && s.endpointInFlight < fairShare(s.cap, s.active);
}

/** One POST in flight, which its release names. */
export interface PostTicket {
  readonly startedAt: number;
}

interface Ticket extends PostTicket {
  ended: boolean;
  slow: boolean;
}

interface EndpointTurns<T> {
  inFlight: number;
  waiters: T[];
}

/** A waiter handed a start, with the ticket its release names. */
export interface Started<T> {
  waiter: T;
  ticket: PostTicket;
}

/**
 * One origin's POSTs in flight and waiters, by endpoint. A grant looks at the waiting endpoints in
 * round-robin order and stops at the first that may start; those it passes over have POSTs in
 * flight, so it looks at no more endpoints than there are POSTs in flight, however many wait.
 */
export class FairShareQueue<T> {
  /** The active endpoints: a POST in flight or waiting. */
  private readonly endpoints = new Map<string, EndpointTurns<T>>();
  /** Endpoints with waiters, in round-robin order: one served goes to the back. */
  private readonly turns = new Map<string, EndpointTurns<T>>();
  /** POSTs in flight not yet slow, in the order they started (ended ones dropped as they reach the front). */
  private young: Ticket[] = [];
  private total = 0;
  private slow = 0;
  private opening = 0;

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

  /** When a POST in flight turns slow, which may let a waiting endpoint start (`pass`); null when nobody waits or none will. */
  get nextPassAt(): number | null {
    if (this.turns.size === 0) return null;
    const next = this.young.find((t) => !t.ended);
    return next ? next.startedAt + SLOW_POST_MS : null;
  }

  /** The POST's ticket when it may start now (it is counted in flight); null when `waiter` waits its turn. */
  request(endpointId: string, waiter: T, nowMs: number): PostTicket | null {
    let e = this.endpoints.get(endpointId);
    if (!e) this.endpoints.set(endpointId, (e = { inFlight: 0, waiters: [] }));
    this.age(nowMs);
    // Behind its own waiters: an endpoint's POSTs start in the order they asked.
    if (e.waiters.length === 0 && this.allowed(e)) return this.start(e, nowMs);
    e.waiters.push(waiter);
    if (!this.turns.has(endpointId)) this.turns.set(endpointId, e);
    return null;
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

  /** A connection to the origin began (+1) or ended (-1) opening: the waiters that may start now. */
  connecting(delta: 1 | -1, nowMs: number): Started<T>[] {
    this.opening = Math.max(0, this.opening + delta);
    return this.pass(nowMs);
  }

  /** A POST ended: the waiters that may start now, in round-robin order (already counted in flight). */
  release(endpointId: string, ticket: PostTicket, nowMs: number): Started<T>[] {
    const e = this.endpoints.get(endpointId);
    const t = ticket as Ticket;
    if (!e || e.inFlight <= 0 || t.ended) throw new Error(`no such POST of endpoint ${endpointId} in flight`);
    t.ended = true;
    if (t.slow) this.slow--;
    e.inFlight--;
    this.total--;
    if (e.inFlight === 0 && e.waiters.length === 0) this.endpoints.delete(endpointId);
    return this.pass(nowMs);
  }

  /** The waiters that may start now (POSTs in flight having turned slow since), in round-robin order. */
  pass(nowMs: number): Started<T>[] {
    this.age(nowMs);
    const started: Started<T>[] = [];
    for (let id = this.nextAllowed(); id !== undefined; id = this.nextAllowed()) {
      const next = this.turns.get(id)!;
      const waiter = next.waiters.shift()!;
      this.turns.delete(id);
      if (next.waiters.length) this.turns.set(id, next);
      started.push({ waiter, ticket: this.start(next, nowMs) });
    }
    return started;
  }

  private allowed(e: EndpointTurns<T>): boolean {
    return mayStart({
      cap: this.cap,
      originInFlight: this.total,
      recentInFlight: this.total - this.slow,
      endpointInFlight: e.inFlight,
      active: this.endpoints.size,
      opening: this.opening,
    });
  }

  /** The first waiting endpoint, in round-robin order, that may start a POST now. */
  private nextAllowed(): string | undefined {
    // Young POSTs fill the cap: nobody may start, not even an endpoint with nothing in flight.
    if (this.total - this.slow >= this.cap) return undefined;
    for (const [id, e] of this.turns) if (this.allowed(e)) return id;
    return undefined;
  }

  /** Counts the POSTs in flight SLOW_POST_MS or longer as slow. */
  private age(nowMs: number): void {
    let n = 0;
    for (; n < this.young.length; n++) {
      const t = this.young[n]!;
      if (!t.ended && nowMs - t.startedAt < SLOW_POST_MS) break;
      if (!t.ended) {
        t.slow = true;
        this.slow++;
      }
    }
    if (n > 0) this.young = this.young.slice(n);
  }

  private start(e: EndpointTurns<T>, nowMs: number): Ticket {
    e.inFlight++;
    this.total++;
    const ticket: Ticket = { startedAt: nowMs, ended: false, slow: false };
    this.young.push(ticket);
    return ticket;
  }
}

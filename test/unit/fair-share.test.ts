import { describe, expect, it } from 'vitest';
import { fairShare, FairShareQueue, mayStart, SLOW_POST_MS, type PostTicket, type Started } from '../../src/core/fair-share.js';
import { createOriginSlots } from '../../src/delivery/origin-slots.js';

describe('fair share of an origin', () => {
  it('is the cap split among the active endpoints, never less than one', () => {
    expect(fairShare(16, 1)).toBe(16);
    expect(fairShare(16, 2)).toBe(8);
    expect(fairShare(16, 3)).toBe(5);
    expect(fairShare(16, 16)).toBe(1);
    expect(fairShare(16, 21)).toBe(1);
    expect(fairShare(16, 0)).toBe(16);
  });

  it('lets an endpoint with nothing in flight past the cap only while slow POSTs hold it, and no other past it or past its share', () => {
    expect(mayStart({ cap: 16, originInFlight: 40, recentInFlight: 3, endpointInFlight: 0, active: 21 })).toBe(true);
    expect(mayStart({ cap: 16, originInFlight: 16, recentInFlight: 16, endpointInFlight: 0, active: 21 })).toBe(false);
    expect(mayStart({ cap: 16, originInFlight: 16, recentInFlight: 0, endpointInFlight: 1, active: 2 })).toBe(false);
    expect(mayStart({ cap: 16, originInFlight: 10, recentInFlight: 10, endpointInFlight: 7, active: 2 })).toBe(true);
    expect(mayStart({ cap: 16, originInFlight: 10, recentInFlight: 10, endpointInFlight: 8, active: 2 })).toBe(false);
    expect(mayStart({ cap: 16, originInFlight: 3, recentInFlight: 3, endpointInFlight: 1, active: 21 })).toBe(false);
  });

  it('lets nobody past the cap while a connection to the origin is being opened, and a newcomer under it still', () => {
    expect(mayStart({ cap: 16, originInFlight: 40, recentInFlight: 3, endpointInFlight: 0, active: 21, opening: 1 })).toBe(false);
    expect(mayStart({ cap: 16, originInFlight: 10, recentInFlight: 10, endpointInFlight: 0, active: 5, opening: 1 })).toBe(true);
  });
});

/** A queue on a clock the test moves, its POSTs in flight kept per endpoint (oldest released first). */
function queueOf(cap: number) {
  const q = new FairShareQueue<string>(cap);
  const tickets = new Map<string, PostTicket[]>();
  const hold = (id: string, t: PostTicket) => tickets.set(id, [...(tickets.get(id) ?? []), t]);
  const keep = (started: Started<string>[]) => started.map((s) => (hold(s.waiter.split(':')[0]!, s.ticket), s.waiter));
  let now = 0;
  return {
    q,
    tick: (ms: number) => (now += ms),
    /** Asks for a POST of `id`, named `id:name`; true when it started. */
    ask(id: string, name: string): boolean {
      const t = q.request(id, `${id}:${name}`, now);
      if (t) hold(id, t);
      return t !== null;
    },
    /** Ends the oldest POST of `id` in flight: the names of the POSTs that start. */
    end(id: string): string[] {
      const t = tickets.get(id)!.shift()!;
      return keep(q.release(id, t, now)).map((n) => n.split(':')[1]!);
    },
    pass: () => keep(q.pass(now)).map((n) => n.split(':')[1]!),
  };
}

describe('FairShareQueue', () => {
  it('keeps a newcomer from passing the cap while a connection is being opened, and passes it once that ends', () => {
    const o = queueOf(4);
    for (let n = 0; n < 4; n++) o.ask('slow', `s${n}`);
    expect(o.q.connecting(1, 0)).toEqual([]);
    expect(o.ask('b', 'b1')).toBe(false);
    o.tick(SLOW_POST_MS);
    // Slow POSTs hold the origin, but one of them is still opening its connection: no pass.
    expect(o.pass()).toEqual([]);
    expect(o.q.connecting(-1, SLOW_POST_MS).map((s) => s.waiter)).toEqual(['b:b1']);
  });

  it('gives an endpoint alone the whole cap, then makes it wait', () => {
    const o = queueOf(4);
    expect([1, 2, 3, 4].map((n) => o.ask('a', `a${n}`))).toEqual([true, true, true, true]);
    expect(o.ask('a', 'a5')).toBe(false);
    expect(o.q.running).toBe(4);
    expect(o.end('a')).toEqual(['a5']);
    expect(o.q.running).toBe(4);
  });

  it('keeps a newcomer waiting its turn while young POSTs fill the cap, and starts it at once in the slot one gives back', () => {
    const o = queueOf(4);
    for (let n = 0; n < 4; n++) o.ask('busy', `s${n}`);
    expect(o.ask('b', 'b1')).toBe(false);
    expect(o.q.nextPassAt).toBe(SLOW_POST_MS);
    o.tick(5);
    expect(o.end('busy')).toEqual(['b1']);
    expect(o.q.running).toBe(4);
  });

  it('starts a newcomer with nothing in flight past the cap once the POSTs holding it are slow: by one per active endpoint at most', () => {
    const o = queueOf(4);
    for (let n = 0; n < 4; n++) o.ask('slow', `s${n}`);
    expect(o.ask('b', 'b1')).toBe(false);
    o.tick(SLOW_POST_MS - 1);
    expect(o.pass()).toEqual([]);
    o.tick(1);
    // The slow receiver's POSTs have run SLOW_POST_MS: the waiting newcomer passes, and later ones at once.
    expect(o.pass()).toEqual(['b1']);
    for (const id of ['c', 'd']) expect(o.ask(id, `${id}1`)).toBe(true);
    expect(o.q.running).toBe(7);
    expect(o.q.active).toBe(4);
    // A second POST of a newcomer waits: the origin is over its cap.
    expect(o.ask('b', 'b2')).toBe(false);
    expect(o.q.running).toBeLessThanOrEqual(4 + o.q.active);
    expect(o.q.nextPassAt).toBe(SLOW_POST_MS * 2);
  });

  it('serves waiting endpoints round-robin, not in the order their POSTs came', () => {
    const o = queueOf(2);
    // `a` queues 6 POSTs before `b` asks for any: a first-come first-served pool would run all of a's first.
    for (let n = 1; n <= 6; n++) o.ask('a', `a${n}`);
    for (let n = 1; n <= 6; n++) o.ask('b', `b${n}`);
    // a1, a2 run (a alone then); from then on each holds its share (one) and they take turns.
    const order: string[] = [];
    const inFlight = ['a', 'a'];
    while (inFlight.length) {
      for (const s of o.end(inFlight.shift()!)) {
        order.push(s);
        inFlight.push(s[0]!);
      }
    }
    expect(order).toEqual(['b1', 'a3', 'b2', 'a4', 'b3', 'a5', 'b4', 'a6', 'b5', 'b6']);
    expect(o.q.idle).toBe(true);
  });

  it('holds an endpoint to its share once others are active, whatever it held before', () => {
    const o = queueOf(4);
    for (let n = 1; n <= 8; n++) o.ask('a', `a${n}`);
    for (let n = 1; n <= 4; n++) o.ask('b', `b${n}`);
    // a holds 4, b waits. As a's POSTs end, its share is 2: b's turns come until it holds as many.
    expect(o.end('a')).toEqual(['b1']);
    expect(o.end('a')).toEqual(['b2']);
    expect(o.end('a')).toEqual(['a5']);
    expect(o.end('a')).toEqual(['a6']);
    expect(o.end('b')).toEqual(['b3']);
  });

  it('drops a cancelled waiter and refuses to release what is not in flight', () => {
    const o = queueOf(1);
    o.ask('a', 'a1');
    o.ask('a', 'a2');
    expect(o.q.cancel('a', 'a:a2')).toBe(true);
    expect(o.q.cancel('a', 'a:a2')).toBe(false);
    expect(o.end('a')).toEqual([]);
    expect(o.q.idle).toBe(true);
    expect(() => o.q.release('a', { startedAt: 0 }, 0)).toThrow(/no such POST/);
  });
});

describe('FairShareQueue under random load', () => {
  it('never keeps a waiter that may start, passes the cap only for endpoints with nothing in flight while slow POSTs hold it, and serves everyone', () => {
    // A seeded generator: the same run every time.
    let seed = 42;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const cap = 16;
    const q = new FairShareQueue<{ id: string }>(cap);
    const inFlight = new Map<string, number>();
    const waiting = new Map<string, number>();
    const running: { id: string; ticket: PostTicket }[] = [];
    const add = (m: Map<string, number>, id: string, d: number) => {
      const n = (m.get(id) ?? 0) + d;
      if (n) m.set(id, n);
      else m.delete(id);
    };
    let now = 0;
    let servedFromWaits = 0;
    let passedCap = 0;
    const broken: string[] = [];
    const started = (s: Started<{ id: string }>) => {
      if (running.length >= cap) passedCap++;
      if (running.length >= cap && (inFlight.get(s.waiter.id) ?? 0) > 0)
        broken.push(`${now}: ${s.waiter.id} passed the cap with POSTs in flight`);
      add(waiting, s.waiter.id, -1);
      add(inFlight, s.waiter.id, 1);
      running.push({ id: s.waiter.id, ticket: s.ticket });
      servedFromWaits++;
    };
    for (let step = 0; step < 20_000; step++) {
      now += random() < 0.1 ? 40 : 1;
      // Few endpoints at first (shares of several), then many (shares of one).
      const endpoints = step < 5_000 ? 3 : 60;
      if (random() < 0.55 || running.length === 0) {
        const id = `e${Math.floor(random() * endpoints)}`;
        const before = inFlight.get(id) ?? 0;
        const ticket = q.request(id, { id }, now);
        if (ticket) {
          if (running.length >= cap && before > 0) broken.push(`${step}: ${id} passed the cap with ${before} in flight`);
          add(inFlight, id, 1);
          running.push({ id, ticket });
        } else add(waiting, id, 1);
      } else {
        // The oldest POSTs end later than the young (a slow receiver beside fast ones).
        const at =
          random() < 0.7 ? running.length - 1 - Math.floor(random() * Math.min(4, running.length)) : Math.floor(random() * running.length);
        const { id, ticket } = running.splice(at, 1)[0]!;
        add(inFlight, id, -1);
        q.release(id, ticket, now).forEach(started);
      }
      if (q.nextPassAt !== null && q.nextPassAt <= now) q.pass(now).forEach(started);
      const active = new Set([...inFlight.keys(), ...waiting.keys()]).size;
      const recent = running.filter((r) => now - r.ticket.startedAt < SLOW_POST_MS).length;
      if (q.running !== running.length || q.active !== active) broken.push(`${step}: counts ${q.running}/${q.active}`);
      if (q.running > cap + active) broken.push(`${step}: ${q.running} in flight`);
      for (const id of waiting.keys())
        if (mayStart({ cap, originInFlight: q.running, recentInFlight: recent, endpointInFlight: inFlight.get(id) ?? 0, active }))
          broken.push(`${step}: ${id} kept waiting`);
    }
    expect(broken.slice(0, 5)).toEqual([]);
    expect(servedFromWaits).toBeGreaterThan(1_000);
    expect(passedCap).toBeGreaterThan(10);
  });
});

describe('origin slots', () => {
  /** A slot is handed on after the HTTP pool has its connection back: on the next turn of the event loop. */
  const nextTurn = () => new Promise((r) => setImmediate(r));

  it('keep one queue per origin: a busy origin does not hold back another', async () => {
    const slots = createOriginSlots(1);
    const busy = await slots.take('a', 'https://hooks.example/a');
    const second = slots.take('a', 'https://hooks.example/a2');
    const other = await slots.take('a', 'https://other.example/a');
    expect(other).toMatchObject({ origin: 'https://other.example', waited: false, waitedMs: 0 });
    await new Promise((r) => setTimeout(r, 20));
    busy!.release();
    const granted = await second;
    expect(granted).toMatchObject({ origin: 'https://hooks.example', waited: true });
    expect(granted!.waitedMs).toBeGreaterThanOrEqual(15);
  });

  it('start a waiting endpoint with nothing in flight past the cap once the POST holding the origin has run SLOW_POST_MS, none given back', async () => {
    const slots = createOriginSlots(1);
    const slow = await slots.take('slow', 'https://hooks.example/slow');
    // Granted while the slow POST is still held (without the pass, this wait never ends).
    const fast = await slots.take('fast', 'https://hooks.example/fast');
    expect(fast!.waited).toBe(true);
    expect(fast!.waitedMs).toBeGreaterThanOrEqual(SLOW_POST_MS - 5);
    expect(slots.usage().get('https://hooks.example')).toEqual({ running: 2, active: 2 });
    slow!.release();
    fast!.release();
    await nextTurn();
    expect(slots.usage().size).toBe(0);
  });

  it('give up a wait when the signal aborts, and forget an idle origin', async () => {
    const slots = createOriginSlots(1);
    const held = await slots.take('a', 'https://hooks.example/a');
    const stop = new AbortController();
    const waiting = slots.take('a', 'https://hooks.example/a', stop.signal);
    stop.abort();
    expect(await waiting).toBeNull();
    held!.release();
    held!.release();
    await nextTurn();
    expect(slots.usage().size).toBe(0);
  });
});

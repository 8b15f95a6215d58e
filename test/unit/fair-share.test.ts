import { describe, expect, it } from 'vitest';
import { fairShare, FairShareQueue, mayStart } from '../../src/core/fair-share.js';
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

  it('lets an endpoint with nothing in flight start even at the cap, and no other past it or past its share', () => {
    expect(mayStart({ cap: 16, originInFlight: 40, endpointInFlight: 0, active: 21 })).toBe(true);
    expect(mayStart({ cap: 16, originInFlight: 16, endpointInFlight: 1, active: 2 })).toBe(false);
    expect(mayStart({ cap: 16, originInFlight: 10, endpointInFlight: 7, active: 2 })).toBe(true);
    expect(mayStart({ cap: 16, originInFlight: 10, endpointInFlight: 8, active: 2 })).toBe(false);
    expect(mayStart({ cap: 16, originInFlight: 3, endpointInFlight: 1, active: 21 })).toBe(false);
  });
});

describe('FairShareQueue', () => {
  it('gives an endpoint alone the whole cap, then makes it wait', () => {
    const q = new FairShareQueue<string>(4);
    expect([1, 2, 3, 4].map((n) => q.request('a', `a${n}`))).toEqual([true, true, true, true]);
    expect(q.request('a', 'a5')).toBe(false);
    expect(q.running).toBe(4);
    expect(q.release('a')).toEqual(['a5']);
    expect(q.running).toBe(4);
  });

  it('starts a newcomer with nothing in flight past the cap: by one per active endpoint at most', () => {
    const q = new FairShareQueue<string>(4);
    for (let n = 0; n < 4; n++) q.request('slow', `s${n}`);
    for (const id of ['b', 'c', 'd']) expect(q.request(id, `${id}1`)).toBe(true);
    expect(q.running).toBe(7);
    expect(q.active).toBe(4);
    // A second POST of a newcomer waits: the origin is over its cap.
    expect(q.request('b', 'b2')).toBe(false);
    expect(q.running).toBeLessThanOrEqual(4 + q.active);
  });

  it('serves waiting endpoints round-robin, not in the order their POSTs came', () => {
    const q = new FairShareQueue<string>(2);
    // `a` queues 6 POSTs before `b` asks for any: a first-come first-served pool would run all of a's first.
    for (let n = 1; n <= 6; n++) q.request('a', `a${n}`);
    for (let n = 1; n <= 6; n++) q.request('b', `b${n}`);
    // a1, a2 run (a alone then); b1 runs past the cap (nothing in flight); the rest wait, and from
    // then on each holds its share (one) and they take turns.
    const order: string[] = [];
    const inFlight = ['a', 'a', 'b'];
    while (inFlight.length) {
      const started = q.release(inFlight.shift()!);
      for (const s of started) {
        order.push(s);
        inFlight.push(s[0]!);
      }
    }
    expect(order).toEqual(['a3', 'b2', 'a4', 'b3', 'a5', 'b4', 'a6', 'b5', 'b6']);
    expect(q.idle).toBe(true);
  });

  it('holds an endpoint to its share once others are active, whatever it held before', () => {
    const q = new FairShareQueue<string>(4);
    for (let n = 1; n <= 8; n++) q.request('a', `a${n}`);
    q.request('b', 'b1');
    for (let n = 2; n <= 4; n++) q.request('b', `b${n}`);
    // a holds 4, b 1 (past the cap). As a's POSTs end, its share is 2 and b's turn comes.
    expect(q.release('a')).toEqual([]);
    expect(q.release('a')).toEqual(['b2']);
    expect(q.release('a')).toEqual(['a5']);
    expect(q.release('b')).toEqual(['b3']);
  });

  it('drops a cancelled waiter and refuses to release what is not in flight', () => {
    const q = new FairShareQueue<string>(1);
    q.request('a', 'a1');
    q.request('a', 'a2');
    expect(q.cancel('a', 'a2')).toBe(true);
    expect(q.cancel('a', 'a2')).toBe(false);
    expect(q.release('a')).toEqual([]);
    expect(q.idle).toBe(true);
    expect(() => q.release('a')).toThrow(/no POST/);
  });
});

describe('FairShareQueue under random load', () => {
  it('never keeps a waiter that may start, passes the cap only for endpoints with nothing in flight, and serves everyone', () => {
    // A seeded generator: the same run every time.
    let seed = 42;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const cap = 16;
    const q = new FairShareQueue<{ id: string }>(cap);
    const inFlight = new Map<string, number>();
    const waiting = new Map<string, number>();
    const running: string[] = [];
    const add = (m: Map<string, number>, id: string, d: number) => {
      const n = (m.get(id) ?? 0) + d;
      if (n) m.set(id, n);
      else m.delete(id);
    };
    let servedFromWaits = 0;
    const broken: string[] = [];
    for (let step = 0; step < 20_000; step++) {
      // Few endpoints at first (shares of several), then many (shares of one).
      const endpoints = step < 5_000 ? 3 : 60;
      if (random() < 0.55 || running.length === 0) {
        const id = `e${Math.floor(random() * endpoints)}`;
        const before = inFlight.get(id) ?? 0;
        if (q.request(id, { id })) {
          if (running.length >= cap && before > 0) broken.push(`${step}: ${id} passed the cap with ${before} in flight`);
          add(inFlight, id, 1);
          running.push(id);
        } else add(waiting, id, 1);
      } else {
        const id = running.splice(Math.floor(random() * running.length), 1)[0]!;
        add(inFlight, id, -1);
        for (const w of q.release(id)) {
          add(waiting, w.id, -1);
          add(inFlight, w.id, 1);
          running.push(w.id);
          servedFromWaits++;
        }
      }
      const active = new Set([...inFlight.keys(), ...waiting.keys()]).size;
      if (q.running !== running.length || q.active !== active) broken.push(`${step}: counts ${q.running}/${q.active}`);
      if (q.running > cap + active) broken.push(`${step}: ${q.running} in flight`);
      for (const id of waiting.keys())
        if (mayStart({ cap, originInFlight: q.running, endpointInFlight: inFlight.get(id) ?? 0, active }))
          broken.push(`${step}: ${id} kept waiting`);
    }
    expect(broken.slice(0, 5)).toEqual([]);
    expect(servedFromWaits).toBeGreaterThan(1_000);
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

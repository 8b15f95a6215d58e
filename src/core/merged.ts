/**
 * `{ ...base, ...extra }` built key by key, for objects made once per event, delivery or row.
 *
 * V8 in Node 20 copies an object spread fast only when nothing follows it: a spread followed by
 * another key (`{ ...row, data }`) runs about 30 times slower and lands in the old generation, with
 * everything it references. A stream page of such copies ran a full GC every few pages in the API
 * (docs/scaling.md, "Speed, as a ratio to the peer" and "Growth, retention and capacity").
 *
 * Same result as the spread for string keys: `base`'s keys in their order, then `extra`'s new ones,
 * a key in both taking `extra`'s value in `base`'s place. A `__proto__` key of parsed JSON stays
 * an own key as the spread keeps it, never the object's prototype. Symbol keys are not copied.
 */
export function merged<A extends object, B extends object>(base: A, extra: B): Omit<A, keyof B> & B {
  const out: Record<string, unknown> = {};
  copyInto(out, base as Record<string, unknown>);
  copyInto(out, extra as Record<string, unknown>);
  return out as Omit<A, keyof B> & B;
}

function copyInto(out: Record<string, unknown>, source: Record<string, unknown>): void {
  for (const k of Object.keys(source)) {
    if (k === '__proto__') Object.defineProperty(out, k, { value: source[k], enumerable: true, writable: true, configurable: true });
    else out[k] = source[k];
  }
}

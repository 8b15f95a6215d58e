/**
 * A JSON value with every object's keys in the order a jsonb column keeps them (shorter keys
 * first, then bytewise by UTF-8), which is the order a value read back from Postgres has: an
 * object built in JavaScript and one stored then read reach JSON.stringify alike.
 */
export function inJsonbKeyOrder(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(inJsonbKeyOrder);
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value).map((k) => ({ k, bytes: Buffer.from(k, 'utf8') }));
  keys.sort((a, b) => a.bytes.length - b.bytes.length || Buffer.compare(a.bytes, b.bytes));
  const out: Record<string, unknown> = {};
  for (const { k } of keys) {
    const v = (value as Record<string, unknown>)[k];
    // jsonb has no undefined: JSON.stringify leaves such a key out, and so does the column.
    if (v !== undefined) out[k] = inJsonbKeyOrder(v);
  }
  return out;
}

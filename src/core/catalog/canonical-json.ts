import { createHash } from 'node:crypto';

/**
 * Canonical JSON: object keys sorted by code unit recursively, no whitespace, JSON.stringify
 * semantics otherwise (undefined members dropped, toJSON honoured, non-finite numbers as null).
 * Serialized by hand because JSON.stringify always puts integer-like keys first.
 * Used for the `<sha256 of normalized payload>` keys, so redeliveries hash alike whatever their key order.
 */
export function canonicalJson(value: unknown): string {
  return write(value) ?? 'null';
}

function write(value: unknown): string | undefined {
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    return write((value as { toJSON: () => unknown }).toJSON());
  }
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : 'null';
    case 'bigint':
      throw new TypeError('canonicalJson: bigint is not JSON');
    case 'object':
      break;
    default:
      return undefined; // undefined, function, symbol: dropped like JSON.stringify does
  }
  if (Array.isArray(value)) return `[${value.map((v) => write(v) ?? 'null').join(',')}]`;
  const obj = value as Record<string, unknown>;
  const parts: string[] = [];
  for (const k of Object.keys(obj).sort()) {
    const v = write(obj[k]);
    if (v !== undefined) parts.push(`${JSON.stringify(k)}:${v}`);
  }
  return `{${parts.join(',')}}`;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * Text Postgres can store. `text` and `jsonb` refuse U+0000, and `jsonb` refuses an unpaired
 * UTF-16 surrogate (`\ud800`), so either one reaching a query is a 500. Request input carrying
 * them is refused at the edge (findUnstorableText); text the service records from elsewhere
 * (a receiver's answer, a rejected provider notification) is made storable instead.
 */
import { formatPath } from './catalog/issues.js';

/** NUL, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one. */
// eslint-disable-next-line no-control-regex -- NUL is exactly what Postgres refuses in text
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const UNSTORABLE_ALL = new RegExp(UNSTORABLE.source, 'g');

export const UNSTORABLE_REASON = 'contains a NUL character or an unpaired UTF-16 surrogate';

export function isStorableText(s: string): boolean {
  return !UNSTORABLE.test(s);
}

/** `s` with every NUL and unpaired surrogate replaced by U+FFFD; other text untouched. */
export function toStorableText(s: string): string {
  return s.replace(UNSTORABLE_ALL, '\ufffd');
}

/**
 * A receiver's response bytes as storable text: UTF-8 with U+FFFD for invalid sequences, NUL
 * replaced too. When the bytes were cut at a limit, a character split by the cut is dropped
 * rather than shown as U+FFFD.
 */
export function storableExcerpt(bytes: Uint8Array, opts: { truncated: boolean }): string {
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes, { stream: opts.truncated });
  return toStorableText(text);
}

/**
 * The path (`data.message.text.body`, `items[2]`) of the first string, object key included,
 * that Postgres could not store; undefined when every string is storable. Iterative, so a
 * deeply nested body cannot overflow the stack.
 */
export function findUnstorableText(value: unknown): string | undefined {
  // Each node links to its parent, so the path is built only for the string that fails.
  interface Node {
    value: unknown;
    key: PropertyKey | null;
    parent: Node | null;
  }
  const pathOf = (n: Node | null, last?: PropertyKey): string => {
    const path: PropertyKey[] = last === undefined ? [] : [last];
    for (let cur = n; cur && cur.key !== null; cur = cur.parent) path.unshift(cur.key);
    return formatPath(path);
  };
  const pending: Node[] = [{ value, key: null, parent: null }];
  while (pending.length > 0) {
    const node = pending.pop()!;
    const v = node.value;
    if (typeof v === 'string') {
      if (!isStorableText(v)) return pathOf(node);
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) pending.push({ value: v[i], key: i, parent: node });
    } else if (v !== null && typeof v === 'object') {
      const entries = Object.entries(v);
      for (const [k] of entries) if (!isStorableText(k)) return pathOf(node, toStorableText(k));
      for (let i = entries.length - 1; i >= 0; i--) pending.push({ value: entries[i]![1], key: entries[i]![0], parent: node });
    }
  }
  return undefined;
}

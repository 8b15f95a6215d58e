import { describe, expect, it } from 'vitest';
import { findUnstorableText, isStorableText, storableExcerpt, toStorableText } from '../../src/core/storable-text.js';

describe('storable text (Postgres text and jsonb)', () => {
  it('tells NUL and unpaired surrogates from well-formed text', () => {
    for (const ok of ['', 'plain', 'Vocês abrem sábado?', '😀 paired \ud83d\ude00', '\\u0000 as six characters'])
      expect(isStorableText(ok), ok).toBe(true);
    for (const bad of ['a\u0000b', '\u0000', 'lone high \ud800', 'lone low \udc00 first', '\ude00\ud83d', 'end \ud83d'])
      expect(isStorableText(bad), JSON.stringify(bad)).toBe(false);
  });

  it('replaces NUL and unpaired surrogates by U+FFFD and keeps the rest', () => {
    expect(toStorableText('a\u0000b\ud800c\udc00d 😀')).toBe('a\ufffdb\ufffdc\ufffdd 😀');
    expect(toStorableText('fine')).toBe('fine');
  });

  it('decodes a receiver excerpt as UTF-8 with replacement and no NUL', () => {
    expect(storableExcerpt(Buffer.from([0x6f, 0x6b, 0x00, 0x21]), { truncated: false })).toBe('ok\ufffd!');
    expect(storableExcerpt(Buffer.from([0x61, 0xff, 0xfe, 0x62]), { truncated: false })).toBe('a\ufffd\ufffdb');
    // CESU-style encoded surrogate: invalid UTF-8, never a lone surrogate in the result.
    const cesu = storableExcerpt(Buffer.from([0xed, 0xa0, 0x80]), { truncated: false });
    expect(isStorableText(cesu)).toBe(true);
    // A character split by the 4 KiB cut is dropped, not shown as U+FFFD; at the real end it is U+FFFD.
    const euro = Buffer.from('x€', 'utf8').subarray(0, 3);
    expect(storableExcerpt(euro, { truncated: true })).toBe('x');
    expect(storableExcerpt(euro, { truncated: false })).toBe('x\ufffd');
  });

  it('finds the first unstorable string anywhere in a body, keys included, by path', () => {
    expect(findUnstorableText({ a: 'x', b: [1, true, null, { c: 'ok' }] })).toBeUndefined();
    expect(findUnstorableText({ url: 'https://a\u0000' })).toBe('url');
    expect(findUnstorableText({ data: { message: { text: { body: 'hi\ud800' } } } })).toBe('data.message.text.body');
    expect(findUnstorableText({ data: { items: ['ok', 'b\u0000'] } })).toBe('data.items[1]');
    expect(findUnstorableText({ data: { ['k\u0000']: 1 } })).toBe('data.k\ufffd');
    expect(findUnstorableText('top\u0000')).toBe('(root)');
    expect(findUnstorableText({ event_type: ['a', 'b\u0000'] })).toBe('event_type[1]');
  });

  it('walks deep nesting without overflowing the stack', () => {
    let deep: unknown = 'bottom\u0000';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(findUnstorableText(deep)).toMatch(/^\[0\]/);
  });
});

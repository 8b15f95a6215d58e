/** The stored form of an event's payload (src/db/payload-bytes.ts) and jsonb's key order it keeps. */
import { describe, expect, it } from 'vitest';
import { inJsonbKeyOrder } from '../../src/core/jsonb-order.js';
import crypto from 'node:crypto';
import zlib from 'node:zlib';
import { decodePayload, encodePayload, encodedPayloadsJson, writePayloadsAs } from '../../src/db/payload-bytes.js';

/** One payload's stored JSON text, as a page of one reads it. */
const encodedPayloadJson = (bytes: Buffer) => encodedPayloadsJson([bytes])[0];

describe('inJsonbKeyOrder', () => {
  it('orders keys as jsonb does: shorter first, then bytewise by UTF-8, in nested objects and arrays too', () => {
    const ordered = inJsonbKeyOrder({ bb: 1, é: 2, z: 3, ab: { y: 1, xx: 2, x: 3 }, a: [{ b: 1, a: 2 }] });
    expect(JSON.stringify(ordered)).toBe('{"a":[{"a":2,"b":1}],"z":3,"ab":{"x":3,"y":1,"xx":2},"bb":1,"é":2}');
  });

  it('leaves out undefined fields, as a jsonb column does', () => {
    expect(JSON.stringify(inJsonbKeyOrder({ b: undefined, a: null }))).toBe('{"a":null}');
  });
});

describe('payload bytes', () => {
  const large = { description: 'a fairly repetitive description '.repeat(30), id: 'dem_1', status: 'open' };

  it('compresses a payload when that is shorter, and reads it back with keys in jsonb order', () => {
    const bytes = encodePayload(large);
    expect(bytes.length).toBeLessThan(JSON.stringify(large).length / 4);
    expect(bytes[0]).not.toBe('{'.charCodeAt(0));
    expect(JSON.stringify(decodePayload(bytes))).toBe(JSON.stringify(inJsonbKeyOrder(large)));
  });

  it('keeps a short payload as JSON text, which compression would lengthen', () => {
    const bytes = encodePayload({ b: 1, a: 'x' });
    expect(bytes.toString('utf8')).toBe('{"a":"x","b":1}');
    expect(decodePayload(bytes)).toEqual({ a: 'x', b: 1 });
  });

  it('reads JSON text as jsonb prints it (the rows migration 0031 moved)', () => {
    expect(decodePayload(Buffer.from('{"a": [1, 2.50], "bb": {"c": null}}', 'utf8'))).toEqual({ a: [1, 2.5], bb: { c: null } });
  });

  it('reads back a payload whose JSON is many times the inflating chunk (4 KiB), whole', () => {
    const big = { notes: crypto.randomBytes(48 * 1024).toString('base64'), id: 'dem_2' };
    const bytes = encodePayload(big);
    expect(bytes[0]).not.toBe('{'.charCodeAt(0));
    expect(decodePayload(bytes)).toEqual(inJsonbKeyOrder(big));
    expect(encodedPayloadJson(bytes)?.toString('utf8')).toBe(JSON.stringify(inJsonbKeyOrder(big)));
  });

  it("gives the stored text as is only for a compressed payload: JSON text may be jsonb's, spaced", () => {
    expect(encodedPayloadJson(encodePayload(large))?.toString('utf8')).toBe(JSON.stringify(inJsonbKeyOrder(large)));
    expect(encodedPayloadJson(Buffer.from('{"a": 1}', 'utf8'))).toBeUndefined();
  });

  it('encodes the same payload to the same bytes every time, whatever its keys were built in', () => {
    const reordered = { status: 'open', id: 'dem_1', description: large.description };
    expect(encodePayload(reordered).equals(encodePayload(large))).toBe(true);
  });

  it('writes zlib instead while a deployment still runs processes older than gzip (PAYLOAD_COMPRESSION=zlib), and gzip again after', () => {
    try {
      writePayloadsAs('zlib');
      const old = encodePayload(large);
      expect(old[0]).toBe(0x78);
      expect(zlib.inflateSync(old).toString('utf8')).toBe(JSON.stringify(inJsonbKeyOrder(large)));
    } finally {
      writePayloadsAs('gzip');
    }
    expect(encodePayload(large)[0]).toBe(0x1f);
  });

  it('reads the zlib payloads of rows written before gzip, one by one and in a page', () => {
    const text = JSON.stringify(inJsonbKeyOrder(large));
    const old = zlib.deflateSync(Buffer.from(text, 'utf8'));
    expect(decodePayload(old)).toEqual(inJsonbKeyOrder(large));
    expect(encodedPayloadJson(old)?.toString('utf8')).toBe(text);
  });

  it("inflates a page's payloads together, each to its own bytes, whatever mix of forms it holds", () => {
    const data = [
      large,
      { b: 1, a: 'x' },
      { ...large, id: 'dem_é ☕' },
      { notes: crypto.randomBytes(20 * 1024).toString('base64') },
      large,
    ];
    const payloads: (Buffer | undefined)[] = data.map((d) => encodePayload(d));
    payloads.splice(2, 0, zlib.deflateSync(Buffer.from(JSON.stringify(inJsonbKeyOrder(large)), 'utf8')), undefined);
    const page = encodedPayloadsJson(payloads);
    expect(page.map((b) => b?.toString('utf8'))).toEqual(payloads.map((p) => (p ? encodedPayloadJson(p)?.toString('utf8') : undefined)));
    expect(page[1]).toBeUndefined(); // short JSON text: parsed and written again by its reader
    expect(page[3]).toBeUndefined();
    expect(page[2]?.toString('utf8')).toBe(JSON.stringify(inJsonbKeyOrder(large)));
    expect(page[4]?.toString('utf8')).toBe(JSON.stringify(inJsonbKeyOrder(data[2]!)));
    expect(page[5]?.toString('utf8')).toBe(JSON.stringify(inJsonbKeyOrder(data[3]!)));
    expect(encodedPayloadsJson([])).toEqual([]);
  });

  it('fails loudly on a page whose stored sizes do not match what it inflates to', () => {
    const bad = Buffer.from(encodePayload(large));
    bad.writeUInt32LE(bad.readUInt32LE(bad.length - 4) + 1, bad.length - 4);
    expect(() => encodedPayloadsJson([encodePayload(large), bad])).toThrow();
  });
});

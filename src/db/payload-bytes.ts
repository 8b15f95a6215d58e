/**
 * An event's payload as stored (events.payload): its JSON, keys in jsonb's order (so webhook bodies
 * and stream items read exactly as they did from the jsonb column it replaced), gzip-compressed
 * when that is shorter (zlib in rows written before 29 Nov 2026, read as before). Postgres
 * compresses no value of a row under about 2 KB (toast_tuple_target cannot lower that), and a
 * 1 KiB payload is most of its event's bytes.
 */
import zlib from 'node:zlib';
import { inJsonbKeyOrder } from '../core/jsonb-order.js';

/** The first byte of JSON text of an object; compressed payloads start with another (gzip 0x1f, zlib 0x78 or another CMF byte). */
const OPEN_BRACE = 0x7b;
/** The first byte of a gzip member (RFC 1952); payloads written before gzip are zlib streams, which never start with it. */
const GZIP_ID1 = 0x1f;

/** How new payloads are compressed: gzip, or zlib while a deployment still runs processes older than gzip (PAYLOAD_COMPRESSION). */
export type PayloadCompression = 'gzip' | 'zlib';
let compression: PayloadCompression = 'gzip';

/**
 * Set once per process at its start (src/services.ts), from its configuration: one setting for
 * every writer of events, not a parameter threaded through each.
 */
export function writePayloadsAs(format: PayloadCompression): void {
  compression = format;
}

/**
 * The payload's JSON as stored: compressed when that is shorter. Gzip rather than zlib (12 bytes
 * more per payload) because gzip members can be concatenated and inflated in one call, each
 * member's length written in its last four bytes: a stream page inflates its hundred payloads
 * through one zlib handle instead of a hundred (see encodedPayloadsJson).
 */
export function encodePayload(data: Record<string, unknown>): Buffer {
  const json = Buffer.from(JSON.stringify(inJsonbKeyOrder(data)), 'utf8');
  const compressed = compression === 'gzip' ? zlib.gzipSync(json) : zlib.deflateSync(json);
  return compressed.length < json.length ? compressed : json;
}

/** The payload of `bytes`: JSON text (short payloads, and rows migration 0031 moved from the jsonb column), gzip or zlib. */
export function decodePayload(bytes: Buffer): Record<string, unknown> {
  const json = bytes[0] === OPEN_BRACE ? bytes : inflated(bytes);
  return JSON.parse(json.toString('utf8')) as Record<string, unknown>;
}

/**
 * Each payload's JSON text exactly as `encodePayload` wrote it (`JSON.stringify` of its data in
 * jsonb's key order), as UTF-8 bytes, when that is certain: a compressed payload, since only
 * `encodePayload` compresses. Undefined for an undefined payload, and for JSON text stored as it
 * is, which may also be jsonb's own text that migration 0031 copied (a space after each
 * separator): such text must be parsed and written again.
 *
 * The gzip members are inflated together: one zlib handle and one output buffer for a page of
 * them. A handle per payload cost more than its inflating (in a loop of 100-item pages, half the
 * API's time), and each left a native object for the young generation's collections to finalise:
 * thousands per collection, pauses of 4 ms every 70 ms.
 */
export function encodedPayloadsJson(payloads: (Buffer | undefined)[]): (Buffer | undefined)[] {
  const out = payloads.map((p) => (p === undefined || p[0] === OPEN_BRACE || p[0] === GZIP_ID1 ? undefined : inflated(p)));
  const members = payloads.flatMap((p, i) => (p?.[0] === GZIP_ID1 ? [i] : []));
  if (members.length === 0) return out;
  // ISIZE: the member's input length modulo 2^32 (RFC 1952); a payload is far below 4 GiB.
  const sizes = members.map((i) => payloads[i]!.readUInt32LE(payloads[i]!.length - 4));
  const total = sizes.reduce((a, b) => a + b, 0);
  // One byte spare: an output buffer filled exactly is followed by another, allocated for nothing.
  const all = zlib.gunzipSync(Buffer.concat(members.map((i) => payloads[i]!)), { chunkSize: Math.max(64, total + 1) });
  if (all.length !== total) throw new Error(`stored payloads inflated to ${all.length} bytes, their sizes say ${total}`);
  let at = 0;
  members.forEach((i, k) => {
    out[i] = all.subarray(at, (at += sizes[k]!));
  });
  return out;
}

/**
 * Inflated into 4 KiB chunks, not zlib's 16 KiB: a payload is about 1 KiB (in a loop of inflates:
 * 8 % less time and a third fewer young collections).
 */
function inflated(bytes: Buffer): Buffer {
  return bytes[0] === GZIP_ID1 ? zlib.gunzipSync(bytes, { chunkSize: 4096 }) : zlib.inflateSync(bytes, { chunkSize: 4096 });
}

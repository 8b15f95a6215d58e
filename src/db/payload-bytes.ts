/**
 * An event's payload as stored (events.payload): its JSON, keys in jsonb's order (so webhook bodies
 * and stream items read exactly as they did from the jsonb column it replaced), zlib-compressed
 * when that is shorter. Postgres compresses no value of a row under about 2 KB (toast_tuple_target
 * cannot lower that), and a 1 KiB payload is most of its event's bytes.
 */
import zlib from 'node:zlib';
import { inJsonbKeyOrder } from '../core/jsonb-order.js';

/** The first byte of JSON text of an object; zlib streams start with 0x78 (or another CMF byte, never this one). */
const OPEN_BRACE = 0x7b;

export function encodePayload(data: Record<string, unknown>): Buffer {
  const json = Buffer.from(JSON.stringify(inJsonbKeyOrder(data)), 'utf8');
  const compressed = zlib.deflateSync(json);
  return compressed.length < json.length ? compressed : json;
}

/** The payload of `bytes`: JSON text (short payloads, and rows migration 0031 moved from the jsonb column) or zlib. */
export function decodePayload(bytes: Buffer): Record<string, unknown> {
  const json = bytes[0] === OPEN_BRACE ? bytes : inflated(bytes);
  return JSON.parse(json.toString('utf8')) as Record<string, unknown>;
}

/**
 * The payload's JSON text exactly as `encodePayload` wrote it (`JSON.stringify` of its data in
 * jsonb's key order), as UTF-8 bytes, when that is certain: a compressed payload, since only
 * `encodePayload` compresses. Undefined for JSON text stored as it is, which may also be jsonb's
 * own text that migration 0031 copied (a space after each separator): such text must be parsed and
 * written again.
 */
export function encodedPayloadJson(bytes: Buffer): Buffer | undefined {
  return bytes[0] === OPEN_BRACE ? undefined : inflated(bytes);
}

/**
 * Inflated into 4 KiB chunks, not zlib's 16 KiB: a payload is about 1 KiB, and a stream page
 * inflates a hundred (in a loop of pages: 8 % less time and a third fewer young collections).
 */
function inflated(bytes: Buffer): Buffer {
  return zlib.inflateSync(bytes, { chunkSize: 4096 });
}

/**
 * The output and exit-code conventions `webhooks-admin` shares with the tenant's `webhooks`:
 * a human record by default, JSON with --json, and exit codes 0 ok, 1 an error from the
 * service or the database, 2 usage, 3 the database cannot be reached.
 */
import { isDatabaseUnavailable } from '../src/db/pool.js';

export const EXIT = { ok: 0, error: 1, usage: 2, unreachable: 3 } as const;

/** Bad input: an unknown command, a missing or malformed option. */
export class UsageError extends Error {}

/** The database answered, and the row named is not there. */
export class NotFoundError extends Error {}

/** The database could not be started or reached. */
export class UnreachableError extends Error {}

const text = (v: unknown): string => (v === null || v === undefined ? '-' : Array.isArray(v) ? v.join(',') : String(v));

/** One result as aligned `field  value` lines, like `webhooks` shows a single resource. */
export function record(obj: Record<string, unknown>): string {
  const width = Math.max(...Object.keys(obj).map((k) => k.length));
  return Object.entries(obj)
    .map(([k, v]) => `${k.padEnd(width)}  ${typeof v === 'object' && v !== null && !Array.isArray(v) ? JSON.stringify(v) : text(v)}`)
    .join('\n');
}

export function render(result: Record<string, unknown>, json: boolean): string {
  return json ? JSON.stringify(result, null, 2) : record(result);
}

const isParseArgsError = (err: unknown) => (err as { code?: unknown }).code?.toString().startsWith('ERR_PARSE_ARGS') ?? false;

export function exitCodeFor(err: unknown): number {
  if (err instanceof UsageError || isParseArgsError(err)) return EXIT.usage;
  if (err instanceof UnreachableError || isDatabaseUnavailable(err)) return EXIT.unreachable;
  return EXIT.error;
}

/** The stderr line for `err`. Usage errors keep their own text, which may carry the usage. */
export function errorMessage(err: unknown): string {
  const message = err instanceof Error ? err.message || String(err) : String(err);
  if (err instanceof UsageError || isParseArgsError(err)) return message;
  if (err instanceof UnreachableError || isDatabaseUnavailable(err)) return `error: cannot reach the database: ${message}`;
  return `error: ${message}`;
}

/**
 * Opt-in timestamps of one delivery's hops through the pipeline, for the benchmark (`npm run bench
 * -- --peer --trace`): with BENCH_TRACE_DIR set, each process appends `<ms> <hop> <key> [<endpoint>]`
 * lines to a file of its own there, written every 200 ms; unset (always, in service), `traceHop`
 * is a test of one constant and nothing is kept. Times are wall-clock ms with sub-ms resolution,
 * comparable across the processes of one machine. Keys are events' idempotency keys (what the
 * receiver sees in X-Idempotency-Key), or endpoint ids for the hops that concern an endpoint
 * (notify, heard, a session's start: lease-asked, then leased, lease-refused or left, and its report).
 */
import fs from 'node:fs';
import path from 'node:path';

const dir = process.env.BENCH_TRACE_DIR;
export const tracing = !!dir;
let lines: string[] = [];

function flush(): void {
  if (lines.length === 0) return;
  const out = lines.join('');
  lines = [];
  fs.appendFileSync(path.join(dir!, `${process.pid}.trace`), out);
}

if (dir) {
  fs.mkdirSync(dir, { recursive: true });
  setInterval(flush, 200).unref();
  process.on('exit', flush);
}

export const hopNow = (): number => performance.timeOrigin + performance.now();

/** `at`: when the hop happened, if that was before its key was known (a publish, before its body was read). */
export function traceHop(hop: string, key: string, endpointId?: string, at = hopNow()): void {
  if (!tracing) return;
  lines.push(`${at.toFixed(2)} ${hop} ${key}${endpointId ? ` ${endpointId}` : ''}\n`);
}

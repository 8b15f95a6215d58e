/**
 * Where a delivery's time goes (`npm run bench -- --peer --trace`): the processes' hop times
 * (src/runtime/hop-trace.ts, BENCH_TRACE_DIR) joined with the client's publish start and the
 * receiver's receipt of each delivery, then, for the deliveries whose latency is about the p50
 * and about the p99 of the phase, the median time of each hop.
 */
import fs from 'node:fs';
import path from 'node:path';
import { printColumns } from './table.js';

/** In order: each hop ends where the next starts. */
export const HOPS = [
  ['publish → API', 'client publish start to publishEvent entered (HTTP, auth, body)'],
  ['group commit', 'publishEvent entered to its event and delivery committed'],
  ['commit → NOTIFY', 'commit to the coalesced NOTIFY sent for its endpoint'],
  ['NOTIFY → worker', 'NOTIFY sent to heard by the worker listening'],
  ['worker → claim', 'heard to the delivery claimed by a session lane (router, session start, claim statement)'],
  ['claim → POST', 'claimed to its POST started (endpoint read, throttle, connection slot, body)'],
  ['POST → receipt', 'POST started to the receiver having the whole request (signing, TLS, network)'],
] as const;
export type HopName = (typeof HOPS)[number][0];

/**
 * How news was routed: sessions' leases granted and refused, news a worker left to the preferred
 * one (no ask), wake signals sent to workflows (the slow path), and direct sessions' reports sent
 * to them (a workflow task each).
 */
const ROUTING = ['leased', 'lease-refused', 'left', 'wake-signal', 'report'] as const;
type RoutingHop = (typeof ROUTING)[number];
const isRouting = (hop: string): hop is RoutingHop => (ROUTING as readonly string[]).includes(hop);

interface Trace {
  perKey: Map<string, Record<string, number> & { endpoint?: string }>;
  /** Sorted times of an endpoint's hops (notify, heard). */
  perEndpoint: Map<string, Record<string, number[]>>;
  /** The times of every routing hop, of any endpoint. */
  routing: Record<RoutingHop, number[]>;
}

export function readTraces(dir: string): Trace {
  const perKey: Trace['perKey'] = new Map();
  const perEndpoint: Trace['perEndpoint'] = new Map();
  const routing: Trace['routing'] = { leased: [], 'lease-refused': [], left: [], 'wake-signal': [], report: [] };
  const files = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.trace')) : [];
  for (const f of files)
    for (const line of fs.readFileSync(path.join(dir, f), 'utf8').split('\n')) {
      const [t, hop, key, endpoint] = line.split(' ');
      if (!t || !hop || !key) continue;
      const at = Number(t);
      if (isRouting(hop)) routing[hop].push(at);
      if (hop === 'notify' || hop === 'heard') {
        let e = perEndpoint.get(key);
        if (!e) perEndpoint.set(key, (e = {}));
        (e[hop] ??= []).push(at);
        continue;
      }
      let k = perKey.get(key);
      if (!k) perKey.set(key, (k = {}));
      // The first of each (a POST sent again keeps its first time).
      if (k[hop] === undefined) k[hop] = at;
      if (endpoint) k.endpoint = endpoint;
    }
  for (const e of perEndpoint.values()) for (const times of Object.values(e)) times.sort((a, b) => a - b);
  return { perKey, perEndpoint, routing };
}

/** The first of sorted `times` at or after `t`. */
function firstFrom(times: number[] | undefined, t: number): number | undefined {
  if (!times) return undefined;
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (times[mid]! < t) lo = mid + 1;
    else hi = mid;
  }
  return times[lo];
}

/** Each hop of one delivery in ms, or undefined when a time is missing. */
function hopsOf(trace: Trace, key: string, sent: number, receipt: number): Record<HopName, number> | undefined {
  const k = trace.perKey.get(key);
  if (!k?.received || !k.committed || !k.claimed || !k.post || !k.endpoint) return undefined;
  const e = trace.perEndpoint.get(k.endpoint);
  // A NOTIFY batch may be sent before this commit's answer reached publishEvent: the first within a few ms before counts too.
  const notify = Math.min(firstFrom(e?.notify, k.committed - 5) ?? k.claimed, k.claimed);
  // A session already running (poked by earlier news) may claim it before its own NOTIFY is heard.
  const heard = Math.min(firstFrom(e?.heard, notify) ?? k.claimed, k.claimed);
  return {
    'publish → API': k.received - sent,
    'group commit': k.committed - k.received,
    'commit → NOTIFY': notify - k.committed,
    'NOTIFY → worker': heard - notify,
    'worker → claim': k.claimed - heard,
    'claim → POST': k.post - k.claimed,
    'POST → receipt': receipt - k.post,
  };
}

export interface Breakdown {
  traced: number;
  /** Routing hops from the phase's first publish to its last receipt. */
  routing: Record<RoutingHop, number>;
  /** Median ms of each hop among the deliveries within the band around p50 and around p99 of latency. */
  p50: Record<HopName, number> & { latency: number; n: number };
  p99: Record<HopName, number> & { latency: number; n: number };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? +s[Math.floor(s.length / 2)]!.toFixed(1) : NaN;
};

export function hopBreakdown(dir: string, samples: { key: string; sent: number; receipt: number }[]): Breakdown | undefined {
  const trace = readTraces(dir);
  const from = Math.min(...samples.map((s) => s.sent));
  const to = Math.max(...samples.map((s) => s.receipt));
  const routing = Object.fromEntries(ROUTING.map((hop) => [hop, trace.routing[hop].filter((t) => t >= from && t <= to).length])) as Record<
    RoutingHop,
    number
  >;
  const rows = samples
    .map((s) => ({ latency: s.receipt - s.sent, hops: hopsOf(trace, s.key, s.sent, s.receipt) }))
    .filter((r): r is { latency: number; hops: Record<HopName, number> } => !!r.hops)
    .sort((a, b) => a.latency - b.latency);
  if (rows.length < 20) return undefined;
  const band = (p: number, halfWidth: number) => {
    const from = Math.max(0, Math.floor((p - halfWidth) * rows.length));
    const to = Math.min(rows.length, Math.max(from + 1, Math.ceil((p + halfWidth) * rows.length)));
    const within = rows.slice(from, to);
    const out = { latency: median(within.map((r) => r.latency)), n: within.length } as Record<HopName, number> & {
      latency: number;
      n: number;
    };
    for (const [h] of HOPS) out[h] = median(within.map((r) => r.hops[h]));
    return out;
  };
  return { traced: rows.length, routing, p50: band(0.5, 0.01), p99: band(0.99, 0.005) };
}

export function printBreakdown(title: string, b: Breakdown): void {
  console.log(`${title}: hops of the deliveries about the p50 and the p99 of latency (medians within each band; ${b.traced} traced)`);
  const rows: string[][] = [['hop', `p50 band (${b.p50.n}, ${b.p50.latency} ms)`, `p99 band (${b.p99.n}, ${b.p99.latency} ms)`, 'what']];
  for (const [h, what] of HOPS) rows.push([h, `${b.p50[h]} ms`, `${b.p99[h]} ms`, what]);
  printColumns(rows);
  const r = b.routing;
  console.log(
    `routing in the phase: ${r.leased} session leases granted, ${r['lease-refused']} refused, ${r.left} news left to the preferred worker, ${r['wake-signal']} wake signals and ${r.report} sessions' reports to workflows`,
  );
  console.log('');
}

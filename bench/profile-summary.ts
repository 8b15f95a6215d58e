/**
 * Top self-time functions of a V8 .cpuprofile (what `node --cpu-prof` writes), optionally
 * only within time windows (µs on the monotonic clock the samples are stamped with), and the
 * same time grouped by package or source folder.
 *
 *   npx tsx bench/profile-summary.ts .data/bench-run/profiles/worker.cpuprofile [top]
 */
import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../dev/tools.js';

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** node_modules/<pkg> (scoped too), node:internal/<area>, or the project's own folder. */
function area(url: string): string {
  if (!url) return '(native/V8)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1]!;
  if (url.startsWith('node:')) return url.split('/').slice(0, 2).join('/');
  const rel = url.replace(/^file:\/\//, '').replace(projectRoot + '/', '');
  return (
    rel
      .split('/')
      .slice(0, rel.includes('/') ? 1 : 0)
      .join('/') || rel
  );
}

/** Now on the monotonic clock, in µs, as a profile's samples are stamped: a window to summarize. */
export const monoUs = () => Number(process.hrtime.bigint() / 1000n);

/**
 * The main thread's profile in `dir`, the largest there (tsx's module-hooks thread writes one of
 * its own; a restarted process leaves one per run); undefined when none was written.
 */
export function mainThreadProfile(dir: string): string | undefined {
  if (!fs.existsSync(dir)) return undefined;
  const files = fs.readdirSync(dir).map((f) => path.join(dir, f));
  return files.sort((a, b) => fs.statSync(b).size - fs.statSync(a).size)[0];
}

interface SelfTimes {
  /** µs by "function url:line". */
  self: Map<string, number>;
  /** µs by area (package, node:internal area, or the project's folder). */
  areas: Map<string, number>;
  total: number;
  idle: number;
  inWindows: number;
}

const readProfile = (file: string) => JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;

/** Self time within the windows (all of the profile when none), by function and by area. */
function selfTimes(p: CpuProfile, windows: { fromUs: number; toUs: number }[]): SelfTimes {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const out: SelfTimes = { self: new Map(), areas: new Map(), total: 0, idle: 0, inWindows: 0 };
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    const dt = p.timeDeltas[i] ?? 0;
    t += dt;
    if (windows.length && !windows.some((w) => t >= w.fromUs && t <= w.toUs)) continue;
    out.inWindows += dt;
    const node = byId.get(p.samples[i]!)!;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') {
      out.idle += dt;
      continue;
    }
    out.total += dt;
    const name =
      `${functionName || '(anonymous)'} ${url ? `${url.replace(/^file:\/\//, '').replace(projectRoot + '/', '')}:${lineNumber + 1}` : ''}`.trim();
    out.self.set(name, (out.self.get(name) ?? 0) + dt);
    const a = ['(garbage collector)', '(program)'].includes(functionName) ? functionName : area(url);
    out.areas.set(a, (out.areas.get(a) ?? 0) + dt);
  }
  return out;
}

export function summarizeProfile(file: string, windows: { fromUs: number; toUs: number }[] = [], top = 25): string {
  const { self, areas, total, idle, inWindows } = selfTimes(readProfile(file), windows);
  const pctOf = (us: number) => `${((100 * us) / total).toFixed(1).padStart(5)}%`;
  const lines = [
    `busy ${(total / 1e6).toFixed(1)} s of ${(inWindows / 1e6).toFixed(1)} s sampled (${((100 * total) / Math.max(1, inWindows)).toFixed(0)}% of one core); idle ${(idle / 1e6).toFixed(1)} s`,
    'by area:',
    ...[...areas]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([k, v]) => `  ${pctOf(v)}  ${(v / 1e6).toFixed(2).padStart(6)} s  ${k}`),
    'by function (self time):',
    ...[...self]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, v]) => `  ${pctOf(v)}  ${(v / 1e6).toFixed(2).padStart(6)} s  ${k}`),
  ];
  return lines.join('\n');
}

/**
 * Where window `a` spent more than window `b` (the cold phase beyond the warm one, each of the
 * same number of deliveries): the areas and functions with the largest excess, in ms.
 */
export function compareWindows(file: string, a: { fromUs: number; toUs: number }, b: { fromUs: number; toUs: number }, top = 20): string {
  const p = readProfile(file);
  const [x, y] = [selfTimes(p, [a]), selfTimes(p, [b])];
  const ms = (us: number) => (us / 1000).toFixed(0).padStart(6);
  const excess = (m: Map<string, number>, n: Map<string, number>, count: number) =>
    [...new Set([...m.keys(), ...n.keys()])]
      .map((k) => [k, m.get(k) ?? 0, n.get(k) ?? 0] as const)
      .sort((p, q) => q[1] - q[2] - (p[1] - p[2]))
      .slice(0, count)
      .map(([k, u, v]) => `  ${ms(u - v)} ms  (${ms(u)} against ${ms(v)})  ${k}`);
  return [
    `busy ${ms(x.total)} ms against ${ms(y.total)} ms`,
    'by area:',
    ...excess(x.areas, y.areas, 15),
    'by function (self time):',
    ...excess(x.self, y.self, top),
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(summarizeProfile(process.argv[2]!, [], Number(process.argv[3] ?? 30)));
}

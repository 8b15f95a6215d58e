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

export function summarizeProfile(file: string, windows: { fromUs: number; toUs: number }[] = [], top = 25): string {
  const p = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  const areas = new Map<string, number>();
  let t = p.startTime;
  let total = 0;
  let idle = 0;
  let inWindows = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const dt = p.timeDeltas[i] ?? 0;
    t += dt;
    if (windows.length && !windows.some((w) => t >= w.fromUs && t <= w.toUs)) continue;
    inWindows += dt;
    const node = byId.get(p.samples[i]!)!;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') {
      idle += dt;
      continue;
    }
    total += dt;
    const name =
      `${functionName || '(anonymous)'} ${url ? `${url.replace(/^file:\/\//, '').replace(projectRoot + '/', '')}:${lineNumber + 1}` : ''}`.trim();
    self.set(name, (self.get(name) ?? 0) + dt);
    const a = ['(garbage collector)', '(program)'].includes(functionName) ? functionName : area(url);
    areas.set(a, (areas.get(a) ?? 0) + dt);
  }
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

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(summarizeProfile(process.argv[2]!, [], Number(process.argv[3] ?? 30)));
}

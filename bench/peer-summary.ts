/**
 * `npm run bench -- --peer --runs=N`: the runs' ratios to the peer side by side, each one's median,
 * and in how many runs each target held. Two runs on one machine, minutes apart, differ by more
 * than most of the gaps being judged (the peer's own rate by up to a third), so a target is stated
 * as how often it held over the runs of one sitting, not as one run's figure.
 *
 * The targets, as ratios project / peer: rate ≥ 2× to one endpoint and ≥ 1.5× over the hundred,
 * p50 and p99 ≤ 1×, machine CPU per delivery ≤ 0.5×. The sparse phase is paced (its rate is the
 * pace) and its CPU mostly the idle machine's, so only its latencies have a target.
 */
import { PHASES, phaseLabels, type PeerResults, type PhaseFigures, type PhaseKey } from './peer.js';
import { machineLine } from './machine.js';
import { pct } from './percentile.js';
import { printColumns } from './table.js';

export type Figure = 'rate' | 'p50' | 'p99' | 'cpu';
const FIGURES: readonly Figure[] = ['rate', 'p50', 'p99', 'cpu'];
const FIGURE_NAMES: Record<Figure, string> = {
  rate: 'deliveries/s',
  p50: 'p50 publish → receipt',
  p99: 'p99 publish → receipt',
  cpu: 'machine CPU per delivery',
};

/** A target as a ratio: at least (rate) or at most (latency, CPU) `ratio`. */
export interface Target {
  atLeast: boolean;
  ratio: number;
}

export function targetOf(phase: PhaseKey, figure: Figure): Target | undefined {
  if (figure === 'p50' || figure === 'p99') return { atLeast: false, ratio: 1 };
  if (phase === 'sparse') return undefined;
  if (figure === 'cpu') return { atLeast: false, ratio: 0.5 };
  return { atLeast: true, ratio: phase === 'manyFirst' || phase === 'manyWarm' ? 1.5 : 2 };
}

const valueOf = (f: PhaseFigures, figure: Figure): number =>
  figure === 'rate' ? f.perSecond : figure === 'p50' ? f.p50Ms : figure === 'p99' ? f.p99Ms : f.cpuMsPerDelivery;

export interface RatioRow {
  phase: PhaseKey;
  figure: Figure;
  /** Per run, project / peer; undefined where either system failed the phase (or no peer ran). */
  ratios: (number | undefined)[];
  /** The median of the runs that have a ratio (nearest rank, as every benchmark's percentiles). */
  median: number | undefined;
  target: Target | undefined;
  /** Runs whose ratio met the target (unrounded: a 1.996× shown as 2.00× is no 2×), of the runs with a ratio. */
  met: number;
  measured: number;
}

/** Every phase's four ratios over the runs, with their median and how often each target held. */
export function peerRatios(runs: readonly PeerResults[]): RatioRow[] {
  return PHASES.flatMap((phase) =>
    FIGURES.map((figure) => {
      const ratios = runs.map((r) => {
        const a = r.project.phases?.[phase];
        const b = r.peer?.phases?.[phase];
        return a && b && valueOf(b, figure) > 0 ? valueOf(a, figure) / valueOf(b, figure) : undefined;
      });
      const measuredRatios = ratios.filter((x): x is number => x !== undefined);
      const target = targetOf(phase, figure);
      const met = target ? measuredRatios.filter((x) => (target.atLeast ? x >= target.ratio : x <= target.ratio)).length : 0;
      const median = measuredRatios.length
        ? pct(
            [...measuredRatios].sort((x, y) => x - y),
            50,
          )
        : undefined;
      return { phase, figure, ratios, median, target, met, measured: measuredRatios.length };
    }),
  );
}

/** The table after the runs' own: a column per run, the median, the target and how often it held; then each run's machine line. */
export function printPeerSummary(runs: readonly PeerResults[]): void {
  const labels = phaseLabels(runs[0]!.events);
  const x = (v: number | undefined) => (v === undefined ? '' : `${v.toFixed(2)}×`);
  const rows: string[][] = [['phase', 'figure, project / Svix', ...runs.map((_, i) => `run ${i + 1}`), 'median', 'target', 'met in']];
  let phaseShown: PhaseKey | undefined;
  for (const row of peerRatios(runs)) {
    rows.push([
      row.phase === phaseShown ? '' : labels[row.phase],
      FIGURE_NAMES[row.figure],
      ...row.ratios.map(x),
      x(row.median),
      row.target ? `${row.target.atLeast ? '≥' : '≤'} ${row.target.ratio}×` : '',
      row.target ? `${row.met} of ${row.measured}` : '',
    ]);
    phaseShown = row.phase;
  }
  console.log('');
  console.log(`Over ${runs.length} runs back to back (each run's table above):`);
  printColumns(rows);
  for (const [i, r] of runs.entries()) console.log(`run ${i + 1}: ${machineLine(r.machine)}`);
  console.log('');
}

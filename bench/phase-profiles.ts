/**
 * `npm run bench -- --peer --profile`: the project's API and worker processes run with
 * `--cpu-prof`; each phase's window is noted on the monotonic clock the profiles are stamped with;
 * once the shape has stopped (a process writes its profile as it exits), each process's top self
 * time in each phase goes to profiles.txt beside the profiles.
 */
import fs from 'node:fs';
import path from 'node:path';
import { compareWindows, mainThreadProfile, monoUs, summarizeProfile } from './profile-summary.js';

export interface PhaseProfiles {
  /** Node's flags for the process named `name` (api-1, worker-2). */
  nodeArgs: (name: string) => string[];
  /** Notes each phase's window. */
  watcher: { start(): void; finish(phase: string): void };
  /** Writes the summaries; the file's path. */
  summarize(): string;
}

/** Undefined without `--profile` among the arguments. */
export function profileOption(argv: string[], dir: string): PhaseProfiles | undefined {
  if (!argv.includes('--profile')) return undefined;
  fs.rmSync(dir, { recursive: true, force: true });
  const windows: { phase: string; fromUs: number; toUs: number }[] = [];
  let fromUs = 0;
  return {
    nodeArgs: (name) => ['--cpu-prof', `--cpu-prof-dir=${path.join(dir, name)}`],
    watcher: {
      start: () => {
        fromUs = monoUs();
      },
      finish: (phase) => {
        windows.push({ phase, fromUs, toUs: monoUs() });
      },
    },
    summarize() {
      const out: string[] = [];
      const names = fs.existsSync(dir) ? fs.readdirSync(dir).filter((n) => fs.statSync(path.join(dir, n)).isDirectory()) : [];
      const profiles = names.sort().map((name) => ({ name, file: mainThreadProfile(path.join(dir, name)) }));
      for (const w of windows)
        for (const { name, file } of profiles)
          out.push(`== ${w.phase}: ${name}`, file ? summarizeProfile(file, [w], 20) : '(no profile written)', '');
      // What the first deliveries after the start cost beyond the same number warm: code V8 has not optimised yet.
      const [cold, warm] = [windows.find((w) => w.phase === 'cold'), windows.find((w) => w.phase === 'warm')];
      if (cold && warm)
        for (const { name, file } of profiles) if (file) out.push(`== cold beyond warm: ${name}`, compareWindows(file, cold, warm), '');
      const file = path.join(dir, 'profiles.txt');
      fs.writeFileSync(file, out.join('\n'));
      // The phases' windows on the profiles' clock, for a closer look at the raw profiles than the summary's.
      fs.writeFileSync(path.join(dir, 'windows.json'), JSON.stringify(windows));
      return file;
    },
  };
}

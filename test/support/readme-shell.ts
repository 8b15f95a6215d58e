/**
 * Runs a README's shell blocks as a person would: extracted from the markdown, run with bash,
 * each command's exit status checked (`set -e`, `pipefail`), long-running ones in the background
 * in a process group of their own, as a terminal runs its foreground job.
 */
import { spawn, type ChildProcess } from 'node:child_process';

/** The first ```sh block after the heading that starts with `heading`, before the next heading of its level. */
export function shBlock(markdown: string, heading: string): string {
  const start = markdown.split('\n').findIndex((line) => line.startsWith(heading));
  if (start < 0) throw new Error(`no heading "${heading}"`);
  const rest = markdown.split('\n').slice(start + 1);
  const level = heading.match(/^#+/)![0];
  const end = rest.findIndex((line) => line.startsWith(`${level} `));
  const section = (end < 0 ? rest : rest.slice(0, end)).join('\n');
  const block = section.match(/```sh\n([\s\S]*?)```/);
  if (!block) throw new Error(`no sh block under "${heading}"`);
  return block[1]!;
}

/** Every ```sh block of a markdown file, in order. */
export function shBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

/**
 * A shell function that stands in for curl in a README block: the same call, and after it a line
 * `curl: HTTP <status> <method> <url>` on stderr (the block's stdout and what it captures are
 * unchanged), so a test sees every answer's status, not just curl's exit status.
 */
export const CURL_STATUS = `curl() { command curl -w '%{stderr}\\ncurl: HTTP %{http_code} %{method} %{url_effective}\\n' "$@"; }
`;

/** The statuses CURL_STATUS reported, in order. */
export function curlStatuses(output: string): { status: number; method: string; url: string }[] {
  // Not anchored at a line's start: the body before it, on stdout, ends without a newline.
  return [...output.matchAll(/curl: HTTP (\d+) (\S+) (\S+)$/gm)].map((m) => ({ status: Number(m[1]), method: m[2]!, url: m[3]! }));
}

/** The parts of a block that begin with `# Terminal N:` comments, in order. */
export function terminals(block: string): string[] {
  return block.split(/^(?=# Terminal \d+:)/m).filter((part) => part.startsWith('# Terminal'));
}

/** Replaces the placeholder line `NAME=…` a person fills in by hand; throws when the block has none. */
export function fillIn(script: string, name: string, value: string): string {
  const line = new RegExp(`^${name}=\\S*….*$`, 'gm');
  if (!line.test(script)) throw new Error(`no "${name}=…" line to fill in`);
  return script.replace(line, `${name}=${value}`);
}

// A terminal's shell outlives Ctrl-C and reports its job's status: trapped (not ignored, which
// children would inherit), SIGINT leaves this shell to the command's own exit.
const PRELUDE = `set -eo pipefail
trap 'echo "README command failed with exit status $?: $BASH_COMMAND" >&2' ERR
trap ':' INT
`;

export interface Shell {
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code (128 + n for a signal). */
  exited: Promise<number>;
  /** Waits until the output matches, failing when the shell exits first or the time is up. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Sends the signal to the shell's whole process group, as Ctrl-C in its terminal would. */
  signal(signal: NodeJS.Signals): void;
}

export function startShell(script: string, env: NodeJS.ProcessEnv, cwd: string): Shell {
  const child = spawn('bash', ['-c', PRELUDE + script], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  let code: number | undefined;
  const exited = new Promise<number>((resolve) =>
    child.on('close', (c, s) => {
      code = c ?? 128 + (s === 'SIGINT' ? 2 : s === 'SIGTERM' ? 15 : 9);
      resolve(code);
    }),
  );
  return {
    child,
    output: () => output,
    exited,
    signal: (signal) => {
      if (code === undefined) process.kill(-child.pid!, signal);
    },
    waitFor: async (pattern, timeoutMs = 90_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const match = output.match(pattern);
        if (match) return match;
        if (code !== undefined) throw new Error(`the shell exited (${code}) before printing ${pattern}:\n${output}`);
        if (Date.now() > deadline) throw new Error(`no ${pattern} within ${timeoutMs / 1000} s:\n${output}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    },
  };
}

/** Runs a script to its end; rejects with its output when it exits non-zero. */
export async function runShell(script: string, env: NodeJS.ProcessEnv, cwd: string): Promise<string> {
  const shell = startShell(script, env, cwd);
  const code = await shell.exited;
  if (code !== 0) throw new Error(`exit status ${code}:\n${shell.output()}`);
  return shell.output();
}

/**
 * Carries out the repo's Dockerfile without a Docker engine (none on the development machines):
 * each stage gets a folder of its own standing in for its file system, so a stage sees only what
 * the Dockerfile copies into it; the local Node stands in for the `node:<major>` base image.
 * FROM, WORKDIR, ENV, COPY (the context filtered by .dockerignore, or `--from=<stage>`), RUN,
 * USER and CMD are carried out or recorded; any other instruction is an error naming it, so a
 * later change of the Dockerfile cannot be skipped silently.
 *
 * `tsx dev/dockerfile-build.ts [out-dir]` builds into out-dir (a fresh temporary folder when
 * omitted) and prints where each stage's folder is.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from './tools.js';

export interface Instruction {
  keyword: string;
  args: string;
  line: number;
}

export interface Stage {
  /** `AS <name>`, or its index when unnamed. */
  name: string;
  image: string;
  /** The stage's file system: a container path /x is `<root>/x`. */
  root: string;
  workdir: string;
  env: Record<string, string>;
  user: string;
  cmd?: string[];
  /** How long each RUN step took, in seconds. */
  runSeconds: number[];
}

export interface DockerfileBuild {
  stages: Stage[];
  /** The last stage: what the image is. */
  final: Stage;
  /** The stage's WORKDIR on this machine. */
  workdirOf(stage: Stage): string;
}

const SUPPORTED = new Set(['FROM', 'WORKDIR', 'ENV', 'COPY', 'RUN', 'USER', 'CMD']);

/** Instructions with their line numbers: comments and blank lines dropped, `\` continuations joined. */
export function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let pending: { text: string; line: number } | undefined;
  text.split('\n').forEach((raw, i) => {
    const line = raw.trimEnd();
    if (!pending && (line.trim() === '' || line.trimStart().startsWith('#'))) return;
    // A comment inside a continued instruction is dropped too, as Docker does.
    if (pending && line.trimStart().startsWith('#')) return;
    const continued = line.endsWith('\\');
    const body = continued ? line.slice(0, -1) : line;
    pending = pending ? { ...pending, text: `${pending.text} ${body.trim()}` } : { text: body.trim(), line: i + 1 };
    if (continued) return;
    const match = /^(\S+)\s*(.*)$/.exec(pending.text)!;
    const keyword = match[1]!.toUpperCase();
    if (!SUPPORTED.has(keyword)) throw new Error(`Dockerfile line ${pending.line}: ${keyword} is not supported by dev/dockerfile-build.ts`);
    out.push({ keyword, args: match[2]!, line: pending.line });
    pending = undefined;
  });
  if (pending) throw new Error(`Dockerfile line ${pending.line}: ends inside a continued instruction`);
  return out;
}

/** `node:<major>[-variant]` with the local Node's major version: the only base image the local machine can stand in for. */
export function checkBaseImage(image: string): void {
  const major = process.versions.node.split('.')[0];
  const m = /^(?:docker\.io\/(?:library\/)?)?node:(\d+)(?:[.\d]*)(?:-[a-z0-9.-]+)?$/.exec(image);
  if (!m)
    throw new Error(
      `base image ${image} is not understood: only node:<major>[-variant] is (the local Node ${process.versions.node} stands in for it)`,
    );
  if (m[1] !== major)
    throw new Error(`base image ${image} is Node ${m[1]}, but the local Node standing in for it is ${process.versions.node}`);
}

/** A .dockerignore pattern as a regular expression over slash-separated paths relative to the context. */
function ignoreRegex(pattern: string): RegExp {
  const clean = path.posix.normalize(pattern.replace(/^\/+/, '')).replace(/\/+$/, '');
  let re = '';
  for (let i = 0; i < clean.length; i++) {
    const c = clean[i]!;
    if (c === '*' && clean[i + 1] === '*') {
      // `**/` matches any number of folders, including none.
      re += clean[i + 2] === '/' ? '(?:.*/)?' : '.*';
      i += clean[i + 2] === '/' ? 2 : 1;
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/** The context's .dockerignore as a predicate; `!` exceptions are refused rather than half-honoured. */
export function readDockerignore(context: string): (relative: string) => boolean {
  const file = path.join(context, '.dockerignore');
  const lines = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n') : [];
  const patterns = lines.map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  const bad = patterns.find((p) => p.startsWith('!') || p.includes('['));
  if (bad) throw new Error(`.dockerignore pattern ${bad} is not supported by dev/dockerfile-build.ts`);
  const regexes = patterns.map(ignoreRegex);
  // A path inside an excluded folder is excluded too.
  return (relative) => relative.split('/').some((_, i, parts) => regexes.some((r) => r.test(parts.slice(0, i + 1).join('/'))));
}

/** Splits the arguments of COPY or CMD: a JSON array (exec form) or words. */
function words(args: string): string[] {
  if (args.trimStart().startsWith('[')) return JSON.parse(args) as string[];
  return args.split(/\s+/).filter(Boolean);
}

function parseEnv(args: string, line: number): Record<string, string> {
  const out: Record<string, string> = {};
  // Only the `KEY=value` form, with unquoted values: enough for this Dockerfile, strict otherwise.
  for (const pair of args.split(/\s+/).filter(Boolean)) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=([^"'$\\]*)$/.exec(pair);
    if (!m) throw new Error(`Dockerfile line ${line}: ENV ${pair} is not supported (only KEY=value, unquoted)`);
    out[m[1]!] = m[2]!;
  }
  return out;
}

/** Copies a file, symlink or folder, skipping what `ignored` says (paths relative to the context); as Docker does, a folder's contents go into `to`. */
function copyTree(from: string, to: string, ignored: (relative: string) => boolean, relative: string): void {
  if (relative && ignored(relative)) return;
  const stat = fs.lstatSync(from);
  if (stat.isSymbolicLink()) {
    fs.rmSync(to, { force: true, recursive: true });
    fs.symlinkSync(fs.readlinkSync(from), to);
  } else if (stat.isDirectory()) {
    fs.mkdirSync(to, { recursive: true, mode: stat.mode & 0o7777 });
    for (const name of fs.readdirSync(from))
      copyTree(path.join(from, name), path.join(to, name), ignored, relative ? `${relative}/${name}` : name);
  } else {
    fs.copyFileSync(from, to);
    fs.chmodSync(to, stat.mode & 0o7777);
  }
}

/** The users the node images define (uid and gid), by the names USER may give. */
const IMAGE_USERS: Record<string, { uid: number; gid: number }> = { root: { uid: 0, gid: 0 }, node: { uid: 1000, gid: 1000 } };

/** The uid and gid a stage's USER runs as; an error for a user the base image does not define. */
export function userIds(stage: Stage): { uid: number; gid: number } {
  const ids = IMAGE_USERS[stage.user];
  if (!ids) throw new Error(`USER ${stage.user} is not a user of ${stage.image} (known: ${Object.keys(IMAGE_USERS).join(', ')})`);
  return ids;
}

/**
 * The environment of a RUN step and of the image's processes: the stage's ENV over a clean base.
 * Nothing of an enclosing `npm run` (npm_* variables, its node_modules/.bin on PATH) leaks in, so
 * a step cannot find a tool the stage itself does not have.
 */
export function stageEnv(stage: Stage, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const PATH = (process.env.PATH ?? '')
    .split(':')
    .filter((p) => p && !p.includes(`${path.sep}node_modules${path.sep}`))
    .join(':');
  return { PATH, HOME: process.env.HOME ?? os.homedir(), ...stage.env, ...extra };
}

function run(argv: string[], cwd: string, env: NodeJS.ProcessEnv, log: (chunk: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let tail = '';
    const take = (c: Buffer) => {
      log(c.toString());
      tail = (tail + c.toString()).slice(-4000);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`RUN ${argv.join(' ')} exited with ${code}:\n${tail}`))));
  });
}

/** COPY [--from=<stage>] <src>... <dest>: from the context (with .dockerignore) or from an earlier stage's folder. */
function copyInstruction(o: {
  stage: Stage;
  stages: Stage[];
  args: string;
  where: string;
  context: string;
  ignored: (relative: string) => boolean;
  at: (stage: Stage, p: string) => string;
}): void {
  const { stage, where, at } = o;
  const parts = words(o.args);
  const flags = parts.filter((p) => p.startsWith('--'));
  const from = flags.length === 1 ? /^--from=(\S+)$/.exec(flags[0]!)?.[1] : undefined;
  if (flags.length > 1 || (flags.length === 1 && !from))
    throw new Error(`${where}: COPY ${flags.join(' ')} is not supported (only --from=<stage>)`);
  const rest = parts.filter((p) => !p.startsWith('--'));
  if (rest.length < 2) throw new Error(`${where}: COPY needs a source and a destination`);
  const dest = rest.pop()!;
  const source = from ? o.stages.find((s) => s.name === from && s !== stage) : undefined;
  if (from && !source) throw new Error(`${where}: COPY --from=${from} names no earlier stage`);
  const intoFolder = dest.endsWith('/') || rest.length > 1;
  for (const src of rest) {
    if (/[*?[]/.test(src)) throw new Error(`${where}: COPY with a wildcard (${src}) is not supported`);
    // From the context: paths are relative to it and .dockerignore applies; from a stage: container paths, nothing ignored.
    const relative = source
      ? ''
      : path.posix
          .normalize(src)
          .replace(/^\/+|\/+$/g, '')
          .replace(/^\.$/, '');
    const abs = source ? at(source, src) : path.join(o.context, relative);
    if (!fs.existsSync(abs) || (relative && o.ignored(relative))) throw new Error(`${where}: COPY source ${src} does not exist`);
    const isDir = fs.statSync(abs).isDirectory();
    const target = intoFolder && !isDir ? path.join(at(stage, dest), path.basename(abs)) : at(stage, dest);
    fs.mkdirSync(isDir ? target : path.dirname(target), { recursive: true });
    copyTree(abs, target, source ? () => false : o.ignored, relative);
  }
}

export interface BuildOptions {
  /** Where the stages' folders go; a fresh temporary folder when omitted. */
  outDir?: string;
  context?: string;
  dockerfile?: string;
  /** The output of RUN steps; dropped when omitted. */
  log?: (chunk: string) => void;
}

export async function buildDockerfile(opts: BuildOptions = {}): Promise<DockerfileBuild> {
  const context = opts.context ?? projectRoot;
  const text = fs.readFileSync(opts.dockerfile ?? path.join(context, 'Dockerfile'), 'utf8');
  const outDir = opts.outDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'dockerfile-build-'));
  // Inside the context, `COPY . .` would copy the stages into themselves.
  if (!path.relative(path.resolve(context), path.resolve(outDir)).startsWith('..'))
    throw new Error(`the output folder ${outDir} is inside the build context ${context}`);
  fs.mkdirSync(outDir, { recursive: true });
  // mkdtemp makes it 0700: a stage's USER (not root) must reach its files, as in the image.
  fs.chmodSync(outDir, 0o755);
  const log = opts.log ?? (() => {});
  const ignored = readDockerignore(context);
  const stages: Stage[] = [];
  const at = (stage: Stage, p: string) => path.join(stage.root, path.posix.resolve(stage.workdir, p));
  let stage: Stage | undefined;
  for (const { keyword, args, line } of parseDockerfile(text)) {
    const where = `Dockerfile line ${line}`;
    // Docker substitutes variables in these; this builder does not, so it refuses them.
    if (keyword !== 'RUN' && keyword !== 'CMD' && args.includes('$'))
      throw new Error(`${where}: variables in ${keyword} ($) are not supported by dev/dockerfile-build.ts`);
    if (keyword === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args.trim());
      if (!m) throw new Error(`${where}: FROM ${args} is not supported (only FROM <image> [AS <name>])`);
      checkBaseImage(m[1]!);
      const name = m[2] ?? String(stages.length);
      const root = path.join(outDir, `stage-${stages.length}-${name}`);
      fs.mkdirSync(root, { recursive: true, mode: 0o755 });
      stage = { name, image: m[1]!, root, workdir: '/', env: {}, user: 'root', runSeconds: [] };
      stages.push(stage);
      continue;
    }
    if (!stage) throw new Error(`${where}: ${keyword} before any FROM`);
    if (keyword === 'WORKDIR') {
      stage.workdir = path.posix.resolve(stage.workdir, args.trim());
      fs.mkdirSync(at(stage, '.'), { recursive: true, mode: 0o755 });
    } else if (keyword === 'ENV') Object.assign(stage.env, parseEnv(args, line));
    else if (keyword === 'USER') stage.user = args.trim();
    else if (keyword === 'CMD') stage.cmd = args.trimStart().startsWith('[') ? words(args) : ['/bin/sh', '-c', args.trim()];
    else if (keyword === 'RUN') {
      if (args.trimStart().startsWith('[')) throw new Error(`${where}: RUN in exec form is not supported`);
      if (stage.user !== 'root') throw new Error(`${where}: RUN after USER ${stage.user} is not supported`);
      log(`[${stage.name}] RUN ${args}\n`);
      // The npm cache of this machine serves `npm ci` where it can (no network round trip per package);
      // this machine's own npm settings (~/.npmrc) are not the image's.
      const npm = { npm_config_prefer_offline: 'true', npm_config_userconfig: path.join(outDir, 'no-user-npmrc') };
      const started = Date.now();
      await run(['sh', '-c', args], at(stage, '.'), stageEnv(stage, npm), log);
      stage.runSeconds.push(Math.round((Date.now() - started) / 100) / 10);
    } else if (keyword === 'COPY') copyInstruction({ stage, stages, args, where, context, ignored, at });
  }
  if (!stage) throw new Error('the Dockerfile has no FROM');
  const final = stage;
  return { stages, final, workdirOf: (s) => at(s, '.') };
}

async function main() {
  const build = await buildDockerfile({ outDir: process.argv[2], log: (c) => process.stdout.write(c) });
  for (const s of build.stages)
    console.log(`stage ${s.name} (${s.image}): ${build.workdirOf(s)}; RUN steps took ${s.runSeconds.join(', ') || '-'} s`);
  console.log(`image: USER ${build.final.user}, CMD ${JSON.stringify(build.final.cmd)}, ENV ${JSON.stringify(build.final.env)}`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.join(projectRoot, 'dev', 'dockerfile-build.ts')) await main();

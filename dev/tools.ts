/**
 * Finds or installs the binaries this machine cannot download directly: the Temporal CLI
 * (dev server + Web UI) and, for the production shape (`npm run production`), the Temporal
 * server, its SQL schema tool and the Web UI server, all built from the Go module proxy at the
 * versions the CLI pins; and the Java time-skipping test server, fetched from Maven Central, both in `.tools/` (ignored by git) so the slow step
 * happens once per machine; and Debian's Chromium for the console's browser test, installed
 * with apt (never a browser build downloaded from elsewhere).
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const toolsDir = path.resolve(process.env.TOOLS_DIR || path.join(projectRoot, '.tools'));

const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';
// The versions github.com/temporalio/cli v1.5.1 pins in its go.mod: the shape runs what the dev server embeds.
export const TEMPORAL_SERVER_VERSION = 'v1.29.1';
const UI_SERVER_VERSION = 'v2.42.1';
/** Binary name in .tools/bin -> Go package it is built from (its own name, `server` or `sql`, says too little). */
const SERVER_TOOLS = {
  'temporal-server': `go.temporal.io/server/cmd/server@${TEMPORAL_SERVER_VERSION}`,
  'temporal-sql-tool': `go.temporal.io/server/cmd/tools/sql@${TEMPORAL_SERVER_VERSION}`,
  'temporal-ui-server': `github.com/temporalio/ui-server/v2/cmd/server@${UI_SERVER_VERSION}`,
} as const;
const TEST_SERVER_ARTIFACT = { groupId: 'io.temporal', artifactId: 'temporal-test-server', version: '1.31.0' };

function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv }): Promise<void> {
  return new Promise((resolve, reject) => {
    // stderr goes straight to the terminal so a slow first build shows its progress.
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} exited with ${code}`))));
  });
}

function onPath(binary: string): string | undefined {
  const found = spawnSync('sh', ['-c', `command -v ${binary}`], { encoding: 'utf8' });
  const out = found.stdout.trim();
  return found.status === 0 && out ? out : undefined;
}

function goEnv(gobin: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    GOBIN: gobin,
    GOMODCACHE: path.join(toolsDir, 'go', 'mod'),
    GOCACHE: path.join(toolsDir, 'go', 'cache'),
    GOFLAGS: '-modcacherw',
  };
}

/** `go install module@version` into `target` (a file path), through a private GOBIN since several packages build a binary called `server`. */
async function goInstall(module: string, target: string, what: string): Promise<void> {
  if (!onPath('go')) throw new Error(`${what} is not in ${path.dirname(target)} and Go is not installed to build it.`);
  process.stderr.write(`Building ${what} (${module}) into ${path.dirname(target)}; this takes a few minutes once.\n`);
  const started = Date.now();
  fs.mkdirSync(toolsDir, { recursive: true });
  const gobin = fs.mkdtempSync(path.join(toolsDir, 'gobin-'));
  try {
    await run('go', ['install', '-v', module], { env: goEnv(gobin) });
    const [built] = fs.readdirSync(gobin);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.renameSync(path.join(gobin, built!), target);
  } finally {
    fs.rmSync(gobin, { recursive: true, force: true });
  }
  process.stderr.write(`${what} built in ${Math.round((Date.now() - started) / 1000)} s.\n`);
}

/** The `temporal` CLI: from PATH, else `.tools/bin`, else built there once with `go install`. */
export async function ensureTemporalCli(): Promise<string> {
  const fromPath = onPath('temporal');
  if (fromPath) return fromPath;
  const local = path.join(toolsDir, 'bin', 'temporal');
  if (fs.existsSync(local)) return local;
  if (!onPath('go'))
    throw new Error('The Temporal CLI is not on PATH and Go is not installed to build it; set TEMPORAL_ADDRESS or install Go.');
  await goInstall(TEMPORAL_CLI_MODULE, local, 'the Temporal CLI');
  return local;
}

export interface TemporalServerTools {
  server: string;
  sqlTool: string;
  uiServer: string;
  /** `schema/` of the server module: the versioned SQL the sql tool applies (postgresql/v12/{temporal,visibility}/versioned). */
  schemaDir: string;
}

/** The Temporal server, its SQL tool and the Web UI server in `.tools/bin`, built once from the Go module proxy. */
export async function ensureTemporalServerTools(): Promise<TemporalServerTools> {
  const bin = (name: keyof typeof SERVER_TOOLS) => path.join(toolsDir, 'bin', name);
  for (const [name, module] of Object.entries(SERVER_TOOLS) as Array<[keyof typeof SERVER_TOOLS, string]>) {
    if (!fs.existsSync(bin(name))) await goInstall(module, bin(name), name);
  }
  const schemaDir = path.join(toolsDir, 'go', 'mod', `go.temporal.io/server@${TEMPORAL_SERVER_VERSION}`, 'schema');
  if (!fs.existsSync(schemaDir)) {
    // Binaries from an earlier machine state without the module source: fetch the module for its schema files.
    await run('go', ['mod', 'download', `go.temporal.io/server@${TEMPORAL_SERVER_VERSION}`], { env: goEnv(path.join(toolsDir, 'bin')) });
  }
  return { server: bin('temporal-server'), sqlTool: bin('temporal-sql-tool'), uiServer: bin('temporal-ui-server'), schemaDir };
}

/** Classpath of the Java time-skipping test server, fetched once with Maven. */
export async function ensureTestServerClasspath(): Promise<string> {
  const dir = path.join(toolsDir, `temporal-test-server-${TEST_SERVER_ARTIFACT.version}`);
  const lib = path.join(dir, 'lib');
  const marker = path.join(dir, '.complete');
  if (fs.existsSync(marker)) return `${lib}/*`;
  if (!onPath('java') || !onPath('mvn')) throw new Error('Java and Maven are needed to fetch the Temporal time-skipping test server.');
  fs.mkdirSync(dir, { recursive: true });
  const { groupId, artifactId, version } = TEST_SERVER_ARTIFACT;
  fs.writeFileSync(
    path.join(dir, 'pom.xml'),
    `<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
  <groupId>local.tools</groupId><artifactId>temporal-test-server-deps</artifactId><version>1</version>
  <dependencies><dependency><groupId>${groupId}</groupId><artifactId>${artifactId}</artifactId><version>${version}</version></dependency></dependencies>
</project>\n`,
  );
  process.stderr.write(`Fetching ${groupId}:${artifactId}:${version} from Maven Central into ${lib}.\n`);
  await run('mvn', ['-q', '-B', 'dependency:copy-dependencies', `-DoutputDirectory=${lib}`, '-DincludeScope=runtime'], { cwd: dir });
  fs.writeFileSync(marker, new Date().toISOString());
  return `${lib}/*`;
}

export const CHROMIUM_PATH = '/usr/bin/chromium';

/** Debian's Chromium at /usr/bin/chromium: installed with apt when missing and we are root. */
export async function ensureChromium(): Promise<string | undefined> {
  if (fs.existsSync(CHROMIUM_PATH)) return CHROMIUM_PATH;
  if (process.getuid?.() !== 0 || !onPath('apt-get')) {
    process.stderr.write(`${CHROMIUM_PATH} is missing and apt-get cannot run as root here; the console's browser test cannot run.\n`);
    return undefined;
  }
  process.stderr.write(`Installing Debian's chromium: apt-get update && apt-get install -y chromium\n`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await run('apt-get', ['update'], { env });
  await run('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], { env });
  return CHROMIUM_PATH;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const cli = await ensureTemporalCli();
  const server = await ensureTemporalServerTools();
  const cp = await ensureTestServerClasspath();
  const chromium = await ensureChromium();
  console.log(JSON.stringify({ temporal: cli, temporalServer: server, testServerClasspath: cp, chromium: chromium ?? null }));
}

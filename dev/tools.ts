/**
 * Finds or installs the binaries this machine cannot download directly: the Temporal CLI
 * (dev server + Web UI), built from the Go module proxy, and the Java time-skipping test
 * server, fetched from Maven Central, both in `.tools/` (ignored by git) so the slow step
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

/** The `temporal` CLI: from PATH, else `.tools/bin`, else built there once with `go install`. */
export async function ensureTemporalCli(): Promise<string> {
  const fromPath = onPath('temporal');
  if (fromPath) return fromPath;
  const local = path.join(toolsDir, 'bin', 'temporal');
  if (fs.existsSync(local)) return local;
  if (!onPath('go'))
    throw new Error('The Temporal CLI is not on PATH and Go is not installed to build it; set TEMPORAL_ADDRESS or install Go.');
  process.stderr.write(`Building the Temporal CLI (${TEMPORAL_CLI_MODULE}) into ${path.dirname(local)}; this takes a few minutes once.\n`);
  const started = Date.now();
  await run('go', ['install', '-v', TEMPORAL_CLI_MODULE], {
    env: {
      ...process.env,
      GOBIN: path.dirname(local),
      GOMODCACHE: path.join(toolsDir, 'go', 'mod'),
      GOCACHE: path.join(toolsDir, 'go', 'cache'),
      GOFLAGS: '-modcacherw',
    },
  });
  process.stderr.write(`Temporal CLI built in ${Math.round((Date.now() - started) / 1000)} s.\n`);
  return local;
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
  const cp = await ensureTestServerClasspath();
  const chromium = await ensureChromium();
  console.log(JSON.stringify({ temporal: cli, testServerClasspath: cp, chromium: chromium ?? null }));
}

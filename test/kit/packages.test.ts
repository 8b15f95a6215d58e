/**
 * The client packages as a user gets them: built (into a temporary copy, never the tree's
 * packages/<name>/dist, which other test files run at the same time), packed with `npm pack`, installed from the
 * tarballs into an empty project outside this repository (third-party dependencies from the npm
 * cache or registry), then used on plain Node: the SDK imported as ESM against a running API,
 * the `webhooks` bin, and the MCP server's stdio handshake.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../dev/tools.js';
import { createTenant, startTestApi, type Tenant, type TestApi } from '../support/harness.js';

const exec = promisify(execFile);
const PACKAGES = ['sdk', 'cli', 'mcp'] as const;
const VERSION = '0.12.0';

/** The environment without the npm_* variables of an enclosing `npm test`, which would steer the child npm. */
const cleanEnv = () =>
  Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_'))) as NodeJS.ProcessEnv;
const npm = (cwd: string, args: string[]) => exec('npm', args, { cwd, env: cleanEnv(), timeout: 120_000 });

interface Packed {
  filename: string;
  files: { path: string }[];
}

let scratch: string;
let packed: Packed[];
let api: TestApi;
let tenant: Tenant;

/**
 * Builds a package from the tree's source into a copy of it under `dir` (its manifest, README,
 * bin and a fresh dist/), never into packages/<name>/dist: other test files run `npx webhooks`
 * off that dist at the same time. The copy's CLI and MCP compile against the copy's SDK.
 */
async function buildCopy(dir: string, name: (typeof PACKAGES)[number]): Promise<string> {
  const source = path.join(projectRoot, 'packages', name);
  const copy = path.join(dir, name);
  fs.mkdirSync(copy, { recursive: true });
  for (const entry of ['package.json', 'README.md', 'bin']) {
    if (fs.existsSync(path.join(source, entry))) fs.cpSync(path.join(source, entry), path.join(copy, entry), { recursive: true });
  }
  const tsconfig = path.join(copy, 'tsconfig.build.json');
  fs.writeFileSync(
    tsconfig,
    JSON.stringify({
      extends: path.join(source, 'tsconfig.build.json'),
      compilerOptions: {
        outDir: path.join(copy, 'dist'),
        rootDir: path.join(source, 'src'),
        typeRoots: [path.join(projectRoot, 'node_modules/@types')],
        paths: { '@webhook-platform/sdk': [path.join(dir, 'sdk/dist/index.d.ts')] },
      },
      include: [path.join(source, 'src')],
    }),
  );
  await exec(path.join(projectRoot, 'node_modules/.bin/tsc'), ['-p', tsconfig], { cwd: copy, timeout: 120_000 });
  return copy;
}

/** The tree's packages/<name>/dist as files and their modification times, to show the test left them alone. */
function treeDists(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of PACKAGES) {
    const dist = path.join(projectRoot, 'packages', name, 'dist');
    if (!fs.existsSync(dist)) continue;
    for (const entry of fs.readdirSync(dist, { withFileTypes: true, recursive: true })) {
      const file = path.join(entry.parentPath, entry.name);
      if (entry.isFile()) out[path.relative(projectRoot, file)] = fs.statSync(file).mtimeMs;
    }
  }
  return out;
}
let distsBefore: Record<string, number>;

beforeAll(async () => {
  distsBefore = treeDists();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'webhooks-packages-'));
  const tarballs = path.join(dir, 'tarballs');
  scratch = path.join(dir, 'app');
  fs.mkdirSync(tarballs);
  fs.mkdirSync(scratch);
  const copies = path.join(dir, 'packages');
  // The SDK first: the CLI and the MCP server compile against its declarations.
  const sdk = await buildCopy(copies, 'sdk');
  const others = await Promise.all([buildCopy(copies, 'cli'), buildCopy(copies, 'mcp')]);
  packed = [];
  for (const copy of [sdk, ...others]) {
    // Built just above; --ignore-scripts skips the package's prepack, which would build it again.
    const pack = await npm(copy, ['pack', '--ignore-scripts', '--json', '--pack-destination', tarballs]);
    packed.push(...(JSON.parse(pack.stdout) as Packed[]));
  }
  fs.writeFileSync(path.join(scratch, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
  // The SDK tarball goes in alongside: the CLI depends on @webhook-platform/sdk 0.12.0.
  const files = packed.map((p) => path.join(tarballs, p.filename));
  await npm(scratch, ['install', '--prefer-offline', '--no-audit', '--no-fund', ...files]);
  [api, tenant] = await Promise.all([startTestApi(), createTenant()]);
}, 150_000);

afterAll(async () => {
  await api?.close();
  if (scratch) fs.rmSync(path.dirname(scratch), { recursive: true, force: true });
});

describe('the packed client packages', () => {
  it("are built without touching the tree's packages/*/dist", () => {
    expect(treeDists()).toEqual(distsBefore);
  });

  it('ship compiled JavaScript with declarations, no TypeScript source and no tsx', () => {
    expect(packed.map((p) => p.filename)).toEqual(PACKAGES.map((p) => `webhook-platform-${p}-${VERSION}.tgz`));
    for (const p of packed) {
      const paths = p.files.map((f) => f.path);
      expect(paths).toContain(p.filename.includes('-sdk-') ? 'dist/index.js' : 'dist/main.js');
      expect(paths.some((f) => f.endsWith('.d.ts'))).toBe(true);
      expect(paths.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    }
    const manifest = (name: string) =>
      JSON.parse(fs.readFileSync(path.join(scratch, 'node_modules/@webhook-platform', name, 'package.json'), 'utf8'));
    expect(manifest('sdk').exports['.']).toMatchObject({ types: './dist/index.d.ts', default: './dist/index.js' });
    expect(manifest('cli').bin).toEqual({ webhooks: './bin/webhooks.js' });
    expect(manifest('mcp').bin).toEqual({ 'webhooks-mcp': './bin/webhooks-mcp.js' });
    expect(manifest('cli').dependencies).not.toHaveProperty('tsx');
    expect(fs.existsSync(path.join(scratch, 'node_modules/tsx'))).toBe(false);
  });

  it('the SDK imports as ESM on plain Node and calls a running API', async () => {
    fs.writeFileSync(
      path.join(scratch, 'check.mjs'),
      `import { WebhookPlatform, WebhookPlatformError, SDK_VERSION } from '@webhook-platform/sdk';
const client = new WebhookPlatform({ apiKey: process.env.KEY, baseUrl: process.env.BASE_URL });
const types = await client.eventTypes.list();
const endpoints = await client.webhooks.list();
const denied = await new WebhookPlatform({ apiKey: 'wh_live_wrong', baseUrl: process.env.BASE_URL, maxRetries: 0 }).webhooks.list().catch((e) => e);
console.log(JSON.stringify({ version: SDK_VERSION, types: types.length, endpoints: endpoints.data, denied: denied instanceof WebhookPlatformError ? denied.status : String(denied) }));
`,
    );
    const { stdout } = await exec(process.execPath, ['check.mjs'], {
      cwd: scratch,
      env: { ...cleanEnv(), KEY: tenant.key, BASE_URL: `${api.url}/api/v1` },
    });
    const result = JSON.parse(stdout);
    expect(result).toMatchObject({ version: VERSION, endpoints: [], denied: 401 });
    expect(result.types).toBeGreaterThan(0);
  });

  it('the webhooks bin runs: --help, and a command against the API', async () => {
    const bin = path.join(scratch, 'node_modules/.bin/webhooks');
    const help = await exec(bin, ['--help'], { cwd: scratch, env: cleanEnv() });
    expect(help.stdout).toContain('Usage: webhooks');
    const env = {
      ...cleanEnv(),
      WEBHOOKS_CONFIG: path.join(scratch, 'webhooks-config.json'),
      WEBHOOKS_API_KEY: tenant.key,
      WEBHOOKS_BASE_URL: `${api.url}/api/v1`,
    };
    const list = await exec(bin, ['--json', 'endpoints', 'list'], { cwd: scratch, env });
    expect(JSON.parse(list.stdout)).toMatchObject({ data: [] });
  });

  it('the MCP server answers the stdio handshake', async () => {
    const transport = new StdioClientTransport({
      command: path.join(scratch, 'node_modules/.bin/webhooks-mcp'),
      cwd: scratch,
      env: { ...getDefaultEnvironment(), WEBHOOKS_BASE_URL: api.url, WEBHOOKS_API_KEY: tenant.key },
      stderr: 'inherit',
    });
    const client = new Client({ name: 'packages-test', version: '1.0.0' });
    try {
      await client.connect(transport);
      expect(client.getServerVersion()).toEqual({ name: 'webhook-platform', version: VERSION });
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain('list_endpoints');
    } finally {
      await client.close();
    }
  });
});

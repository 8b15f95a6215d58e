/**
 * The READMEs run as written: the quickstart, the curl session, the operator CLI, the MCP server,
 * the reference receiver's blocks and packages/cli/README.md's, extracted from the markdown and
 * run with bash against a real `npm start` (dev mode, a fresh DATA_DIR and HOME), so the
 * documentation cannot drift from the product. What they print is checked, and every curl's HTTP
 * status. Then the frictions a first user met, and Ctrl-C: an ordered stop with exit status 0.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { runningEmbeddedPostgresUrl } from '../../dev/embedded-postgres.js';
import { freePort, isPortOpen } from '../../dev/ports.js';
import {
  CURL_STATUS,
  curlStatuses,
  fillIn,
  runShell,
  shBlock,
  shBlocks,
  startShell,
  terminals,
  type Shell,
} from '../support/readme-shell.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const receiverReadme = fs.readFileSync(path.join(ROOT, 'examples/receiver/README.md'), 'utf8');
const cliReadme = fs.readFileSync(path.join(ROOT, 'packages/cli/README.md'), 'utf8');
let quickstart: string[];
let session: string;
let production: string[];
let receiverRun: string[];

let env: NodeJS.ProcessEnv;
let home: string;
let port: number;
let service: Shell;
let listen: Shell | undefined;
let receiver: Shell | undefined;
let liveKey: string;
let postgresPort: number;
let listenPort: number;
let receiverPort: number;

/**
 * The READMEs name fixed ports for `listen` (4000) and the receiver (4200); on a shared machine
 * another run may hold them, so the test moves them, the only change made to the commands.
 */
const movePort = (script: string, from: number, to: number) => script.replace(new RegExp(`\\b${from}\\b`, 'g'), String(to));

/** A person's shell: none of the test run's settings, a HOME and DATA_DIR of its own. */
function userEnv(home: string, ports: Record<string, number>): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !/^(VITEST|WEBHOOKS_|WEBHOOK_|TEMPORAL_|DATABASE_URL|XDG_CONFIG_HOME|NODE_EXTRA_CA_CERTS|NODE_OPTIONS|LOG_|TEST)/.test(k),
    ),
  );
  return {
    ...clean,
    HOME: home,
    DATA_DIR: path.join(home, 'data'),
    ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
  };
}

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'readme-'));
  // Embedded Postgres runs as the `postgres` user on root-only machines: it must reach DATA_DIR.
  fs.chmodSync(home, 0o755);
  port = await freePort();
  [listenPort, receiverPort] = [await freePort(), await freePort()];
  const movePorts = (script: string) => movePort(movePort(script, 4000, listenPort), 4200, receiverPort);
  quickstart = terminals(movePorts(shBlock(readme, '## Five-minute quickstart')));
  session = movePorts(shBlock(readme, '## A session with curl'));
  production = terminals(movePorts(shBlock(readme, '### Production shape')));
  receiverRun = terminals(movePorts(shBlock(receiverReadme, '## Run it')));
  env = userEnv(home, {
    PORT: port,
    TEMPORAL_PORT: await freePort(),
    TEMPORAL_UI_PORT: await freePort(),
    LOCAL_PROVIDER_PORT: await freePort(),
  });
  expect(quickstart).toHaveLength(3);
  service = startShell(quickstart[0]!, env, ROOT);
  liveKey = (await service.waitFor(/live API key:\s+(wh_live_\S+)/, 150_000))[1]!;
  await service.waitFor(/npx webhooks listen --port \d+ --secret/, 150_000);
  postgresPort = (JSON.parse(fs.readFileSync(path.join(env.DATA_DIR!, 'postgres.json'), 'utf8')) as { port: number }).port;
}, 180_000);

afterAll(async () => {
  for (const shell of [listen, receiver, service]) {
    shell?.signal('SIGINT');
    await Promise.race([shell?.exited, new Promise((r) => setTimeout(r, 20_000))]);
    shell?.signal('SIGKILL');
  }
  // The embedded Postgres data (about 70 MB) is of no use after the run.
  if (home) fs.rmSync(home, { recursive: true, force: true });
}, 60_000);

describe('README.md, run as written', () => {
  it('the first start prints the next commands, and its key command works as written', async () => {
    const out = service.output();
    expect(out).toContain(`npx webhooks login --key ${liveKey} --base-url http://localhost:${port}/api/v1`);
    const keyCommand = out.match(/Make more with: (.+)/)![1]!;
    const made = JSON.parse(await runShell(keyCommand, env, ROOT)) as { key: string };
    expect(made.key).toMatch(/^wh_live_/);
  });

  it('the quickstart: listen verifies the test, the published event and the sent message statuses', async () => {
    listen = startShell(fillIn(quickstart[1]!, 'KEY', liveKey), env, ROOT);
    await listen.waitFor(new RegExp(`Listening on https://localhost:${listenPort}/hooks`));
    // Its hint can be pasted: `npx`, the url the README uses, the categories and the secret the quickstart's endpoint has.
    expect(listen.output()).toContain(
      `Then: npx webhooks endpoints create --url https://localhost:${listenPort}/hooks --events crm,statuses --secret whsec_quickstart_0123456789`,
    );
    const out = await runShell(CURL_STATUS + fillIn(quickstart[2]!, 'KEY', liveKey), env, ROOT);
    expect(out).toContain('webhook.test');
    // The publish is created.
    expect(curlStatuses(out).map((c) => [c.status, c.method, new URL(c.url).pathname])).toEqual([[201, 'POST', '/api/v1/events']]);
    // `deliveries list`: the audit table, the signed test's delivery a success with 200 and the event's delivery there.
    expect(out).toMatch(/^ID\s+EVENT_TYPE\s+STATUS\s+ATTEMPTS\s+CODE\s+CREATED_AT$/m);
    expect(out).toMatch(/^[0-9a-f-]{36}\s+webhook\.test\s+success\s+1\s+200\s/m);
    expect(out).toMatch(/^[0-9a-f-]{36}\s+crm\.demand\.created\s+(pending|success)\s/m);
    // `events tail --after 0`: the published event at its cursor, and the cursor to resume from.
    const published = out.match(/^\s*(\d+)\s+\S+\s+crm\.demand\.created\s+[0-9a-f-]{36}$/m);
    expect(published).not.toBeNull();
    const resume = out.match(/^cursor (\d+) \(resume with --after \1\)$/m);
    expect(Number(resume?.[1])).toBeGreaterThanOrEqual(Number(published![1]));
    for (const printed of [
      /verified {2}webhook\.test/,
      /verified {2}crm\.demand\.created {2}crm:demand:dem_1:1/,
      /verified {2}chatapp\.message\.sent/,
      /verified {2}chatapp\.message\.delivered/,
      /verified {2}chatapp\.message\.read/,
    ])
      await listen.waitFor(printed, 20_000);
    expect(listen.output()).not.toContain('refused');
    // Once they are in, the block's `deliveries list` line shows what its comment says: the test, the event and
    // the three statuses, each a success with 200.
    const listLine = quickstart[2]!.split('\n').find((l) => l.startsWith('npx webhooks deliveries list --endpoint $ID'))!;
    const endpoints = JSON.parse(await runShell('npx webhooks endpoints list --json', env, ROOT)) as {
      data: { id: string; url: string }[];
    };
    const id = endpoints.data.find((e) => e.url === `https://localhost:${listenPort}/hooks`)!.id;
    const wanted = ['webhook.test', 'crm.demand.created', 'chatapp.message.sent', 'chatapp.message.delivered', 'chatapp.message.read'];
    const shown = async () => {
      const table = await runShell(`ID=${id}\n${listLine}`, env, ROOT);
      return wanted.every((type) =>
        new RegExp(`^[0-9a-f-]{36}\\s+${type.replaceAll('.', '\\.')}\\s+success\\s+\\d+\\s+200\\s`, 'm').test(table),
      );
    };
    await expect.poll(shown, { timeout: 30_000, interval: 500 }).toBe(true);
  }, 150_000);

  it('the session with curl: the endpoint verifies, its delivery is read and resent by id', async () => {
    const out = await runShell(CURL_STATUS + session, env, ROOT);
    // Every curl got an answer of success, but the resend of a delivered delivery, which the README says is 409.
    const statuses = curlStatuses(out);
    expect(statuses.length).toBeGreaterThanOrEqual(15);
    const refused = statuses.filter((c) => c.status < 200 || c.status >= 300);
    expect(refused.filter((c) => !(c.status === 409 && c.method === 'POST' && c.url.endsWith('/resend')))).toEqual([]);
    // curl prints no newline after a body: the answers are read from the whole output.
    expect(out.match(/"success":true/g)).toHaveLength(2);
    expect(out).toContain('"attempts_log"');
    // The resend answers the delivery back to pending, or 409 for a delivered one; nothing else failed.
    const errors = [...out.matchAll(/"error":\{"code":"(\w+)"/g)].map((m) => m[1]);
    expect(errors.filter((code) => code !== 'not_resendable')).toEqual([]);
    expect(out).toMatch(/"recovered":\d+/);
  }, 120_000);
});

describe('README.md: the operator CLI and the MCP server, run as written', () => {
  it('webhooks-admin makes an Account and a key that the API accepts', async () => {
    const [createAccount, createKey] = shBlock(readme, '## Operator CLI').trim().split('\n');
    expect(createKey).toContain('--account ID');
    const account = await runShell(createAccount!, env, ROOT);
    const accountId = account.match(/^id\s+([0-9a-f-]{36})$/m)?.[1];
    expect(accountId, account).toBeDefined();
    expect(account).toMatch(/^name\s+Acme$/m);
    const key = JSON.parse(await runShell(createKey!.replace('--account ID', `--account ${accountId}`), env, ROOT));
    expect(key).toMatchObject({ account_id: accountId, environment: 'live', scopes: ['webhooks:read', 'events:read'] });
    const listed = await fetch(`http://127.0.0.1:${port}/api/v1/webhooks`, { headers: { 'x-api-key': key.key } });
    expect(listed.status).toBe(200);
    expect(await listed.json()).toMatchObject({ data: [] });
  }, 60_000);

  it('npx webhooks-mcp answers the MCP handshake and lists the endpoints', async () => {
    const block = shBlock(readme, '## MCP server');
    expect(block).toContain('WEBHOOKS_API_KEY=wh_live_…');
    const transport = new StdioClientTransport({
      command: 'bash',
      args: ['-c', block.replace('wh_live_…', liveKey)],
      cwd: ROOT,
      env: env as Record<string, string>,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'readme-test', version: '1.0.0' });
    try {
      await client.connect(transport);
      expect(client.getServerVersion()?.name).toBe('webhook-platform');
      const listed = await client.callTool({ name: 'list_endpoints', arguments: {} });
      expect(listed.isError).toBeFalsy();
      const [first] = listed.content as { type: string; text: string }[];
      // The quickstart's endpoint, through the base url the README gives.
      expect(first!.text).toContain(`https://localhost:${listenPort}/hooks`);
    } finally {
      await client.close();
    }
  }, 60_000);
});

describe('packages/cli/README.md, run as written', () => {
  /**
   * The synopsis block's commands, each with the options its line names: `a|b` and `… | get ID`
   * are alternatives, a placeholder (upper case, `…`, brackets) ends the command's words.
   */
  function synopsis(block: string): { path: string; options: string[] }[] {
    const out: { path: string; options: string[] }[] = [];
    for (const line of block.split('\n')) {
      const code = line.replace(/\s#.*$/, '').trim();
      if (!code.startsWith('webhooks ')) continue;
      let path: string[] = [];
      for (const segment of code.slice('webhooks '.length).split(/\s\|\s/)) {
        const words = segment.trim().split(/\s+/);
        const lead = words.findIndex((w) => !/^[a-z][a-z|-]*$/.test(w));
        const commandWords = lead < 0 ? words : words.slice(0, lead);
        const options = segment.match(/--[a-z][a-z-]*/g) ?? [];
        if (commandWords.length === 0) {
          // An alternative of options (`(--text BODY | --template NAME)`): the commands before take them too.
          for (const c of out.slice(-1)) c.options.push(...options);
          continue;
        }
        // `contacts list … | get ID`: the alternative replaces the last word.
        path = path.length === 0 ? commandWords : [...path.slice(0, -commandWords.length), ...commandWords];
        const last = path.at(-1)!;
        for (const alt of last.split('|')) out.push({ path: [...path.slice(0, -1), alt].join(' '), options: [...options] });
      }
    }
    return out;
  }

  it('each command of the synopsis exists, with the options its line names', async () => {
    const [block, devMode] = shBlocks(cliReadme);
    const commands = synopsis(block!);
    expect(commands.length).toBeGreaterThanOrEqual(30);
    // The README writes `webhooks`: the bin `npm install` links, on the PATH as a package manager puts it.
    const pathEnv = { ...env, PATH: `${path.join(ROOT, 'node_modules/.bin')}:${env.PATH}` };
    const script = ['webhooks --help', ...commands.map((c) => `echo "=== ${c.path}"; webhooks ${c.path} --help`)].join('\n');
    const out = await runShell(script, pathEnv, ROOT);
    const [rootHelp, ...helps] = out.split(/^=== .*$/m);
    expect(helps).toHaveLength(commands.length);
    commands.forEach((c, i) => {
      expect(helps[i], c.path).toMatch(new RegExp(`^Usage: webhooks ${c.path} `, 'm'));
      for (const option of c.options) expect(`${helps[i]}${rootHelp}`, `${c.path} ${option}`).toContain(option);
    });
    // Its second block starts the service in development mode, as the quickstart's Terminal 1 (run above) does.
    expect(quickstart[0]).toContain(devMode!.trim());
  }, 120_000);
});

describe('examples/receiver/README.md, run as written', () => {
  it('serves the listen certificate from the embedded Postgres url and verifies the signed test', async () => {
    expect(receiverRun).toHaveLength(2);
    receiver = startShell(receiverRun[0]!, env, ROOT);
    await receiver.waitFor(new RegExp(`receiver listening on https://127\\.0\\.0\\.1:${receiverPort}/`));
    const out = await runShell(receiverRun[1]!, env, ROOT);
    expect(out).toMatch(/webhook\.test\s+success/);
  }, 90_000);

  it('a Postgres it cannot reach stops it with one line, not a stack', async () => {
    const failed = startShell(
      'npm run --silent receiver',
      { ...env, RECEIVER_DATABASE_URL: 'postgres://u:secret@127.0.0.1:1/x', WEBHOOK_SECRETS: 'whsec_x' },
      ROOT,
    );
    expect(await failed.exited).toBe(2);
    const lines = failed
      .output()
      .trim()
      .split('\n')
      .filter((l) => !l.startsWith('npm warn') && !l.startsWith('README command failed'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^cannot use RECEIVER_DATABASE_URL \(postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/x\): ECONNREFUSED .*database url/);
  });
});

describe('README.md: the production shape with a local receiver, run as written', () => {
  /**
   * Its block in dev mode against the quickstart's `listen`, as light as it goes: the block's own
   * one API process and one worker, and a database of its own on the running Postgres server
   * (DATABASE_URL) rather than a second embedded server. It builds (npm run production does).
   */
  it('starts in dev mode, says so in its terminal, counts 1 process right, listens on every interface, and verifies an endpoint on the local receiver', async () => {
    expect(listen, 'the quickstart runs listen first').toBeDefined();
    expect(production).toHaveLength(2);
    const serverUrl = (await runningEmbeddedPostgresUrl(env.DATA_DIR!))!;
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    await admin.query('CREATE DATABASE production_readme');
    await admin.end();
    const databaseUrl = new URL(serverUrl);
    databaseUrl.pathname = '/production_readme';
    const prodEnv = {
      ...env,
      PORT: String(await freePort()),
      TEMPORAL_PORT: String(await freePort()),
      TEMPORAL_UI_PORT: String(await freePort()),
      DATABASE_URL: databaseUrl.toString(),
    };
    const shape = startShell(production[0]!, prodEnv, ROOT);
    try {
      const key = (await shape.waitFor(/Live API key:\s+(wh_live_\S+)/, 400_000))[1]!;
      const started = shape.output();
      expect(started).toMatch(/^WARNING: WEBHOOKS_DEV_MODE is on: deliveries may go to loopback receivers .* is trusted as a receiver CA/m);
      expect(started).toMatch(/\(1 process on one port;/);
      expect(started).toMatch(/^Workers: +1 process$/m);
      expect(started).not.toContain('1 processes');
      // Without HOST it listens on every interface, as a deployment does: another address of this machine answers too.
      expect(await isPortOpen(Number(prodEnv.PORT), '127.0.0.2')).toBe(true);
      const before = listen!.output().match(/verified {2}webhook\.test/g)?.length ?? 0;
      const out = await runShell(fillIn(production[1]!, 'KEY', key), prodEnv, ROOT);
      expect(out).toMatch(/success\s+true/);
      expect(out).toMatch(/health_status\s+healthy/);
      await expect.poll(() => listen!.output().match(/verified {2}webhook\.test/g)?.length ?? 0, { timeout: 20_000 }).toBe(before + 1);
    } finally {
      shape.signal('SIGINT');
      expect(await shape.exited).toBe(0);
    }
  }, 600_000);
});

describe('what a first user met', () => {
  it('an empty id in a path is 404, not the whole list', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/webhook_deliveries/`, { headers: { 'x-api-key': liveKey } });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: 'not_found', message: expect.stringContaining('empty path segment') } });
    const resend = await fetch(`http://127.0.0.1:${port}/api/v1/webhook_deliveries//resend`, {
      method: 'POST',
      headers: { 'x-api-key': liveKey },
    });
    expect(resend.status).toBe(404);
  });

  it('deliveries list shows why a delivery got no answer', async () => {
    const out = await runShell(
      `ID=$(npx webhooks endpoints create --url https://localhost:1/hooks --events crm --secret whsec_nobody_listens_0123 --json | node -pe 'JSON.parse(require("fs").readFileSync(0)).id')
       npx webhooks endpoints test $ID || true
       npx webhooks deliveries list --endpoint $ID`,
      env,
      ROOT,
    );
    expect(out).toMatch(/webhook\.test\s+failed\s+1\s+connection_error/);
  });

  it('health checks and scrapes stay out of the log; requests a person makes are in it', async () => {
    for (const p of ['/healthz', '/metrics']) expect((await fetch(`http://127.0.0.1:${port}${p}`)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1500)); // the logger batches its lines
    expect(service.output()).toContain('"path":"/api/v1/events"');
    expect(service.output()).not.toContain('"path":"/healthz"');
    expect(service.output()).not.toContain('"path":"/metrics"');
  });

  it('Ctrl-C stops the API, the worker, Temporal and Postgres in order, and exits 0', async () => {
    const before = service.output().length;
    service.signal('SIGINT');
    expect(await service.exited).toBe(0);
    const stopping = service.output().slice(before);
    expect(stopping).toContain('Stopping...');
    // Postgres and Temporal no longer die under the running service: no warnings, no empty stacks.
    expect(stopping).not.toMatch(/"level":(40|50)/);
    expect(stopping).not.toContain('"stack":""');
    expect(await isPortOpen(postgresPort)).toBe(false);
  }, 60_000);
});

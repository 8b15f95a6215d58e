/**
 * The READMEs run as written: the quickstart, the curl session and the reference receiver's
 * blocks, extracted from the markdown and run with bash against a real `npm start` (dev mode,
 * a fresh DATA_DIR and HOME), so the documentation cannot drift from the product. Then the
 * frictions a first user met, and Ctrl-C: an ordered stop with exit status 0.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, isPortOpen } from '../../dev/ports.js';
import { fillIn, runShell, shBlock, startShell, terminals, type Shell } from '../support/readme-shell.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const receiverReadme = fs.readFileSync(path.join(ROOT, 'examples/receiver/README.md'), 'utf8');
let quickstart: string[];
let session: string;
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
    // Its hint can be pasted: `npx`, the url the README uses, the secret it was given.
    expect(listen.output()).toContain(
      `Then: npx webhooks endpoints create --url https://localhost:${listenPort}/hooks --events crm --secret whsec_quickstart_0123456789`,
    );
    const out = await runShell(fillIn(quickstart[2]!, 'KEY', liveKey), env, ROOT);
    expect(out).toContain('webhook.test');
    for (const printed of [
      /verified {2}webhook\.test/,
      /verified {2}crm\.demand\.created {2}crm:demand:dem_1:1/,
      /verified {2}chatapp\.message\.sent/,
      /verified {2}chatapp\.message\.delivered/,
      /verified {2}chatapp\.message\.read/,
    ])
      await listen.waitFor(printed, 20_000);
    expect(listen.output()).not.toContain('refused');
  }, 150_000);

  it('the session with curl: the endpoint verifies, its delivery is read and resent by id', async () => {
    const out = await runShell(session, env, ROOT);
    // curl prints no newline after a body: the answers are read from the whole output.
    expect(out.match(/"success":true/g)).toHaveLength(2);
    expect(out).toContain('"attempts_log"');
    // The resend answers the delivery back to pending, or 409 for a delivered one; nothing else failed.
    const errors = [...out.matchAll(/"error":\{"code":"(\w+)"/g)].map((m) => m[1]);
    expect(errors.filter((code) => code !== 'not_resendable')).toEqual([]);
    expect(out).toMatch(/"recovered":\d+/);
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

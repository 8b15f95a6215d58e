/**
 * The Dockerfile, carried out without a Docker engine (dev/dockerfile-build.ts): its final stage
 * runs its CMD (`npm run api`) and `npm run worker` as the image's USER with its ENV
 * (NODE_ENV=production), against the test run's Postgres and Temporal dev server, and a published
 * event reaches a local HTTPS receiver signed. The stage holds only what the Dockerfile copies.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildDockerfile, stageEnv, userIds, type DockerfileBuild } from '../../dev/dockerfile-build.js';
import { freePort, waitForHttp } from '../../dev/ports.js';
import { projectRoot } from '../../dev/tools.js';
import { createTenant, eventually, type Tenant } from '../support/harness.js';
import { startReceiver, type Receiver } from '../support/https-receiver.js';
import { demandEvent } from '../support/kit.js';

let build: DockerfileBuild;
let app: string;
let receiver: Receiver;
let tenant: Tenant;
let apiUrl: string;
const processes: Array<{ name: string; child: ChildProcess; output: () => string }> = [];

/** Starts a command in the image's folder as its USER, its own process group so the whole npm/sh/node chain stops together. */
function startInImage(name: string, argv: string[], env: Record<string, string>) {
  const ids = userIds(build.final);
  // Only root may take on the image's user; as anyone else the processes run as that user.
  const as = process.getuid?.() === 0 ? ids : {};
  const child = spawn(argv[0]!, argv.slice(1), {
    cwd: app,
    env: stageEnv(build.final, env),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...as,
  });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  processes.push({ name, child, output: () => output });
  return child;
}

/** Every file under a folder, relative to it, symlinks included (not followed). */
function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
}

const cmdline = (pid: number) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');

/** A process's descendants, parent before child. */
function descendants(pid: number): number[] {
  const children = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  return children.flatMap((c) => [c, ...descendants(c)]);
}

beforeAll(async () => {
  const t0 = Date.now();
  build = await buildDockerfile();
  app = build.workdirOf(build.final);
  const t1 = Date.now();
  receiver = await startReceiver();
  tenant = await createTenant();
  const ids = userIds(build.final);
  // The image user's home (/home/node in the image), where npm keeps its logs.
  const home = path.join(build.final.root, 'home', build.final.user);
  fs.mkdirSync(home, { recursive: true });
  // Handed to the image like a mounted secret: the test CA lives under a folder its user may not reach.
  const caFile = path.join(build.final.root, 'test-ca.pem');
  fs.copyFileSync(inject('tls').caFile, caFile);
  if (process.getuid?.() === 0) fs.chownSync(home, ids.uid, ids.gid);
  const port = await freePort();
  apiUrl = `http://127.0.0.1:${port}`;
  const env = {
    HOME: home,
    PORT: String(port),
    DATABASE_URL: inject('databaseUrl'),
    TEMPORAL_ADDRESS: inject('devServerAddress'),
    TEMPORAL_TASK_QUEUE: `dockerfile-${crypto.randomUUID()}`,
    SECRETS_ENCRYPTION_KEY: crypto.randomBytes(32).toString('base64'),
    // Test files share one database: a sweep would wake other files' endpoints on this task queue.
    DUE_SWEEP_MS: '0',
    // Nor may a maintenance run (one Schedule per namespace) touch other files' photoapp tokens.
    MAINTENANCE_SCHEDULE: 'false',
    // The receiver is on loopback, trusted through the test CA.
    WEBHOOKS_DEV_MODE: '1',
    WEBHOOKS_DEV_CA_FILE: caFile,
    LOG_LEVEL: 'info',
  };
  const api = startInImage('api', build.final.cmd!, env);
  startInImage('worker', ['npm', 'run', 'worker'], env);
  await waitForHttp(`${apiUrl}/healthz`, `the image's CMD (${build.final.cmd!.join(' ')})`, 60_000, () => api.exitCode === null);
  await eventually(async () => processes[1]!.output().includes('"msg":"worker started"') || failIfExited(), 60_000);
  const steps = build.stages
    .filter((s) => s.runSeconds.length)
    .map((s) => `${s.name} ${s.runSeconds.join(' + ')} s`)
    .join(', ');
  const took = (ms: number) => (ms / 1000).toFixed(1);
  console.log(`Dockerfile carried out in ${took(t1 - t0)} s (RUN: ${steps}); API and worker up in ${took(Date.now() - t1)} s`);
}, 300_000);

/** Fails the wait at once, with its output, when one of the image's processes has exited. */
function failIfExited(): false {
  const gone = processes.find((p) => p.child.exitCode !== null || p.child.signalCode !== null);
  if (gone) throw new Error(`${gone.name} exited (${gone.child.exitCode ?? gone.child.signalCode}):\n${gone.output()}`);
  return false;
}

afterAll(async () => {
  await Promise.all(
    processes.map(
      ({ child }) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          const hard = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 10_000);
          child.once('exit', () => {
            clearTimeout(hard);
            resolve();
          });
          process.kill(-child.pid!, 'SIGTERM');
        }),
    ),
  );
  await receiver?.close();
  // The carried-out image holds a whole node_modules tree: removing it takes minutes on a loaded
  // machine, so the hook keeps the global hook timeout rather than a tighter one of its own.
  if (build && !process.env.KEEP_DOCKERFILE_BUILD) await fs.promises.rm(path.dirname(build.final.root), { recursive: true, force: true });
});

async function call(method: string, url: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${apiUrl}${url}`, {
    method,
    headers: { 'x-api-key': tenant.key, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

describe('the Dockerfile, carried out without Docker', () => {
  it('has the image run as the unprivileged node user (uid 1000: USER node after the last RUN and COPY) with NODE_ENV=production, by its CMD `npm run api`', () => {
    expect(build.final.image).toMatch(/^node:20/);
    expect(build.final.user).toBe('node');
    // Read from the Dockerfile itself too, not only through the builder: in the final stage the last
    // USER is node, and it comes after every step that writes files and before the CMD.
    const text = fs.readFileSync(path.join(projectRoot, 'Dockerfile'), 'utf8');
    const finalStage = text
      .slice(text.lastIndexOf('\nFROM '))
      .split('\n')
      .map((l) => l.trim());
    const at = (re: RegExp) => finalStage.map((l, i) => (re.test(l) ? i : -1)).filter((i) => i >= 0);
    const users = at(/^USER\s/);
    expect(finalStage[users.at(-1)!]).toBe('USER node');
    expect(Math.max(...at(/^(RUN|COPY|ADD)\s/))).toBeLessThan(users.at(-1)!);
    expect(at(/^CMD\s/)[0]).toBeGreaterThan(users.at(-1)!);
    // The node:20 images define node as uid and gid 1000: no root.
    expect(userIds(build.final)).toEqual({ uid: 1000, gid: 1000 });
    expect(build.final.env.NODE_ENV).toBe('production');
    // The image user's home is fresh, as a new container's is: npm would ask the registry for its own update at every start.
    expect(fs.existsSync(path.join(build.final.root, 'home', build.final.user, '.npm', '_update-notifier-last-checked'))).toBe(false);
    expect(build.final.cmd).toEqual(['npm', 'run', 'api']);
  });

  it('answers /healthz with Postgres and Temporal reachable, running the compiled code (no TypeScript loader)', async () => {
    const health = await fetch(`${apiUrl}/healthz`);
    expect(await health.json()).toMatchObject({ postgres: true, temporal: true });
    // The console's files are read from dist/console at run time.
    expect((await fetch(`${apiUrl}/console/app.js`)).status).toBe(200);
    for (const { child } of processes) {
      // npm -> sh -> sh dev/service.sh -> exec node dist/src/<name>/main.js: the last of the chain is node.
      const chain = descendants(child.pid!).map(cmdline);
      expect(chain.at(-1)).toMatch(/node dist\/src\/(api|worker)\/main\.js$/);
      expect(chain.join('\n')).not.toMatch(/tsx/);
    }
  });

  // Only root may take on another uid: run as anyone else, the processes keep the test's own, and
  // the image's user is proven by the static test above instead.
  it('runs node as the image user node (uid 1000) when the tests run as root; as the test user otherwise', () => {
    const expected = process.getuid?.() === 0 ? userIds(build.final).uid : process.getuid?.();
    for (const { child } of processes) {
      const node = descendants(child.pid!).at(-1);
      const uid = /^Uid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${node}/status`, 'utf8'))![1];
      expect(Number(uid)).toBe(expected);
    }
  });

  it('delivers a published event, signed, to a verified endpoint through the image worker', async () => {
    const prefix = `/dockerfile/${crypto.randomUUID()}`;
    const secret = `whsec_${crypto.randomBytes(16).toString('hex')}`;
    receiver.reply({ status: 200 });
    const created = await call('POST', '/api/v1/webhooks', { url: `https://127.0.0.1:${receiver.port}${prefix}`, events: ['crm'], secret });
    expect(created.status).toBe(201);
    expect((await call('POST', `/api/v1/webhooks/${created.body.data.id}/test`)).status).toBe(200);
    const event = demandEvent(`docker_${crypto.randomUUID()}`);
    const entityId = event.data.entity_id;
    const published = await call('POST', '/api/v1/events', event);
    expect(published.status).toBe(201);
    const post = await eventually(
      async () =>
        failIfExited() ||
        receiver.received.find((r) => r.path.startsWith(prefix) && String(r.headers['x-idempotency-key']).includes(entityId)),
      60_000,
    );
    expect(post.headers['x-webhook-signature']).toBe(crypto.createHmac('sha256', secret).update(post.body).digest('hex'));
  });

  it('has no dev-only packages and no TypeScript sources in the final stage', () => {
    const lock = JSON.parse(fs.readFileSync(path.join(projectRoot, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean }>;
    };
    const devOnly = Object.entries(lock.packages)
      .filter(([p, meta]) => meta.dev && p.startsWith('node_modules/'))
      .map(([p]) => p);
    expect(devOnly).toEqual(expect.arrayContaining(['node_modules/typescript', 'node_modules/vitest']));
    expect(devOnly.filter((p) => fs.existsSync(path.join(app, p)))).toEqual([]);
    const own = filesUnder(app).filter((f) => !f.startsWith(`node_modules${path.sep}`));
    expect(own.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    // Links into folders the image does not have (workspace packages left out by the Dockerfile) would be dangling.
    const dangling = filesUnder(path.join(app, 'node_modules')).filter((f) => !fs.existsSync(path.join(app, 'node_modules', f)));
    expect(dangling).toEqual([]);
  });

  it('stops, node included, when only npm gets SIGTERM, as `docker stop` sends it to the first process', async () => {
    for (const { name, child } of processes) {
      const chain = descendants(child.pid!);
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      const t = Date.now();
      child.kill('SIGTERM');
      // npm exits with node's code: 0 is a shutdown node carried out itself.
      expect(await exited, name).toBe(0);
      console.log(`${name} stopped on SIGTERM to npm in ${Date.now() - t} ms`);
      expect(chain.filter((pid) => fs.existsSync(`/proc/${pid}`)).map(cmdline), name).toEqual([]);
    }
  }, 60_000);
});

/**
 * The peer of `npm run bench -- --peer`: the Svix open-source server (github.com/svix/svix-webhooks,
 * a Rust binary built elsewhere; its path is SVIX_BIN, --svix-bin=PATH, or /tmp/svix-bin/svix-server)
 * on this machine, with a Postgres of its own (the project's embedded Postgres binaries, a fresh
 * folder), its memory queue and cache (no Redis), a random JWT secret, deliveries allowed to
 * loopback only, and TLS verification on: it trusts the bench CA through SSL_CERT_FILE.
 */
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { tieToParent } from '../dev/children.js';
import { startEmbeddedPostgres } from '../dev/embedded-postgres.js';
import { freePort } from '../dev/ports.js';

export const DEFAULT_SVIX_BIN = '/tmp/svix-bin/svix-server';

/** The binary named by --svix-bin=PATH, else SVIX_BIN, else the default; undefined when it is not an executable file. */
export function findSvixBinary(argv: string[]): { path: string; found: boolean } {
  const wanted = argv.find((a) => a.startsWith('--svix-bin='))?.slice('--svix-bin='.length) || process.env.SVIX_BIN || DEFAULT_SVIX_BIN;
  try {
    fs.accessSync(wanted, fs.constants.X_OK);
    return { path: wanted, found: fs.statSync(wanted).isFile() };
  } catch {
    return { path: wanted, found: false };
  }
}

export interface SvixServer {
  url: string;
  token: string;
  /** The server's pid, for its CPU. */
  pid: number;
  /** JSON call to its REST API with the bearer token; throws on a non-2xx answer. */
  call(method: string, urlPath: string, body?: unknown): Promise<any>;
  stop(): Promise<void>;
}

/** Environment without the project's DATABASE_URL: Svix reads it as its own. */
function svixEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  delete env.DATABASE_URL;
  return env;
}

export async function startSvix(opts: { bin: string; dir: string; caFile: string }): Promise<SvixServer> {
  fs.rmSync(opts.dir, { recursive: true, force: true });
  fs.mkdirSync(opts.dir, { recursive: true });
  // Embedded Postgres runs as a `postgres` user when the bench runs as root: it must reach its folder.
  fs.chmodSync(opts.dir, 0o755);
  const pg = await startEmbeddedPostgres(path.join(opts.dir, 'pg'));
  const port = await freePort();
  // Svix reads ./config.toml over its defaults.
  fs.writeFileSync(
    path.join(opts.dir, 'config.toml'),
    [
      `listen_address = "127.0.0.1:${port}"`,
      `jwt_secret = "${crypto.randomBytes(24).toString('hex')}"`,
      `db_dsn = "${pg.url.replace(/^postgres:/, 'postgresql:')}"`,
      'queue_type = "memory"',
      'cache_type = "memory"',
      'whitelist_subnets = ["127.0.0.0/8"]',
      'log_level = "info"',
      'environment = "dev"',
      '',
    ].join('\n'),
  );
  const env = svixEnv({ SSL_CERT_FILE: opts.caFile });
  const log = fs.openSync(path.join(opts.dir, 'svix.log'), 'w');
  const child = spawn(opts.bin, ['--run-migrations', '--wait-for', '30'], { cwd: opts.dir, env, stdio: ['ignore', log, log] });
  tieToParent(child);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= stopOnce());
  const stopOnce = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3_000))]);
      child.kill('SIGKILL');
    }
    await pg.stop();
  };
  const url = `http://127.0.0.1:${port}`;
  try {
    for (let t0 = Date.now(); ;) {
      if (child.exitCode !== null) throw new Error(`svix-server exited (${child.exitCode}); see ${path.join(opts.dir, 'svix.log')}`);
      const ok = await fetch(`${url}/api/v1/health`, { signal: AbortSignal.timeout(2_000) }).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (Date.now() - t0 > 120_000) throw new Error(`svix-server not healthy within 120 s; see ${path.join(opts.dir, 'svix.log')}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const out = execFileSync(opts.bin, ['jwt', 'generate'], { cwd: opts.dir, env, encoding: 'utf8' });
    const token = /Token \(Bearer\): (\S+)/.exec(out)?.[1];
    if (!token) throw new Error(`svix-server jwt generate printed no token: ${out.slice(0, 200)}`);
    const call = async (method: string, urlPath: string, body?: unknown) => {
      const res = await fetch(url + urlPath, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`Svix ${method} ${urlPath} -> ${res.status} ${text.slice(0, 300)}`);
      return text ? JSON.parse(text) : null;
    };
    return { url, token, pid: child.pid!, call, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

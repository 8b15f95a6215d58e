/**
 * Runs the reference receiver: `npm run receiver` (or `npx tsx examples/receiver/main.ts`).
 * See examples/receiver/README.md for the environment it reads.
 */
import fs from 'node:fs';
import pg from 'pg';
import { WebhookPlatform } from '@webhook-platform/sdk';
import { catchUp, createReceiverApp, ensureSchema, listen } from './receiver.js';

const env = process.env;
const log = (line: string) => process.stdout.write(`${new Date().toISOString()} ${line}\n`);
const fail = (message: string): never => {
  process.stderr.write(`${message}\n`);
  process.exit(2);
};

/** The url without its password, for messages. */
function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'not a url';
  }
}

const databaseUrl =
  env.RECEIVER_DATABASE_URL ||
  env.DATABASE_URL ||
  fail('set RECEIVER_DATABASE_URL (or DATABASE_URL): the receiver keeps its keys, effects and stream cursor in Postgres');
const secrets = (env.WEBHOOK_SECRETS ?? '')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);
if (secrets.length === 0) fail("set WEBHOOK_SECRETS: the endpoint's signing secret (old,new while rotating)");
const tls =
  env.TLS_CERT_FILE && env.TLS_KEY_FILE
    ? { cert: fs.readFileSync(env.TLS_CERT_FILE, 'utf8'), key: fs.readFileSync(env.TLS_KEY_FILE, 'utf8') }
    : undefined;

const db = new pg.Pool({ connectionString: databaseUrl, max: 10 });
await ensureSchema(db).catch((err: Error & { code?: string }) =>
  // One line a person can act on, not a driver stack: the url is the usual culprit.
  fail(
    `cannot use RECEIVER_DATABASE_URL (${redact(databaseUrl)}): ${err.code ? `${err.code} ` : ''}${err.message || 'connection failed'}. ` +
      'Is that Postgres running? With `npm start` running, `npm run --silent cli -- database url` prints its url.',
  ),
);
const server = await listen(createReceiverApp({ db, secrets, log }), {
  // Not 4100: `npm start`'s local provider listens there.
  port: Number(env.RECEIVER_PORT || 4200),
  host: env.RECEIVER_HOST || '127.0.0.1',
  tls,
});
log(`receiver listening on ${tls ? 'https' : 'http'}://${env.RECEIVER_HOST || '127.0.0.1'}:${server.port}/`);

const stop = new AbortController();
if (env.WEBHOOKS_API_KEY) {
  // Catch up on what was missed while down; webhooks are answered meanwhile.
  const client = new WebhookPlatform({ apiKey: env.WEBHOOKS_API_KEY, baseUrl: env.WEBHOOKS_BASE_URL });
  catchUp({ db, client, log, signal: stop.signal, follow: env.RECEIVER_FOLLOW_STREAM === '1' }).catch((err) =>
    log(`catch-up failed: ${(err as Error).message}`),
  );
} else log('WEBHOOKS_API_KEY unset: no catch-up from the stream');

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    stop.abort();
    void server
      .close()
      .then(() => db.end())
      .then(() => process.exit(0));
  });
}

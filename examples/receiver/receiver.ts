/**
 * A reference webhook receiver that does what SPEC 5 asks of one: keep the raw body, check the
 * signature (401), require X-Idempotency-Key (400), record the key and the effect in one
 * transaction, and answer 2xx only after that commit. After an outage it catches up from the
 * durable stream, from the last cursor it saved, with the SDK's stream reader.
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import getRawBody from 'raw-body';
import type pg from 'pg';
import { verifyWebhook, type StreamItem, type WebhookPlatform } from '@webhook-platform/sdk';

/** What the receiver does with an event, inside the transaction that records its key. Replace it with your own. */
export type Effect = (
  tx: pg.PoolClient,
  event: { source: 'webhook' | 'stream'; key: string; type: string; payload: unknown },
) => Promise<void>;

/** The example's effect: one row per event it acted on. */
export const storeEvent: Effect = async (tx, e) => {
  await tx.query('INSERT INTO receiver_effects (source, key, event_type, payload) VALUES ($1, $2, $3, $4)', [
    e.source,
    e.key,
    e.type,
    JSON.stringify(e.payload),
  ]);
};

/** The example's own tables; created at start so it runs against any Postgres. */
export async function ensureSchema(db: pg.Pool): Promise<void> {
  await db.query(`
    CREATE TABLE IF NOT EXISTS receiver_processed (
      source text NOT NULL,            -- 'webhook': the X-Idempotency-Key; 'stream': the item id (SPEC 6.5: the two differ)
      key text NOT NULL,
      processed_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (source, key)
    );
    CREATE TABLE IF NOT EXISTS receiver_effects (
      id bigserial PRIMARY KEY,
      source text NOT NULL,
      key text NOT NULL,
      event_type text NOT NULL,
      payload jsonb NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE IF NOT EXISTS receiver_stream_cursor (
      id boolean PRIMARY KEY DEFAULT true CHECK (id),
      cursor text NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    );
  `);
}

/**
 * Records `key` and applies the effect in one transaction. Returns false for a key already
 * recorded: a concurrent twin waits on the first one's row lock and then does nothing.
 */
async function once(
  db: pg.Pool,
  source: 'webhook' | 'stream',
  key: string,
  apply: (tx: pg.PoolClient) => Promise<void>,
  after?: (tx: pg.PoolClient) => Promise<void>,
): Promise<boolean> {
  const tx = await db.connect();
  try {
    await tx.query('BEGIN');
    const fresh = await tx.query('INSERT INTO receiver_processed (source, key) VALUES ($1, $2) ON CONFLICT DO NOTHING', [source, key]);
    if (fresh.rowCount === 1) await apply(tx);
    if (after) await after(tx);
    await tx.query('COMMIT');
    return fresh.rowCount === 1;
  } catch (err) {
    await tx.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    tx.release();
  }
}

export function createReceiverApp(opts: { db: pg.Pool; secrets: string[]; effect?: Effect; log?: (line: string) => void }): Koa {
  const effect = opts.effect ?? storeEvent;
  const log = opts.log ?? (() => {});
  const app = new Koa();
  app.use(async (ctx) => {
    if (ctx.method !== 'POST') {
      ctx.status = 405;
      return;
    }
    // The signature covers the exact bytes, so the body is read raw and parsed only afterwards.
    const raw = await getRawBody(ctx.req, { limit: '1mb' });
    if (!verifyWebhook(raw, ctx.get('x-webhook-signature'), opts.secrets)) {
      ctx.status = 401;
      ctx.body = { error: 'invalid signature' };
      return;
    }
    const key = ctx.get('x-idempotency-key');
    if (!key) {
      ctx.status = 400;
      ctx.body = { error: 'missing X-Idempotency-Key' };
      return;
    }
    let payload: { event?: unknown };
    try {
      payload = JSON.parse(raw.toString('utf8'));
    } catch {
      ctx.status = 400;
      ctx.body = { error: 'body is not JSON' };
      return;
    }
    const type = ctx.get('x-webhook-event') || String(payload.event ?? 'unknown');
    // A failure here throws: Koa answers 500, nothing was committed, and the service retries.
    const applied = await once(opts.db, 'webhook', key, (tx) => effect(tx, { source: 'webhook', key, type, payload }));
    log(`${applied ? 'applied' : 'duplicate'} ${type} ${key}`);
    ctx.status = 200;
    ctx.body = { received: true, duplicate: !applied };
  });
  return app;
}

export async function savedCursor(db: pg.Pool): Promise<string> {
  const { rows } = await db.query<{ cursor: string }>('SELECT cursor FROM receiver_stream_cursor');
  return rows[0]?.cursor ?? '0';
}

const saveCursor = (db: pg.Pool | pg.PoolClient, cursor: string) =>
  db.query(
    'INSERT INTO receiver_stream_cursor (id, cursor) VALUES (true, $1) ON CONFLICT (id) DO UPDATE SET cursor = EXCLUDED.cursor, updated_at = now()',
    [cursor],
  );

/**
 * Reads the stream from the saved cursor to its end (or on, with `follow`). Each item's effect
 * and the cursor move in one transaction, so a crash resumes at the first item not applied.
 * Items are deduplicated by id: their keys differ from webhook keys (SPEC 6.5), so an event that
 * came both ways is applied once per path; an effect that must happen once per business fact
 * should also be idempotent on the payload's own identity.
 */
export async function catchUp(opts: {
  db: pg.Pool;
  client: WebhookPlatform;
  effect?: Effect;
  follow?: boolean;
  signal?: AbortSignal;
  log?: (line: string) => void;
}): Promise<{ applied: number; cursor: string }> {
  const effect = opts.effect ?? storeEvent;
  const stream = opts.client.events.stream({ after: await savedCursor(opts.db), follow: opts.follow, signal: opts.signal });
  let applied = 0;
  for await (const item of stream as AsyncIterable<StreamItem>) {
    const fresh = await once(
      opts.db,
      'stream',
      item.id,
      (tx) => effect(tx, { source: 'stream', key: item.id, type: item.type, payload: item }),
      (tx) => saveCursor(tx, item.cursor).then(() => {}),
    );
    if (fresh) applied++;
  }
  // An empty page still tells where the stream ends (paging.cursor).
  await saveCursor(opts.db, stream.cursor);
  opts.log?.(`caught up: ${applied} event(s) from the stream, cursor ${stream.cursor}`);
  return { applied, cursor: stream.cursor };
}

/** HTTPS when a certificate is given; plain HTTP is for running behind a TLS-terminating proxy. */
export async function listen(
  app: Koa,
  opts: { port: number; host?: string; tls?: { cert: string; key: string } },
): Promise<{ port: number; server: http.Server; close(): Promise<void> }> {
  const server = opts.tls ? https.createServer(opts.tls, app.callback()) : http.createServer(app.callback());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    server,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

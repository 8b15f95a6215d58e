/**
 * Postgres LISTEN on one channel, with a connection of its own, kept up: a lost connection is
 * reopened with a growing wait (0.5 s to 30 s). Notifications sent while nobody listened are gone,
 * so `onUp` runs on every (re)connection for the caller to make up for them, and `onDown` when
 * the connection is lost.
 */
import pg from 'pg';
import { doublingBackoffMs } from '../core/backoff.js';
import { logger } from '../runtime/logger.js';

export interface NotificationListener {
  /** Resolves once listening, or after the first failed try (it keeps trying on its own). */
  ready: Promise<void>;
  close(): Promise<void>;
}

const RECONNECT_MIN_MS = 500;
const RECONNECT_MAX_MS = 30_000;

/** One connection listening on `channel`; rejects when it cannot, calls `onLost` once when it is gone. */
async function listenOnce(
  databaseUrl: string,
  channel: string,
  onNotification: (payload: string | undefined) => void,
  onLost: (err: Error) => void,
): Promise<{ close(): Promise<void> }> {
  const client = new pg.Client({ connectionString: databaseUrl, keepAlive: true, keepAliveInitialDelayMillis: 10_000 });
  let closing = false;
  const lost = (err: Error) => {
    if (closing) return;
    closing = true;
    client.end().catch(() => {});
    onLost(err);
  };
  client.on('error', lost);
  client.on('end', () => lost(new Error(`the connection listening on ${channel} ended`)));
  client.on('notification', (n) => {
    if (n.channel === channel) onNotification(n.payload);
  });
  try {
    await client.connect();
    // Quoted only when it must be (a task queue in the name), so plain channels read as written in pg_stat_activity.
    await client.query(`LISTEN ${/^[a-z_][a-z0-9_]*$/.test(channel) ? channel : client.escapeIdentifier(channel)}`);
  } catch (err) {
    closing = true;
    await client.end().catch(() => {});
    throw err;
  }
  return {
    async close() {
      if (closing) return;
      closing = true;
      await client.end();
    },
  };
}

export function keepListening(o: {
  databaseUrl: string;
  channel: string;
  /** What is heard, for the logs ("API key changes"). */
  what: string;
  onNotification: (payload: string | undefined) => void;
  onUp: () => void | Promise<void>;
  onDown: () => void;
}): NotificationListener {
  let closed = false;
  let connection: { close(): Promise<void> } | null = null;
  let retryTimer: NodeJS.Timeout | undefined;
  let failures = 0;
  const backoffMs = () => doublingBackoffMs(RECONNECT_MIN_MS, failures, RECONNECT_MAX_MS);

  function retry() {
    retryTimer = setTimeout(() => void listen(), backoffMs()).unref();
    failures++;
  }

  async function listen(): Promise<void> {
    if (closed) return;
    try {
      const c = await listenOnce(o.databaseUrl, o.channel, o.onNotification, (err) => {
        connection = null;
        o.onDown();
        if (closed) return;
        logger.warn({ err: { message: err.message } }, `lost the ${o.what} notifications; listening again`);
        retry();
      });
      if (closed) return await c.close();
      connection = c;
      failures = 0;
      await o.onUp();
    } catch (err) {
      if (closed) return;
      logger.warn({ err: { message: (err as Error).message }, retryInMs: backoffMs() }, `cannot listen for ${o.what}; retrying`);
      retry();
    }
  }

  return {
    ready: listen(),
    async close() {
      closed = true;
      clearTimeout(retryTimer);
      await connection?.close();
      connection = null;
    },
  };
}

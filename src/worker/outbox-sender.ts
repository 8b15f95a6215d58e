/**
 * Sends the notification outbox (owner alerts, plan warnings): by e-mail when SMTP_URL is
 * set, to the log otherwise. Rows are claimed with SKIP LOCKED, so any number of workers
 * can run it; a row is marked sent in the transaction that holds it, so each goes out once
 * (a crash between the send and the commit can repeat that one message).
 */
import nodemailer, { type Transporter } from 'nodemailer';
import { doublingBackoffMs } from '../core/backoff.js';
import { notificationText } from '../core/notification-text.js';
import { claimUnsentNotifications, markNotificationSent, type OutboxRow } from '../db/plan-usage.js';
import { inTransaction, type Db } from '../db/pool.js';
import { logger } from '../runtime/logger.js';

export type { OutboxRow };

export type Deliver = (row: OutboxRow) => Promise<void>;

export function mailDelivery(transport: Transporter, from: string): Deliver {
  return async (row) => {
    const { subject, text } = notificationText(row.kind, row.payload);
    await transport.sendMail({ from, to: String(row.payload.to), subject, text });
  };
}

export const logDelivery: Deliver = async (row) => {
  const { subject } = notificationText(row.kind, row.payload);
  logger.info({ notification: row.id, kind: row.kind, to: row.payload.to, subject }, 'notification (SMTP not configured)');
};

/** Sends up to `limit` pending notifications; returns how many went out. */
export async function sendPendingNotifications(db: Db, deliver: Deliver, limit = 20): Promise<number> {
  return inTransaction(db, async (tx) => {
    const rows = await claimUnsentNotifications(tx, limit);
    let sent = 0;
    for (const row of rows) {
      try {
        await deliver(row);
        await markNotificationSent(tx, row.id);
        sent++;
      } catch (err) {
        logger.warn({ err, notification: row.id }, 'notification not sent; will retry');
      }
    }
    return sent;
  });
}

/**
 * Polls the outbox until `signal` aborts. A failed pass (Postgres down, say) is logged and
 * the loop carries on, waiting twice as long after each failure in a row, up to `maxIntervalMs`,
 * and back to `intervalMs` after the first pass that works.
 */
export function runOutboxSender(
  db: Db,
  opts: { smtpUrl?: string; from: string; intervalMs?: number; maxIntervalMs?: number; signal?: AbortSignal; deliver?: Deliver },
): Promise<void> {
  const deliver = opts.deliver ?? (opts.smtpUrl ? mailDelivery(nodemailer.createTransport(opts.smtpUrl), opts.from) : logDelivery);
  const interval = opts.intervalMs ?? 5_000;
  const maxInterval = Math.max(interval, opts.maxIntervalMs ?? 60_000);
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    let failures = 0;
    const delay = () => doublingBackoffMs(interval, failures, maxInterval);
    const tick = async () => {
      try {
        while ((await sendPendingNotifications(db, deliver)) > 0);
        failures = 0;
      } catch (err) {
        failures++;
        logger.warn({ err, failures, retryInMs: delay() }, 'outbox pass failed');
      }
      if (opts.signal?.aborted) return resolve();
      timer = setTimeout(tick, delay());
    };
    opts.signal?.addEventListener('abort', () => {
      if (timer) clearTimeout(timer);
      resolve();
    });
    void tick();
  });
}

/** The notification outbox: each queued alert or warning goes out once, through a real nodemailer transport. */
import nodemailer from 'nodemailer';
import { describe, expect, it } from 'vitest';
import { enqueueNotification } from '../../src/db/plan-usage.js';
import { mailDelivery, sendPendingNotifications, type Deliver } from '../../src/worker/outbox-sender.js';
import { createTenant, testDb } from '../support/harness.js';

describe('notification outbox', () => {
  it('sends each notification once, as e-mail, and keeps failed ones for the next pass', async () => {
    const tenant = await createTenant();
    const key = `test:${tenant.accountId}`;
    await enqueueNotification(testDb(), {
      accountId: tenant.accountId,
      kind: 'endpoint_paused',
      dedupeKey: `${key}:paused`,
      payload: { to: 'owner@example.com', endpoint_id: 'ep-1', url: 'https://example.com/h', failure_streak: 15 },
    });
    expect(
      await enqueueNotification(testDb(), {
        accountId: tenant.accountId,
        kind: 'endpoint_paused',
        dedupeKey: `${key}:paused`,
        payload: {},
      }),
    ).toBe(false);
    await enqueueNotification(testDb(), {
      accountId: tenant.accountId,
      kind: 'free_plan_warning',
      dedupeKey: `${key}:240`,
      payload: { to: 'bounce@example.com', count: 240, limit: 300 },
    });

    // jsonTransport is nodemailer's own transport that renders the message without a network.
    const mail = mailDelivery(nodemailer.createTransport({ jsonTransport: true }), 'Platform <no-reply@example.com>');
    // Other tests queue notifications in the same database: count only this Account's.
    const mineIds = new Set(
      (await testDb().query(`SELECT id FROM notifications WHERE account_id = $1`, [tenant.accountId])).rows.map((r) => r.id),
    );
    const sent: Array<{ to: string; subject: string }> = [];
    let bounced = false;
    const deliver: Deliver = async (row) => {
      if (!mineIds.has(row.id)) return;
      if (row.payload.to === 'bounce@example.com' && !bounced) {
        bounced = true;
        throw new Error('mailbox unavailable');
      }
      await mail(row);
      sent.push({ to: String(row.payload.to), subject: String(row.kind) });
    };
    await sendPendingNotifications(testDb(), deliver, 1000);
    const mine = async () =>
      (await testDb().query(`SELECT kind, sent_at FROM notifications WHERE account_id = $1 ORDER BY kind`, [tenant.accountId])).rows;
    expect((await mine()).map((r) => [r.kind, r.sent_at !== null])).toEqual([
      ['endpoint_paused', true],
      ['free_plan_warning', false],
    ]);

    await sendPendingNotifications(testDb(), deliver);
    expect((await mine()).every((r) => r.sent_at !== null)).toBe(true);
    await sendPendingNotifications(testDb(), deliver);
    expect(sent.filter((s) => s.to === 'owner@example.com')).toHaveLength(1);
    expect(sent.filter((s) => s.to === 'bounce@example.com')).toHaveLength(1);
  });
});

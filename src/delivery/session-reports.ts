/**
 * The reports of direct sessions of successes only to their endpoints' workflows, for the
 * operator's view (the workflow's current details): how many sessions and POSTs, and the latest
 * success. Never one per POST, nor one per session: per endpoint, the first report goes at once,
 * and what ends within the next `everyMs` waits and goes as one (summed, the latest success kept),
 * `everyMs` after the one before. The last is always sent (at the window's end, or by `flush`).
 * A report that fails is kept and merged into the next; at most one is in flight per endpoint.
 */
import type { DirectSessionsReport } from '../workflows/endpoint-contract.js';
import type { AccountId, EndpointId } from '../core/ids.js';
import { REPORT_EVERY_MS } from '../core/runtime-limits.js';
import { traceHop } from '../runtime/hop-trace.js';
import { logger } from '../runtime/logger.js';

export interface SessionReports {
  /** A direct session of successes only ended (its successes already recorded on the endpoint). */
  add(endpointId: EndpointId, accountId: AccountId, report: DirectSessionsReport): void;
  /** Sends every report waiting now (before a hand-over, so the workflow learns of them first; at the worker's stop). */
  flush(endpointId?: EndpointId): Promise<void>;
}

export type SendReport = (endpointId: EndpointId, accountId: AccountId, report: DirectSessionsReport) => Promise<void>;

/** Two reports as one: counts summed, the latest success and its code, the later end. */
export function mergeReports(a: DirectSessionsReport, b: DirectSessionsReport): DirectSessionsReport {
  const later = b.lastSuccessAtMs >= a.lastSuccessAtMs ? b : a;
  return {
    sessions: a.sessions + b.sessions,
    posts: a.posts + b.posts,
    lastSuccessAtMs: later.lastSuccessAtMs,
    lastResponseCode: later.lastResponseCode,
    endedAtMs: Math.max(a.endedAtMs, b.endedAtMs),
  };
}

interface Slot {
  accountId: AccountId;
  waiting: DirectSessionsReport | null;
  /** When the last report went out (the clock's ms), null: none yet. */
  sentAtMs: number | null;
  timer: NodeJS.Timeout | null;
  inFlight: Promise<void> | null;
  /** Forgets the endpoint once its window has passed with nothing waiting. */
  forget: NodeJS.Timeout | null;
}

export function createSessionReports(o: { send: SendReport; everyMs?: number; clock?: () => number }): SessionReports {
  const everyMs = o.everyMs ?? REPORT_EVERY_MS;
  const clock = o.clock ?? Date.now;
  const slots = new Map<EndpointId, Slot>();

  function schedule(id: EndpointId, slot: Slot): void {
    if (slot.timer || slot.inFlight || !slot.waiting) return;
    const waitMs = slot.sentAtMs === null ? 0 : slot.sentAtMs + everyMs - clock();
    if (waitMs <= 0) {
      void sendNow(id, slot);
      return;
    }
    slot.timer = setTimeout(() => {
      slot.timer = null;
      void sendNow(id, slot);
    }, waitMs);
    slot.timer.unref?.();
  }

  function sendNow(id: EndpointId, slot: Slot): Promise<void> {
    if (slot.timer) clearTimeout(slot.timer);
    slot.timer = null;
    if (slot.inFlight) return slot.inFlight.then(() => sendNow(id, slot));
    const report = slot.waiting;
    if (!report) return Promise.resolve();
    slot.waiting = null;
    slot.sentAtMs = clock();
    traceHop('report', id);
    slot.inFlight = o
      .send(id, slot.accountId, report)
      .catch((err) => {
        // Kept for the next window: the counts stay whole.
        logger.warn({ err, endpointId: id }, 'direct sessions not reported to their workflow');
        slot.waiting = slot.waiting ? mergeReports(report, slot.waiting) : report;
      })
      .finally(() => {
        slot.inFlight = null;
        if (slot.waiting) return schedule(id, slot);
        slot.forget = setTimeout(() => {
          if (!slot.waiting && !slot.inFlight && !slot.timer && slots.get(id) === slot) slots.delete(id);
        }, everyMs);
        slot.forget.unref?.();
      });
    return slot.inFlight;
  }

  return {
    add(endpointId, accountId, report) {
      let slot = slots.get(endpointId);
      if (!slot) slots.set(endpointId, (slot = { accountId, waiting: null, sentAtMs: null, timer: null, inFlight: null, forget: null }));
      if (slot.forget) clearTimeout(slot.forget);
      slot.forget = null;
      slot.waiting = slot.waiting ? mergeReports(slot.waiting, report) : report;
      schedule(endpointId, slot);
    },
    async flush(endpointId) {
      const ids = endpointId ? [endpointId] : [...slots.keys()];
      await Promise.all(
        ids.map((id) => {
          const slot = slots.get(id);
          return slot ? sendNow(id, slot) : undefined;
        }),
      );
    },
  };
}

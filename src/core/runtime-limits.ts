/**
 * The timing limits of a delivery session, derived from one another in one place: the workflow's
 * activity timeouts, the activity's heartbeat and session length, the leases of claimed
 * deliveries and the longest POST (`DELIVERY_TIMEOUT_MS`). Pure, so that the workflow (which
 * may import nothing with I/O) uses the same numbers as the activities and the configuration.
 */

/** How long a session claims and starts POSTs before it hands back to its workflow, which then looks at its endpoint. */
export const SESSION_MS = 60_000;
/**
 * The longest one POST may take (`DELIVERY_TIMEOUT_MS` at most): a POST started at the session's
 * last moment must still end, and be recorded, within the activity's start-to-close.
 */
export const MAX_POST_MS = 120_000;
/** `deliverDue`'s start-to-close (3 minutes): the session, then the POSTs still in flight at its end. */
export const DELIVER_DUE_TIMEOUT_MS = SESSION_MS + MAX_POST_MS;
/** How often a running session heartbeats. */
export const HEARTBEAT_EVERY_MS = 2_000;
/** `deliverDue`'s heartbeat timeout (10 s): a session lost with its worker is retried within seconds, not minutes. */
export const HEARTBEAT_TIMEOUT_MS = 5 * HEARTBEAT_EVERY_MS;
/**
 * How long a claimed delivery is kept from other sessions (4 minutes): past the activity's
 * start-to-close, so no other session sends it while its own may still be sending it. A lost
 * session's retry releases its leases at once (by owner), so this only bounds one never retried.
 */
export const LEASE_MS = DELIVER_DUE_TIMEOUT_MS + 60_000;

/** The bounds a configured POST timeout must keep: why not, or null when it keeps them. */
export function deliveryTimeoutProblem(deliveryTimeoutMs: number): string | null {
  if (deliveryTimeoutMs < 1) return 'must be at least 1 ms';
  if (deliveryTimeoutMs > MAX_POST_MS)
    return `must be at most ${MAX_POST_MS} ms: a POST started at the end of a ${SESSION_MS} ms delivery session must end within the activity's ${DELIVER_DUE_TIMEOUT_MS} ms start-to-close`;
  return null;
}

/**
 * An endpoint's session lease (at most one session per endpoint across workers, migration 0019):
 * renewed every HEARTBEAT_EVERY_MS while its session lives, so one lost with its worker is taken
 * over within this long (10 s), as a lost activity session is retried within its heartbeat timeout.
 * A direct session's claimed deliveries get the same short, renewed lease (not LEASE_MS): nothing
 * would release them early, since no retry of it comes.
 */
export const SESSION_LEASE_MS = HEARTBEAT_TIMEOUT_MS;
/**
 * At most one report of an endpoint's direct sessions of successes to its workflow this often, per
 * worker (src/delivery/session-reports.ts; DIRECT_REPORT_EVERY_MS): the report is only for the
 * workflow's story, and each costs a signal, a workflow task and their history writes: 4.5–8 ms of
 * the Temporal server's CPU alone, as much machine CPU as 3 to 15 deliveries (bench/FINDINGS.md).
 * At 15 s, endpoints with a little traffic every few seconds paid one every 15 s each.
 */
export const REPORT_EVERY_MS = 5 * 60_000;
/** A round handed to the workflow and not taken in after this long (Temporal unreachable meanwhile) no longer holds sessions back. */
export const HANDOVER_TIMEOUT_MS = 60_000;

/**
 * How long a delivery session waits for news of due work before it ends (DELIVERY_LINGER_MS's
 * default); the due router also takes news this long after the last for the end of the session
 * another worker held (`heldQuietMs`).
 */
export const SESSION_LINGER_MS = 5_000;

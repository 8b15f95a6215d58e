/** Temporal connections and the one way the API talks to endpoint workflows. */
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import type { AccountId, EndpointId } from '../core/ids.js';
import {
  endpointChangedSignal,
  endpointWorkflowId,
  roundHandedOverSignal,
  sessionsReportedSignal,
  wakeSignal,
  type DirectSessionsReport,
  type EndpointChange,
  type EndpointSnapshot,
  type EndpointWorkflowInput,
  type HandedOverRound,
} from '../workflows/endpoint-contract.js';
import { customSearchAttributes } from '../workflows/search-attributes.js';
import { workflowStaticDetails, workflowSummary } from '../core/endpoint-story.js';
import { logger } from '../runtime/logger.js';
import { merged } from '../core/merged.js';

const GRPC_ALREADY_EXISTS = 6;
const GRPC_UNIMPLEMENTED = 12;

export async function connectTemporal(address: string, namespace: string): Promise<{ connection: Connection; client: Client }> {
  const connection = await Connection.connect({ address });
  quietWhenIdle(connection);
  return { connection, client: new Client({ connection, namespace }) };
}

/** Calls through each connection in flight now (see temporalCall). */
const callsInFlight = new WeakMap<object, number>();

/**
 * Runs `fn`, a call through `connection`, and disables the connection's AsyncLocalStorage (its
 * deadlines and metadata) once no call through here is in flight. Enabled once (the connect
 * itself does), it stays on, and on Node 20 that runs async hooks on every promise of the
 * process (~0.08 µs each): the API's publish path never calls Temporal, yet paid it on every
 * promise of every request. Each call enables it again for as long as it needs it.
 */
export async function temporalCall<T>(connection: Client['connection'], fn: () => Promise<T>): Promise<T> {
  callsInFlight.set(connection, (callsInFlight.get(connection) ?? 0) + 1);
  try {
    return await fn();
  } finally {
    const left = callsInFlight.get(connection)! - 1;
    callsInFlight.set(connection, left);
    if (left === 0) quietWhenIdle(connection);
  }
}

function quietWhenIdle(connection: Client['connection']): void {
  if ((callsInFlight.get(connection) ?? 0) === 0)
    (connection as Partial<Pick<Connection, 'callContextStorage'>>).callContextStorage?.disable();
}

/**
 * Registers the workflows' custom search attributes on a real cluster (the dev server
 * gets them by flag; the time-skipping test server at test start). Attributes that already
 * exist are fine.
 */
export async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<void> {
  const types: Record<string, number> = { TEXT: 1, KEYWORD: 2, INT: 3, DOUBLE: 4, BOOL: 5, DATETIME: 6, KEYWORD_LIST: 7 };
  // One at a time: a request naming an attribute that exists fails as a whole.
  for (const key of customSearchAttributes) {
    try {
      await connection.operatorService.addSearchAttributes({ namespace, searchAttributes: { [key.name]: types[key.type]! } });
    } catch (err) {
      const code = (err as { code?: number }).code;
      if (code === GRPC_ALREADY_EXISTS) continue;
      if (code === GRPC_UNIMPLEMENTED) return;
      throw err;
    }
  }
}

export interface EndpointWorkflows {
  /**
   * Starts the endpoint's workflow if needed and tells it what changed. Rejects when Temporal
   * cannot be reached; callers whose change is already committed use `notifyAfterCommit`.
   * The url, when the caller has it, goes into the summary a started workflow shows in the Web UI.
   * `created`: the row a create committed, which a workflow started by this signal takes instead
   * of reading it (`EndpointWorkflowInput.created`).
   */
  notify(endpointId: EndpointId, accountId: AccountId, change: EndpointChange, about?: ChangeContext): Promise<void>;
  /** Coalesced wake-up: there are deliveries waiting in Postgres. */
  wake(endpointId: EndpointId, accountId: AccountId, url?: string): Promise<void>;
  /** A direct session's round for the workflow to apply (src/delivery/direct-sessions.ts); starts it if needed (it may have continued as new). */
  handOver(endpointId: EndpointId, accountId: AccountId, handed: HandedOverRound): Promise<void>;
  /**
   * Direct sessions of successes only, for the workflow's story (src/delivery/session-reports.ts coalesces
   * them). A plain signal: a workflow not running (its endpoint deleted) is not started for it.
   */
  report(endpointId: EndpointId, accountId: AccountId, report: DirectSessionsReport): Promise<void>;
}

/** What the caller of `notify` knows of the endpoint beside its ids. */
export interface ChangeContext {
  url?: string;
  created?: EndpointSnapshot;
}

/** How long an API request waits on Temporal for one signal before giving up on it. */
const SIGNAL_DEADLINE_MS = 3_000;

export function endpointWorkflows(client: Client, taskQueue: string): EndpointWorkflows {
  /**
   * What starts the endpoint's workflow when a signal finds it not running. `staticSummary` and
   * `staticDetails` are what the Web UI's list shows of it (ignored when it already runs);
   * continue-as-new drops them (its command carries no user metadata), and the current details,
   * which every run sets, repeat them.
   */
  const startOptions = (ref: { endpointId: string; accountId: string; url?: string; created?: EndpointSnapshot }) => ({
    workflowId: endpointWorkflowId(ref.endpointId),
    taskQueue,
    // (An absent `created` is left out of the payload: JSON has no undefined.)
    args: [{ endpointId: ref.endpointId, accountId: ref.accountId, created: ref.created }] as [EndpointWorkflowInput],
    staticSummary: workflowSummary(ref),
    staticDetails: workflowStaticDetails(ref),
  });
  /** Sends `signalWithStart` (one of the calls below) within SIGNAL_DEADLINE_MS, again when it raced a continue-as-new. */
  async function send(signalWithStart: () => Promise<unknown>): Promise<void> {
    const once = () =>
      temporalCall(client.connection, () => client.connection.withDeadline(Date.now() + SIGNAL_DEADLINE_MS, signalWithStart));
    // A signal racing a continue-as-new can be answered NOT_FOUND; the retry lands on the new run.
    for (let attempt = 1; ; attempt++) {
      try {
        await once();
        return;
      } catch (err) {
        if (attempt >= 5 || !(err instanceof WorkflowNotFoundError)) throw err;
        await new Promise((r) => setTimeout(r, 50 * attempt));
      }
    }
  }
  return {
    notify: (endpointId, accountId, change, about) =>
      send(() =>
        client.workflow.signalWithStart(
          'endpointWorkflow',
          merged(startOptions({ endpointId, accountId, url: about?.url, created: about?.created }), {
            signal: endpointChangedSignal,
            signalArgs: [{ change }],
          }),
        ),
      ),
    wake: (endpointId, accountId, url) =>
      send(() =>
        client.workflow.signalWithStart(
          'endpointWorkflow',
          merged(startOptions({ endpointId, accountId, url }), { signal: wakeSignal, signalArgs: [] }),
        ),
      ),
    handOver: (endpointId, accountId, handed) =>
      send(() =>
        client.workflow.signalWithStart(
          'endpointWorkflow',
          merged(startOptions({ endpointId, accountId }), { signal: roundHandedOverSignal, signalArgs: [handed] }),
        ),
      ),
    report: async (endpointId, _accountId, report) => {
      try {
        await send(() => client.workflow.getHandle(endpointWorkflowId(endpointId)).signal(sessionsReportedSignal, report));
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
    },
  };
}

/**
 * Tells the workflow about a change Postgres already holds. The tenant's request has
 * succeeded either way, so a Temporal outage is logged rather than turned into a 500 that
 * would invite a retry of a committed change; the next signal for the endpoint starts or
 * reaches its workflow.
 */
export async function notifyAfterCommit(
  workflows: EndpointWorkflows,
  endpointId: EndpointId,
  accountId: AccountId,
  change: EndpointChange,
  about?: ChangeContext,
): Promise<void> {
  try {
    await workflows.notify(endpointId, accountId, change, about);
  } catch (err) {
    logger.error({ err, endpointId, change }, 'endpoint workflow not told of a committed change');
  }
}

/**
 * The Temporal SDK logs through our pino logger, so `npm start` and the worker print one
 * format: the SDK's own lines (worker state, activity and workflow logs) and, forwarded, the
 * native core's warnings, which would otherwise go straight to the console.
 */
import { DefaultLogger, Runtime, type LogEntry, type LogLevel } from '@temporalio/worker';
import { IllegalStateError } from '@temporalio/common';
import type { Logger } from 'pino';
import { logger } from '../runtime/logger.js';

const PINO_LEVEL = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' } as const satisfies Record<
  LogLevel,
  string
>;

/** Writes one SDK log entry to `target`; an Error under `error` moves to `err` so pino serializes its message and stack. */
export function temporalLogFunction(target: Logger): (entry: LogEntry) => void {
  return ({ level, message, meta }) => {
    const { error, ...rest } = meta ?? {};
    const fields = error instanceof Error ? { ...rest, err: error } : error === undefined ? rest : { ...rest, error };
    target[PINO_LEVEL[level]](fields, message);
  };
}

/** A logger for the workflow bundler: its webpack report and "bundle created" are INFO in the SDK and debug here. */
export function bundlerLogger(target: Logger): DefaultLogger {
  const write = temporalLogFunction(target);
  return new DefaultLogger('TRACE', (entry) => write(entry.level === 'INFO' ? { ...entry, level: 'DEBUG' } : entry));
}

export const temporalLogger = logger.child({ component: 'temporal' });
let installed = false;

/**
 * Installs the SDK runtime with the pino adapter. Must run before the first NativeConnection
 * or Worker, which would create a default runtime; in a process where one exists already
 * (tests that built a TestWorkflowEnvironment first) the SDK keeps its own format.
 */
export function installTemporalLogging(target: Logger = temporalLogger): void {
  if (installed) return;
  installed = true;
  try {
    Runtime.install({
      // pino filters by its own level; the SDK passes everything on.
      logger: new DefaultLogger('TRACE', temporalLogFunction(target)),
      telemetryOptions: { logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} } },
    });
  } catch (err) {
    if (!(err instanceof IllegalStateError)) throw err;
    target.debug('Temporal runtime already created; SDK logs keep its default format');
  }
}

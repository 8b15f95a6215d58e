import { pino, type Logger } from 'pino';
import pinoPretty from 'pino-pretty';

export type LogFormat = 'pretty' | 'json';

/**
 * Pretty lines for a person at a terminal; JSON lines for everything else (pipes, files, collectors), or when LOG_FORMAT=json.
 * LOG_FORMAT=pretty forces pretty lines: `npm start`'s worker writes through its parent's pipe to that parent's terminal.
 */
export function logFormat(env: NodeJS.ProcessEnv = process.env, isTTY = Boolean(process.stdout.isTTY)): LogFormat {
  if (env.LOG_FORMAT === 'pretty') return 'pretty';
  return isTTY && env.LOG_FORMAT !== 'json' ? 'pretty' : 'json';
}

/** A line waits at most this long to be written to stdout with the lines that follow it. */
export const LOG_BATCH_MS = 20;
const LOG_BATCH_BYTES = 64 * 1024;
/** pino's warn level: lines at warn and above are written at once. */
const WARN = 40;

export interface BatchedWriter {
  write(line: string, level: number): void;
  /** Writes what waits now. */
  flush(): void;
}

/**
 * Lines to a sink in batches: each write to stdout is a system call that wakes the process
 * reading the pipe, and the API wrote one per request. A line waits at most `maxDelayMs` (or until
 * `maxBytes` wait); a warning or an error is written at once, after the lines before it, so
 * the last lines before a failure are never the ones held back. The timer does not keep the
 * process alive; `createLogger` flushes on exit.
 */
export function createBatchedWriter(sink: (chunk: string) => void, opts: { maxDelayMs?: number; maxBytes?: number } = {}): BatchedWriter {
  const maxDelayMs = opts.maxDelayMs ?? LOG_BATCH_MS;
  const maxBytes = opts.maxBytes ?? LOG_BATCH_BYTES;
  let waiting: string[] = [];
  let bytes = 0;
  let timer: NodeJS.Timeout | undefined;
  function flush() {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (waiting.length === 0) return;
    const chunk = waiting.length === 1 ? waiting[0]! : waiting.join('');
    waiting = [];
    bytes = 0;
    sink(chunk);
  }
  return {
    write(line, level) {
      waiting.push(line);
      bytes += line.length;
      if (level >= WARN || bytes >= maxBytes) flush();
      else timer ??= setTimeout(flush, maxDelayMs).unref();
    },
    flush,
  };
}

/** Lines of the process's loggers that wait to be written to stdout. */
const stdoutBatches = new Set<BatchedWriter>();

/** Writes every waiting log line now: before writing to stdout around the logger, and in tests that read it. */
export function flushLogs(): void {
  for (const b of stdoutBatches) b.flush();
}

/**
 * Structured logs. Request logs carry method, path, status and timing, never bodies or
 * headers; the redaction paths are a second line for anything that slips into a context.
 * Lines go through `write` when given, one call per line, which keeps the output observable
 * in tests; otherwise to process.stdout in batches (createBatchedWriter), flushed on exit.
 * Pretty printing is a synchronous transform of the JSON line, not a worker thread.
 */
export function createLogger(opts: { level?: string; format?: LogFormat; write?: (line: string) => void } = {}): Logger {
  const prettify =
    (opts.format ?? logFormat()) === 'pretty'
      ? pinoPretty.prettyFactory({ translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true })
      : undefined;
  const format = (line: string) => (prettify ? prettify(line) : line);
  let destination: { write(line: string): void; lastLevel?: number; [key: symbol]: boolean };
  if (opts.write) {
    const write = opts.write;
    destination = { write: (line) => write(format(line)) };
  } else {
    // process.stdout is looked up at each write, so a test that replaces its write sees the lines.
    const batch = createBatchedWriter((chunk) => process.stdout.write(chunk));
    stdoutBatches.add(batch);
    process.on('exit', () => batch.flush());
    destination = {
      // pino sets lastLevel before each write when the destination asks for its metadata.
      [Symbol.for('pino.metadata')]: true,
      write(line) {
        batch.write(format(line), this.lastLevel ?? WARN);
      },
    };
  }
  return pino(
    {
      level: opts.level ?? (process.env.LOG_LEVEL || (process.env.VITEST ? 'silent' : 'info')),
      redact: {
        paths: [
          'secret',
          '*.secret',
          'authorization',
          '*.authorization',
          'headers.authorization',
          'req.headers["x-api-key"]',
          'req.headers.authorization',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}

export const logger = createLogger();

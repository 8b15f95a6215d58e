import { pino, type Logger } from 'pino';
import pinoPretty from 'pino-pretty';

export type LogFormat = 'pretty' | 'json';

/** Pretty lines for a person at a terminal; JSON lines for everything else (pipes, files, collectors), or when LOG_FORMAT=json. */
export function logFormat(env: NodeJS.ProcessEnv = process.env, isTTY = Boolean(process.stdout.isTTY)): LogFormat {
  return isTTY && env.LOG_FORMAT !== 'json' ? 'pretty' : 'json';
}

/**
 * Structured logs. Request logs carry method, path, status and timing, never bodies or
 * headers; the redaction paths are a second line for anything that slips into a context.
 * Lines go through `write` (process.stdout by default), which keeps the output observable in
 * tests; pretty printing is a synchronous transform of the JSON line, not a worker thread.
 */
export function createLogger(opts: { level?: string; format?: LogFormat; write?: (line: string) => void } = {}): Logger {
  const write = opts.write ?? ((line: string) => process.stdout.write(line));
  const prettify =
    (opts.format ?? logFormat()) === 'pretty'
      ? pinoPretty.prettyFactory({ translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true })
      : undefined;
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
    { write: prettify ? (line: string) => write(prettify(line)) : write },
  );
}

export const logger = createLogger();

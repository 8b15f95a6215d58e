import { pino } from 'pino';

/**
 * Structured JSON logs. Request logs carry method, path, status and timing, never bodies
 * or headers; the redaction paths are a second line for anything that slips into a context.
 * Writing through process.stdout keeps the output observable in tests.
 */
export const logger = pino(
  {
    level: process.env.LOG_LEVEL || (process.env.VITEST ? 'silent' : 'info'),
    redact: {
      paths: ['secret', '*.secret', 'authorization', '*.authorization', 'headers.authorization', 'req.headers["x-api-key"]', 'req.headers.authorization'],
      censor: '[redacted]',
    },
  },
  { write: (line: string) => process.stdout.write(line) },
);

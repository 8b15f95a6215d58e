import { pino } from 'pino';

/** Structured JSON logs; secrets are redacted wherever they could appear. */
export const logger = pino({
  level: process.env.LOG_LEVEL || (process.env.VITEST ? 'silent' : 'info'),
  redact: {
    paths: ['secret', '*.secret', 'authorization', '*.authorization', 'headers.authorization', 'req.headers["x-api-key"]', 'req.headers.authorization'],
    censor: '[redacted]',
  },
});

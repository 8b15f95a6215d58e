/** Which errors mean "Postgres is unreachable" (answered 503 with Retry-After) rather than a bug or bad data. */
import { describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from '../../src/db/pool.js';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isDatabaseUnavailable', () => {
  it('recognises connection failures, server shutdowns and pg connection errors', () => {
    for (const err of [
      withCode('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'),
      withCode('ECONNRESET'),
      withCode('EAI_AGAIN', 'getaddrinfo EAI_AGAIN postgres'),
      withCode('57P01', 'terminating connection due to administrator command'),
      withCode('57P03', 'the database system is starting up'),
      withCode('08006', 'connection failure'),
      new Error('Connection terminated unexpectedly'),
      new Error('Connection terminated due to connection timeout', { cause: new Error('Connection terminated') }),
      new Error('timeout exceeded when trying to connect'),
      new Error('Client has encountered a connection error and is not queryable'),
      new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')], ''),
      new Error('wrapped', { cause: withCode('ECONNREFUSED') }),
    ]) {
      expect(isDatabaseUnavailable(err), String(err)).toBe(true);
    }
  });

  it('leaves SQL and data errors, and non-errors, to the 500 path', () => {
    for (const err of [
      withCode('23505', 'duplicate key value'),
      withCode('42P01', 'relation does not exist'),
      withCode('22P02'),
      new Error('boom'),
      'ECONNREFUSED',
      undefined,
      { code: 'ECONNREFUSED' },
    ]) {
      expect(isDatabaseUnavailable(err), String(err)).toBe(false);
    }
  });
});

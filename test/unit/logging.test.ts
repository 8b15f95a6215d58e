import { describe, expect, it } from 'vitest';
import { createLogger, logFormat } from '../../runtime/logger.js';
import { bundlerLogger, temporalLogFunction } from '../../worker/temporal-logging.js';

function capture(format: 'json' | 'pretty' = 'json', level = 'trace') {
  const lines: string[] = [];
  return { lines, log: createLogger({ level, format, write: (line) => lines.push(line) }) };
}

describe('log format', () => {
  it('is JSON when stdout is not a terminal, or when LOG_FORMAT=json; pretty on a terminal', () => {
    expect(logFormat({}, false)).toBe('json');
    expect(logFormat({ LOG_FORMAT: 'json' }, true)).toBe('json');
    expect(logFormat({}, true)).toBe('pretty');
  });

  it('emits one JSON object per line in JSON format', () => {
    const { lines, log } = capture('json');
    log.info({ requestId: 'r1' }, 'request');
    log.warn('careful');
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(line.endsWith('\n')).toBe(true);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 30, msg: 'request', requestId: 'r1' });
    expect(JSON.parse(lines[1]!)).toMatchObject({ level: 40, msg: 'careful' });
  });

  it('emits readable lines in pretty format, still redacting secrets', () => {
    const { lines, log } = capture('pretty');
    log.info({ secret: 'whsec_x' }, 'hello');
    expect(() => JSON.parse(lines[0]!)).toThrow();
    expect(lines[0]).toContain('hello');
    expect(lines[0]).not.toContain('whsec_x');
  });
});

describe('Temporal SDK logs through pino', () => {
  it('writes an SDK log entry as a pino line with its level, message and metadata', () => {
    const { lines, log } = capture('json');
    temporalLogFunction(log)({
      level: 'WARN',
      message: 'Worker state changed',
      timestampNanos: 0n,
      meta: { sdkComponent: 'worker', taskQueue: 'webhooks' },
    });
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 40, msg: 'Worker state changed', sdkComponent: 'worker', taskQueue: 'webhooks' });
  });

  it('serializes an Error carried in the entry', () => {
    const { lines, log } = capture('json');
    temporalLogFunction(log)({ level: 'ERROR', message: 'Activity failed', timestampNanos: 0n, meta: { error: new Error('boom') } });
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 50, err: { message: 'boom' } });
  });

  it('keeps bundler output at debug: hidden at info, shown at debug', () => {
    const info = capture('json', 'info');
    bundlerLogger(info.log).info('webpack 5 compiled successfully');
    expect(info.lines).toEqual([]);
    const debug = capture('json', 'debug');
    bundlerLogger(debug.log).info('Workflow bundle created', { size: '1.2MB' });
    expect(JSON.parse(debug.lines[0]!)).toMatchObject({ level: 20, msg: 'Workflow bundle created', size: '1.2MB' });
  });
});

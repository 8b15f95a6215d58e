import { execFile } from 'node:child_process';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { projectRoot } from '../../dev/tools.js';
import { createBatchedWriter, createLogger, flushLogs, LOG_BATCH_MS, logFormat } from '../../src/runtime/logger.js';
import { bundlerLogger, temporalLogFunction } from '../../src/worker/temporal-logging.js';

function capture(format: 'json' | 'pretty' = 'json', level = 'trace') {
  const lines: string[] = [];
  return { lines, log: createLogger({ level, format, write: (line) => lines.push(line) }) };
}

describe('log format', () => {
  it('is JSON when stdout is not a terminal, or when LOG_FORMAT=json; pretty on a terminal, or when LOG_FORMAT=pretty', () => {
    expect(logFormat({}, false)).toBe('json');
    expect(logFormat({ LOG_FORMAT: 'json' }, true)).toBe('json');
    expect(logFormat({}, true)).toBe('pretty');
    // npm start's worker: a pipe to a parent on a terminal.
    expect(logFormat({ LOG_FORMAT: 'pretty' }, false)).toBe('pretty');
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

describe('stdout lines in batches', () => {
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  it('holds info lines for at most the delay, then writes them in order in one chunk', () => {
    vi.useFakeTimers();
    const chunks: string[] = [];
    const batch = createBatchedWriter((c) => chunks.push(c), { maxDelayMs: 20 });
    batch.write('a\n', 30);
    batch.write('b\n', 20);
    vi.advanceTimersByTime(19);
    expect(chunks).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(chunks).toEqual(['a\nb\n']);
    batch.write('c\n', 30);
    vi.advanceTimersByTime(20);
    expect(chunks).toEqual(['a\nb\n', 'c\n']);
  });

  it('writes a warning or an error at once, after the lines waiting before it', () => {
    vi.useFakeTimers();
    const chunks: string[] = [];
    const batch = createBatchedWriter((c) => chunks.push(c));
    batch.write('info\n', 30);
    batch.write('warn\n', 40);
    expect(chunks).toEqual(['info\nwarn\n']);
    batch.write('error\n', 50);
    expect(chunks).toEqual(['info\nwarn\n', 'error\n']);
    vi.advanceTimersByTime(1_000);
    expect(chunks).toHaveLength(2);
  });

  it('writes when the waiting lines reach the size bound, and on flush', () => {
    const chunks: string[] = [];
    const batch = createBatchedWriter((c) => chunks.push(c), { maxBytes: 10 });
    batch.write('12345\n', 30);
    expect(chunks).toEqual([]);
    batch.write('67890\n', 30);
    expect(chunks).toEqual(['12345\n67890\n']);
    batch.write('x\n', 30);
    batch.flush();
    batch.flush();
    expect(chunks).toEqual(['12345\n67890\n', 'x\n']);
  });

  it('is what a logger without `write` does with process.stdout: info waits, flushLogs and errors write', () => {
    vi.useFakeTimers();
    const written: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    const log = createLogger({ level: 'info', format: 'json' });
    log.info({ requestId: 'r1' }, 'request');
    log.info({ requestId: 'r2' }, 'request');
    expect(written).toEqual([]);
    vi.advanceTimersByTime(LOG_BATCH_MS);
    expect(written).toHaveLength(1);
    expect(
      written[0]!
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l).requestId),
    ).toEqual(['r1', 'r2']);
    log.info({ requestId: 'r3' }, 'request');
    flushLogs();
    expect(JSON.parse(written[1]!)).toMatchObject({ requestId: 'r3' });
    log.info('before');
    log.error('failed');
    expect(
      written[2]!
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l).msg),
    ).toEqual(['before', 'failed']);
  });

  it('writes what waits when the process exits, process.exit included', async () => {
    const logger = path.join(projectRoot, 'src', 'runtime', 'logger.ts');
    const script = `import { logger } from ${JSON.stringify(logger)}; logger.info('held'); logger.info('then exit'); process.exit(3);`;
    const { code, stdout } = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        cwd: projectRoot,
        env: { ...process.env, VITEST: '', LOG_LEVEL: 'info', LOG_FORMAT: 'json' },
      });
      let out = '';
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      child.on('close', (c) => resolve({ code: c, stdout: out }));
    });
    expect(code).toBe(3);
    expect(
      stdout
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l).msg),
    ).toEqual(['held', 'then exit']);
  });
});

/**
 * The launchers' process supervision (dev/children.ts managedProcess), on real child processes:
 * a crash is followed by a new process after a backoff, while a stop or a restart the handle asked
 * for never is, and a process that fails to start again is tried again later.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { managedProcess, RESPAWN_FIRST_MS, type ManagedProcess } from '../../dev/children.js';
import { eventually } from '../support/harness.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'managed-process-'));
/** While this file exists, the child exits at once instead of saying it is ready. */
const failFlag = path.join(dir, 'fail');
const CHILD = `if (require('fs').existsSync(${JSON.stringify(failFlag)})) process.exit(3);
process.send('ready'); setInterval(() => {}, 60000);`;

let running: ManagedProcess | undefined;
afterEach(async () => {
  await running?.stop();
  fs.rmSync(failFlag, { force: true });
});

function supervised(): { p: ManagedProcess; said: string[]; launches: () => number } {
  const said: string[] = [];
  let launches = 0;
  const p = managedProcess({
    name: 'child',
    overlap: true,
    graceMs: 2_000,
    launch: () => {
      launches++;
      return spawn(process.execPath, ['-e', CHILD], { stdio: ['ignore', 'ignore', 'ignore', 'ipc'] });
    },
    ready: (child) =>
      new Promise<void>((resolve, reject) => {
        child.once('message', () => resolve());
        child.once('exit', (code) => reject(new Error(`exited with ${code}`)));
      }),
    respawn: { say: (line) => said.push(line) },
  });
  running = p;
  return { p, said, launches: () => launches };
}

const gone = (pid: number) => {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
};

describe('a supervised process', () => {
  it('is started again after a crash (kill -9 from outside), once, after the backoff', async () => {
    const { p, said, launches } = supervised();
    await p.start();
    const first = p.pid!;
    const killedAt = Date.now();
    process.kill(first, 'SIGKILL');
    const second = await eventually(async () => p.pid !== undefined && p.pid !== first && p.pid);
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual(RESPAWN_FIRST_MS - 50);
    expect(gone(first)).toBe(true);
    expect(said[0]).toMatch(/^child exited \(SIGKILL\); starting it again in 1 s\.$/);
    expect(said[1]).toBe(`child is running again (pid ${second}).`);
    // One new process, not one per exit listener or timer.
    await new Promise((r) => setTimeout(r, RESPAWN_FIRST_MS * 1.5));
    expect(launches()).toBe(2);
    expect(p.pid).toBe(second);
  });

  it('is not started again after a stop or a restart it was asked for', async () => {
    const { p, said, launches } = supervised();
    await p.start();
    const first = p.pid!;
    await p.restart();
    const second = p.pid!;
    expect(second).not.toBe(first);
    await p.stop();
    await new Promise((r) => setTimeout(r, RESPAWN_FIRST_MS * 1.5));
    expect(launches()).toBe(2);
    expect(gone(second)).toBe(true);
    expect(said).toEqual([]);
  });

  it('that fails to start again is tried again with a longer wait, and a stop ends the tries', async () => {
    const { p, said } = supervised();
    await p.start();
    const first = p.pid!;
    fs.writeFileSync(failFlag, '');
    process.kill(first, 'SIGKILL');
    await eventually(async () => said.some((l) => l.startsWith('child did not start again')), 10_000);
    expect(said.find((l) => l.startsWith('child did not start again'))).toMatch(/next try in 2 s\.$/);
    fs.rmSync(failFlag);
    const back = await eventually(async () => p.pid !== undefined && p.pid, 10_000);
    expect(back).not.toBe(first);

    fs.writeFileSync(failFlag, '');
    process.kill(back, 'SIGKILL');
    await eventually(async () => said.filter((l) => l.startsWith('child exited')).length === 2);
    await p.stop();
    const saidAtStop = said.length;
    await new Promise((r) => setTimeout(r, 5_000));
    expect(said.slice(saidAtStop)).toEqual([]);
  }, 30_000);
});

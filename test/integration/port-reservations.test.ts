/**
 * dev/ports.ts freePort: a port handed out is reserved on this machine until its process exits,
 * so two launches never get the same port before either listens on it.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, releaseFreePorts } from '../../dev/ports.js';
import { projectRoot } from '../../dev/tools.js';

const RESERVATIONS = path.join(os.tmpdir(), 'webhook-platform-ports');
const N = 300;
/** Whose reservation a port's file names: `pid start-time`. */
const ownerOf = (port: number) => fs.readFileSync(path.join(RESERVATIONS, String(port)), 'utf8').split(' ')[0];

// A test worker may be ended without its exit handler: give the thousands of ports taken here back.
afterAll(releaseFreePorts);

/** A child process that takes `n` ports, prints them, and holds them until its stdin closes. */
function holder(n: number) {
  const script = `
    import { freePort } from './dev/ports.ts';
    const ports = [];
    for (let i = 0; i < ${n}; i++) ports.push(await freePort());
    console.log(JSON.stringify(ports));
    process.stdin.resume();
    process.stdin.on('end', () => process.exit(0));`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: projectRoot,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const ports = new Promise<number[]>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('\n')) resolve(JSON.parse(out) as number[]);
    });
    child.once('exit', (code) => reject(new Error(`holder exited (${code}) before printing its ports`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, ports, exited };
}

describe('freePort', () => {
  it('never hands one port out twice in a process, though none of them is listened on', async () => {
    // 300 random picks of 12,000 ports would repeat one with a chance of 97 %.
    const ports = [];
    for (let i = 0; i < N; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(N);
    for (const p of ports) expect(ownerOf(p)).toBe(String(process.pid));
  });

  it("never hands out another live process's port, and frees them all when that process exits", async () => {
    const other = holder(N);
    const theirs = await other.ports;
    const mine = [];
    for (let i = 0; i < N; i++) mine.push(await freePort());
    // 300 against 300 of 12,000 would share about 7.5 ports.
    expect(mine.filter((p) => theirs.includes(p))).toEqual([]);
    other.child.stdin.end();
    await other.exited;
    expect(theirs.filter((p) => fs.existsSync(path.join(RESERVATIONS, String(p))))).toEqual([]);
  }, 60_000);

  it("takes over a reservation whose process is gone (killed before it could clean up), or whose pid is now another process's", async () => {
    const other = holder(N);
    const [dead, reused] = [new Set<number>(), new Set<number>()];
    (await other.ports).forEach((p, i) => (i % 2 ? dead : reused).add(p));
    other.child.kill('SIGKILL');
    await other.exited;
    // Their files stay behind. Half of them are made to name a live pid (this very process) with
    // another start time: a dead process's reservation whose pid went to a new process.
    for (const p of reused) fs.writeFileSync(path.join(RESERVATIONS, String(p)), `${process.pid} 1`);
    // Neither keeps its ports: 2,000 picks of about 12,000 land on some of each.
    const mine = [];
    for (let i = 0; i < 2_000; i++) mine.push(await freePort());
    for (const gone of [dead, reused]) {
      const takenOver = mine.filter((p) => gone.has(p));
      expect(takenOver.length).toBeGreaterThan(0);
      for (const p of takenOver) expect(ownerOf(p)).toBe(String(process.pid));
    }
  }, 60_000);
});

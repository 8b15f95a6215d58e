/**
 * dev/ports.ts freePort: a port handed out is reserved on this machine until its process exits,
 * so two launches never get the same port before either listens on it.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../dev/ports.js';
import { projectRoot } from '../../dev/tools.js';

const RESERVATIONS = path.join(os.tmpdir(), 'webhook-platform-ports');
const N = 300;

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
    for (const p of ports) expect(fs.readFileSync(path.join(RESERVATIONS, String(p)), 'utf8')).toBe(String(process.pid));
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

  it('takes over a reservation whose process is gone (killed before it could clean up)', async () => {
    const other = holder(N);
    const theirs = new Set(await other.ports);
    other.child.kill('SIGKILL');
    await other.exited;
    // Their files stay behind; a dead owner does not keep its ports, so picks land on some of them.
    const mine = [];
    for (let i = 0; i < 2_000; i++) mine.push(await freePort());
    const takenOver = mine.filter((p) => theirs.has(p));
    expect(takenOver.length).toBeGreaterThan(0);
    for (const p of takenOver) expect(fs.readFileSync(path.join(RESERVATIONS, String(p)), 'utf8')).toBe(String(process.pid));
  }, 60_000);
});

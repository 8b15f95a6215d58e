/**
 * What every benchmark figure is measured against: the machine (CPU model, cores, load) and its
 * bare loop, signed ~1 KiB POSTs straight to the bench receiver, 16 in flight on keep-alive
 * connections, no platform in between. Absolute rates move between machines by 2x and more; a
 * figure printed without its machine line cannot be compared with anything.
 */
import fs from 'node:fs';
import os from 'node:os';
import { Pool } from 'undici';
import { getEventDefinition } from '../src/core/catalog/index.js';
import { signBody } from '../src/security/signature.js';
import { demandData } from './demand-events.js';
import type { ReceiverHandle } from './receiver-client.js';

const now = () => performance.timeOrigin + performance.now();

export interface Machine {
  cpuModel: string;
  cores: number;
  /** The bare loop's rate in the same run; undefined when it was not measured. */
  barePerSecond?: number;
  loadavg: number[];
}

export function machine(barePerSecond?: number): Machine {
  const cpus = os.cpus();
  return {
    cpuModel: (cpus[0]?.model ?? 'unknown CPU').replace(/\s+/g, ' ').trim(),
    cores: cpus.length,
    barePerSecond,
    loadavg: os.loadavg().map((l) => +l.toFixed(2)),
  };
}

/** The one line printed with every table. */
export function machineLine(m: Machine): string {
  const bare = m.barePerSecond === undefined ? 'bare loop not measured' : `bare loop ${m.barePerSecond.toLocaleString('en-US')} req/s`;
  return `machine: ${m.cpuModel}, ${m.cores} cores, ${bare}, load average ${m.loadavg.join(' ')}`;
}

/**
 * Busy CPU seconds of the whole machine (/proc/stat: user, nice, system, irq, softirq, steal). Over
 * a timed window it is the system under test plus the client and the receiver, which cost the same
 * for every system compared; NaN where there is no /proc.
 */
export function machineBusyCpuSeconds(): number {
  try {
    const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).map(Number);
    return (f[1]! + f[2]! + f[3]! + f[6]! + f[7]! + f[8]!) / 100; // USER_HZ ticks
  } catch {
    return NaN;
  }
}

/**
 * Waits (at most `maxSeconds`) until the whole machine has been busy under `cores` cores for two
 * half-second samples in a row: what a system started in the background (an endpoint's setup) has
 * finished. Returns the seconds waited and whether it settled before the bound.
 */
export async function waitForQuietMachine(maxSeconds = 30, cores = 0.25): Promise<{ seconds: number; settled: boolean }> {
  const t0 = now();
  let quiet = 0;
  let busy = machineBusyCpuSeconds();
  while (now() - t0 < maxSeconds * 1000) {
    await new Promise((r) => setTimeout(r, 500));
    const b = machineBusyCpuSeconds();
    quiet = (b - busy) / 0.5 < cores ? quiet + 1 : 0;
    busy = b;
    if (quiet >= 2) return { seconds: +((now() - t0) / 1000).toFixed(1), settled: true };
  }
  return { seconds: maxSeconds, settled: false };
}

/** The bare loop against `receiver` for `seconds`: its requests and rate. */
export async function bareLoop(
  receiver: ReceiverHandle,
  ca: string,
  seconds: number,
  concurrency = 16,
): Promise<{ requests: number; perSecond: number }> {
  const secret = 'whsec_bare_loop_secret';
  receiver.secrets({ '/bare': secret });
  const pool = new Pool(`https://127.0.0.1:${receiver.port}`, { connections: concurrency, connect: { ca } });
  const def = getEventDefinition('crm.demand.created')!;
  const body = Buffer.from(JSON.stringify({ event: def.type, ...demandData('bare', 'c') }));
  let sent = 0;
  const until = now() + seconds * 1000;
  const t0 = now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (now() < until) {
        const n = sent++;
        const res = await pool.request({
          method: 'POST',
          path: '/bare',
          headers: { 'content-type': 'application/json', 'x-idempotency-key': `bare:${n}`, 'x-webhook-signature': signBody(secret, body) },
          body,
        });
        await res.body.text();
      }
    }),
  );
  const elapsed = (now() - t0) / 1000;
  await pool.close();
  return { requests: sent, perSecond: Math.round(sent / elapsed) };
}

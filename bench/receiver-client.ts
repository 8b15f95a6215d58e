/**
 * The benchmark's receiver (bench/receiver.ts, a child process), as the parent sees it: the
 * arrivals it reports, the secrets it checks signatures with, and its counters. Shared by the
 * development-shape phases (bench/run.ts) and the production-shape phase (bench/production-phase.ts).
 */
import type { Service } from './processes.js';
import type { FromReceiver, ReceiverStats, ToReceiver } from './receiver.js';

export interface ReceiverHandle {
  port: number;
  /** First arrival of each idempotency key. */
  arrivals: Map<string, number>;
  secrets(map: Record<string, string>): void;
  stats(): Promise<ReceiverStats>;
}

export async function connectReceiver(service: Service, tls: { cert: string; key: string }): Promise<ReceiverHandle> {
  const arrivals = new Map<string, number>();
  const waiting: ((m: FromReceiver) => void)[] = [];
  service.child.on('message', (m: FromReceiver) => {
    if (m.type === 'arrivals') {
      for (const [k, t] of m.items) if (!arrivals.has(k)) arrivals.set(k, t);
    } else waiting.shift()?.(m);
  });
  const ask = <T extends FromReceiver>(m: ToReceiver) =>
    new Promise<T>((resolve) => {
      waiting.push(resolve as (m: FromReceiver) => void);
      service.child.send(m);
    });
  const { port } = await ask<{ type: 'listening'; port: number }>({ type: 'listen', cert: tls.cert, key: tls.key });
  return {
    port,
    arrivals,
    secrets: (secrets) => service.child.send({ type: 'secrets', secrets } satisfies ToReceiver),
    stats: () => ask<ReceiverStats>({ type: 'stats' }),
  };
}

/**
 * Temporal keeps a running activity's Context in an AsyncLocalStorage, and its worker connection's
 * call context (deadline, abort signal) in another. An activity's start enables both, and nothing
 * disables them: from the worker's first activity on, Node 20 ran async hooks on every promise of
 * the process (`_propagate`, `promiseInitHook`: 5–6 % of the sending worker's busy time in `npm run
 * bench -- --peer --profile`), though the direct sessions, which do most of the sending, run in no
 * activity. So both are disabled whenever no activity runs; the next activity's start enables them
 * again (`AsyncLocalStorage.run`), and no activity reads them while none runs.
 */
import { asyncLocalStorage as activityContextStorage } from '@temporalio/activity';
import type { ActivityInterceptorsFactory, NativeConnection } from '@temporalio/worker';

export function activityContextsOffWhenIdle(connection: Pick<NativeConnection, 'callContextStorage'>): ActivityInterceptorsFactory {
  let running = 0;
  // After the activity's last callbacks in its context (its result is encoded after `execute`
  // returns), and only if no other activity started meanwhile.
  const offIfIdle = () => {
    if (running > 0) return;
    activityContextStorage.disable();
    connection.callContextStorage.disable();
  };
  return () => ({
    inbound: {
      async execute(input, next) {
        running++;
        try {
          return await next(input);
        } finally {
          running--;
          if (running === 0) setImmediate(offIfIdle);
        }
      },
    },
  });
}

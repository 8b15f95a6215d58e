/**
 * Serves many callers' requests with shared statements: a request made while no statement is in
 * flight goes at once (with the others made in the same turn of the event loop); requests made
 * while one is in flight wait for it and go together in the next. So every request of a statement
 * was made before the statement started (a read sees all that was committed before its caller
 * asked), and under load batches grow instead of a queue of statements. (The first waits for the
 * end of the event loop turn, setImmediate, so that callers woken by the same I/O go together.)
 */
export type BatchedCall<Req, Res> = (req: Req) => Promise<Res>;

/** `run` answers its requests in their order; when it throws, every caller of that batch gets the error. */
export function createStatementBatcher<Req, Res>(run: (reqs: Req[]) => Promise<Res[]>, maxBatch = 256): BatchedCall<Req, Res> {
  const waiting: { req: Req; resolve: (res: Res) => void; reject: (err: unknown) => void }[] = [];
  let inFlight = false;
  let scheduled = false;

  function go(): void {
    scheduled = false;
    if (inFlight || waiting.length === 0) return;
    inFlight = true;
    const batch = waiting.splice(0, maxBatch);
    run(batch.map((w) => w.req))
      .then(
        (results) => batch.forEach((w, i) => w.resolve(results[i]!)),
        (err) => batch.forEach((w) => w.reject(err)),
      )
      .finally(() => {
        inFlight = false;
        go();
      });
  }

  return (req) =>
    new Promise<Res>((resolve, reject) => {
      waiting.push({ req, resolve, reject });
      if (inFlight || scheduled) return;
      scheduled = true;
      setImmediate(go);
    });
}

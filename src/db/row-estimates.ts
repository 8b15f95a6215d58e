/**
 * Always true of `unnest(...) WITH ORDINALITY AS r(..., n)` (no batch comes near a billion rows),
 * and estimated at one row whether the arrays are known or not. A prepared statement is planned
 * for its parameters on its first five runs, then Postgres keeps its generic plan only if that
 * costs no more; a generic plan counts an array parameter's `unnest` as ten rows, so a statement
 * mostly asked for one (a sparse endpoint's lease, the record of its one attempt) was planned at
 * every call (1,037 plans in 1,200 calls of the lease in `npm run bench -- --peer --statements`'s
 * sparse phase; the claim, before it had such a filter, 0.44 ms of planning a call, more than it
 * ran). With this filter both plans count one row, and the generic one is kept. The arrays are all
 * the parameters these statements have, and a custom plan learns only their length from them.
 */
export const ONE_ROW_ESTIMATE = `r.n BETWEEN 1 AND 1000000000`;

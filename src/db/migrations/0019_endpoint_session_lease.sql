-- Up Migration

-- At most one delivery session per endpoint across all workers (activities/session-leases.ts):
-- a session, direct (started by a worker's due router, no workflow task) or the workflow's own
-- (the deliverDue activity), holds the endpoint row's lease while it runs. The lease is taken by
-- the statement that reads the endpoint at session open, so it costs no statement of its own,
-- and it is short (renewed by its worker while the session lives) so that a killed worker's
-- endpoint is taken over within seconds.
-- `handover_at`: a session ended with a round its workflow must apply (a failure); until the
-- workflow has recorded it (recordHealth), no direct session starts (no burst on a failing
-- endpoint), and the workflow's own sessions wait for it too.
ALTER TABLE endpoints
  ADD COLUMN session_owner text,
  ADD COLUMN session_until timestamptz,
  ADD COLUMN handover_at timestamptz;

-- Sessions lost with their worker (a lease past its time, never released): found every few seconds.
-- Empty while no session runs, so it costs nothing to idle endpoints.
CREATE INDEX endpoints_session_lease ON endpoints (session_until) WHERE session_owner IS NOT NULL;

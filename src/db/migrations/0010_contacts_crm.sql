-- Up Migration

-- Funnel stages, per Account (like endpoints, configuration is not per environment). Position
-- is handed out in creation order under the Account's row lock.
CREATE TABLE stages (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  key text NOT NULL,
  label text NOT NULL,
  position integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (account_id, key)
);

-- A contact's place in the funnel. No cascade: deleting a stage moves its contacts out first,
-- each with an event (api/routes/stages.ts); the default NO ACTION still lets an Account's
-- deletion cascade through both tables.
ALTER TABLE contacts
  ADD COLUMN stage_id uuid REFERENCES stages (id),
  ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX contacts_stage ON contacts (stage_id) WHERE stage_id IS NOT NULL;
CREATE INDEX contacts_account_created ON contacts (account_id, created_at DESC, id DESC);

-- Every writer of contacts (the provider ingress refreshing a profile, the API) moves
-- updated_at, but only when the row really changed.
CREATE FUNCTION touch_contact() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.updated_at := clock_timestamp();
  RETURN NEW;
END
$$;
CREATE TRIGGER contacts_touched BEFORE UPDATE ON contacts
  FOR EACH ROW WHEN (OLD IS DISTINCT FROM NEW) EXECUTE FUNCTION touch_contact();

-- Consent history of a contact: every record is kept; `changed` says whether it moved the
-- current state of its (channel, purpose), i.e. whether it emitted an event.
CREATE TABLE consent_records (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
  channel text NOT NULL CHECK (channel IN ('chatapp', 'photoapp')),
  purpose text NOT NULL CHECK (purpose IN ('utility', 'marketing')),
  state text NOT NULL CHECK (state IN ('granted', 'revoked')),
  origin text NOT NULL CHECK (origin IN ('manual', 'import', 'api', 'keyword', 'conversation_button')),
  evidence text NOT NULL DEFAULT '',
  changed boolean NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX consent_records_contact ON consent_records (contact_id, created_at DESC, id DESC);

-- CRM events decided in a write's transaction and not yet in the stream. The write and its row
-- commit together; the row is stored through the normal ingest path right after and then
-- removed. A crash in between leaves the row for the next write of that contact, or for
-- emitPendingCrmEvents: the idempotency key makes a second store harmless.
CREATE TABLE crm_outbox (
  seq bigserial PRIMARY KEY,
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
  type text NOT NULL,
  data jsonb NOT NULL,
  refs jsonb NOT NULL,
  occurred_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX crm_outbox_contact ON crm_outbox (contact_id, seq);

CREATE INDEX conversations_account_created ON conversations (account_id, created_at DESC, id DESC);
CREATE INDEX messages_account_created ON messages (account_id, created_at DESC, id DESC);
CREATE INDEX messages_conversation ON messages (conversation_id) WHERE conversation_id IS NOT NULL;

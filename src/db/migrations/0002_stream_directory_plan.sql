-- Up Migration

-- The rest of the directory: contacts and messages, so incoming messages resolve and
-- statuses of messages the platform never sent produce nothing.
CREATE TABLE contacts (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  channel_account_id uuid NOT NULL REFERENCES channel_accounts (id) ON DELETE CASCADE,
  wa_id text NOT NULL,
  user_id text,
  username text,
  phone text,
  profile_name text,
  metadata jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (channel_account_id, wa_id)
);
CREATE INDEX contacts_account ON contacts (account_id);

CREATE TABLE conversations (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  channel_account_id uuid NOT NULL REFERENCES channel_accounts (id) ON DELETE CASCADE,
  contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
  fep_expires_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (channel_account_id, contact_id)
);

CREATE TABLE messages (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  channel_account_id uuid NOT NULL REFERENCES channel_accounts (id) ON DELETE CASCADE,
  contact_id uuid REFERENCES contacts (id) ON DELETE CASCADE,
  conversation_id uuid REFERENCES conversations (id) ON DELETE SET NULL,
  external_id text NOT NULL,
  direction text NOT NULL CHECK (direction IN ('inbound', 'outbound')),
  type text,
  status text,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (channel_account_id, external_id)
);
CREATE INDEX messages_contact ON messages (contact_id);

-- The durable stream. One row per (Account, environment) holds the last cursor handed out;
-- writers take its row lock, so cursors are assigned in commit order and a reader that saw
-- cursor N+1 has already been able to see N.
CREATE TABLE stream_heads (
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  environment text NOT NULL CHECK (environment IN ('live', 'sandbox')),
  last_cursor bigint NOT NULL,
  PRIMARY KEY (account_id, environment)
);

CREATE TABLE events (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  environment text NOT NULL CHECK (environment IN ('live', 'sandbox')),
  cursor bigint NOT NULL,
  type text NOT NULL,
  idempotency_key text NOT NULL,
  customer_id uuid,
  channel text,
  channel_account_id uuid REFERENCES channel_accounts (id) ON DELETE CASCADE,
  -- { id, channel, display } as it was when the event happened.
  channel_account jsonb,
  external_id text,
  message_id text,
  message_resource_id uuid,
  -- The platform contact the event is about (its messages' events and those naming it), for deletion.
  contact_ref text,
  -- The webhook payload beyond the envelope, and the stream item's data.
  data jsonb NOT NULL,
  stream_data jsonb NOT NULL,
  occurred_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, environment, cursor),
  UNIQUE (account_id, environment, idempotency_key)
);
CREATE INDEX events_contact ON events (account_id, contact_ref) WHERE contact_ref IS NOT NULL;
CREATE INDEX events_channel_account ON events (channel_account_id) WHERE channel_account_id IS NOT NULL;

-- Free-plan forwarding count per Account and UTC month.
CREATE TABLE plan_usage (
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  month date NOT NULL,
  received_count integer NOT NULL DEFAULT 0,
  PRIMARY KEY (account_id, month)
);

-- Owner alerts and plan warnings, each sent once (dedupe_key).
CREATE TABLE notifications (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  kind text NOT NULL,
  dedupe_key text NOT NULL UNIQUE,
  payload jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  sent_at timestamptz
);

-- Provider notifications answered 200 (so the provider stops retrying) but not stored.
CREATE TABLE provider_rejections (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  provider text NOT NULL,
  reason text NOT NULL,
  body text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

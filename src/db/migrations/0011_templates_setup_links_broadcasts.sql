-- Up Migration

-- Message templates as the provider last reported them. Templates belong to a business account
-- (waba), so one row per (Account, environment, waba, provider template); channel accounts of the
-- same waba share them. Status changes arrive through the provider webhook and emit no event.
CREATE TABLE templates (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  environment text NOT NULL CHECK (environment IN ('live', 'sandbox')),
  waba_id text NOT NULL,
  provider_template_id text NOT NULL,
  name text NOT NULL,
  language text NOT NULL,
  category text,
  status text NOT NULL,
  -- Why the provider rejected or paused it, when it said.
  status_reason text,
  components jsonb NOT NULL DEFAULT '[]',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, environment, waba_id, provider_template_id)
);
CREATE INDEX templates_page ON templates (account_id, environment, created_at, id);
CREATE INDEX templates_provider_id ON templates (waba_id, provider_template_id);

-- Links a Customer follows to connect a number through the provider's embedded signup. Only the
-- SHA-256 of the link's token is kept: the url is shown once, when the link is created.
CREATE TABLE setup_links (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  customer_id uuid NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
  environment text NOT NULL CHECK (environment IN ('live', 'sandbox')),
  connection_mode text NOT NULL CHECK (connection_mode IN ('dedicated', 'coexistence')),
  token_hash bytea NOT NULL UNIQUE,
  expires_at timestamptz NOT NULL,
  completed_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX setup_links_customer_page ON setup_links (customer_id, created_at, id);

-- Broadcasts: one template sent to many recipients of one channel account.
CREATE TABLE broadcasts (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  channel_account_id uuid NOT NULL REFERENCES channel_accounts (id) ON DELETE CASCADE,
  environment text NOT NULL CHECK (environment IN ('live', 'sandbox')),
  name text,
  template_name text NOT NULL,
  template_language text NOT NULL,
  status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'sending', 'sent')),
  sent_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX broadcasts_page ON broadcasts (account_id, environment, created_at, id);

CREATE TABLE broadcast_recipients (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  broadcast_id uuid NOT NULL REFERENCES broadcasts (id) ON DELETE CASCADE,
  -- Normalized (digits only): the same number written two ways is one recipient.
  to_recipient text NOT NULL,
  components jsonb,
  -- sending: claimed by a send in progress (one sender per recipient, so none is sent twice).
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sending', 'sent', 'failed')),
  message_id uuid REFERENCES messages (id) ON DELETE SET NULL,
  failure_reason text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (broadcast_id, to_recipient)
);
CREATE INDEX broadcast_recipients_page ON broadcast_recipients (broadcast_id, created_at, id);

-- A message sent by a broadcast names it, so a later reply can be traced back to the broadcast.
ALTER TABLE messages ADD COLUMN broadcast_id uuid REFERENCES broadcasts (id) ON DELETE SET NULL;
CREATE INDEX messages_broadcast ON messages (broadcast_id) WHERE broadcast_id IS NOT NULL;

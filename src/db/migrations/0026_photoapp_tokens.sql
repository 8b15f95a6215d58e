-- Up Migration

-- A photoapp account's own access token (SPEC 3.4), AES-256-GCM like endpoint secrets. In a table
-- of its own so that no `SELECT *` of channel_accounts ever carries it; its status, expiry and
-- last check stay on channel_accounts (0009).
CREATE TABLE channel_account_tokens (
  channel_account_id uuid PRIMARY KEY REFERENCES channel_accounts (id) ON DELETE CASCADE,
  token_ciphertext bytea NOT NULL,
  -- When the platform last renewed it before expiry (null: as the authorization gave it).
  renewed_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- A setup link connects a chatapp number (the embedded signup) or a photoapp account (the
-- provider's login). Existing links are chatapp's; a constant default rewrites no rows.
ALTER TABLE setup_links ADD COLUMN channel text NOT NULL DEFAULT 'chatapp' CHECK (channel IN ('chatapp', 'photoapp'));

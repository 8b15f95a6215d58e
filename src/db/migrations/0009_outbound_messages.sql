-- Up Migration

-- What the provider last said about a channel account: its number's quality, tier and status
-- (re-read on phone_number_quality_update, SPEC 6.3) and, for photoapp, its token (SPEC 3.4).
ALTER TABLE channel_accounts
  ADD COLUMN quality_rating text,
  ADD COLUMN messaging_limit_tier text,
  ADD COLUMN number_status text,
  ADD COLUMN numbers_read_at timestamptz,
  ADD COLUMN token_status text CHECK (token_status IN ('ok', 'expiring', 'expired', 'invalid', 'revoked', 'unknown')),
  ADD COLUMN token_expires_at timestamptz,
  ADD COLUMN token_checked_at timestamptz;

-- The channel account list pages by (created_at, id) within an Account and environment.
CREATE INDEX channel_accounts_page ON channel_accounts (account_id, environment, created_at, id);

-- What an outbound message was: its recipient and the content the platform sent.
ALTER TABLE messages
  ADD COLUMN to_recipient text,
  ADD COLUMN content jsonb;

-- Idempotency-Key of POST /api/v1/messages: a retried send answers the first message instead of
-- sending again. message_id is null while the first send is in flight (or it was abandoned).
CREATE TABLE message_idempotency_keys (
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  environment text NOT NULL CHECK (environment IN ('live', 'sandbox')),
  key text NOT NULL,
  request_hash text NOT NULL,
  message_id uuid REFERENCES messages (id) ON DELETE CASCADE,
  reserved_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, environment, key)
);

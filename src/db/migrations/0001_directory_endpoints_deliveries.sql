-- Up Migration

-- The directory: tenants, their keys and customers, and the channel accounts events come from.
CREATE TABLE accounts (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name text NOT NULL,
  owner_email text NOT NULL,
  plan text NOT NULL DEFAULT 'free' CHECK (plan IN ('free', 'trial', 'paid')),
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  environment text NOT NULL CHECK (environment IN ('live', 'sandbox')),
  scopes text[] NOT NULL,
  -- SHA-256 of the key; the key itself is shown once and never stored.
  key_hash bytea NOT NULL UNIQUE,
  prefix text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);
CREATE INDEX api_keys_account ON api_keys (account_id);

CREATE TABLE customers (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX customers_account ON customers (account_id);

CREATE TABLE channel_accounts (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  customer_id uuid REFERENCES customers (id) ON DELETE SET NULL,
  channel text NOT NULL CHECK (channel IN ('chatapp', 'photoapp')),
  display text NOT NULL,
  phone_number_id text,
  waba_id text,
  environment text NOT NULL DEFAULT 'live' CHECK (environment IN ('live', 'sandbox')),
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX channel_accounts_account ON channel_accounts (account_id);
CREATE UNIQUE INDEX channel_accounts_phone_number ON channel_accounts (channel, phone_number_id) WHERE phone_number_id IS NOT NULL;
CREATE INDEX channel_accounts_waba ON channel_accounts (waba_id) WHERE waba_id IS NOT NULL;

-- Webhook endpoints. Secrets and Authorization values are AES-256-GCM ciphertexts.
CREATE TABLE endpoints (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  customer_id uuid REFERENCES customers (id) ON DELETE SET NULL,
  url text NOT NULL,
  events text[] NOT NULL,
  active boolean NOT NULL DEFAULT true,
  secret_ciphertext bytea NOT NULL,
  authorization_ciphertext bytea,
  health_status text NOT NULL DEFAULT 'unverified' CHECK (health_status IN ('unverified', 'healthy', 'degraded', 'paused')),
  failure_streak integer NOT NULL DEFAULT 0,
  verified_at timestamptz,
  last_success_at timestamptz,
  last_failure_at timestamptz,
  last_response_code integer,
  next_attempt_at timestamptz,
  paused_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  -- Deleted endpoints stay as tombstones so their deliveries remain in the audit list.
  deleted_at timestamptz
);
CREATE INDEX endpoints_account_page ON endpoints (account_id, created_at, id) WHERE deleted_at IS NULL;

-- One row per (event, endpoint) delivery, and per test send.
CREATE TABLE deliveries (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  endpoint_id uuid NOT NULL REFERENCES endpoints (id) ON DELETE CASCADE,
  event_id uuid,
  event_type text NOT NULL,
  idempotency_key text NOT NULL,
  environment text CHECK (environment IN ('live', 'sandbox')),
  status text NOT NULL CHECK (status IN ('pending', 'success', 'failed', 'exhausted', 'limited')),
  attempts integer NOT NULL DEFAULT 0,
  response_code integer,
  last_attempt_at timestamptz,
  next_attempt_at timestamptz,
  terminal_reason text,
  -- When the delivery became held (endpoint paused, inactive or unverified); drives the 14-day expiry.
  held_since timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX deliveries_account_page ON deliveries (account_id, created_at DESC, id DESC);
CREATE INDEX deliveries_endpoint_page ON deliveries (endpoint_id, created_at DESC, id DESC);
CREATE INDEX deliveries_due ON deliveries (endpoint_id, next_attempt_at) WHERE status IN ('pending', 'failed');
CREATE INDEX deliveries_event ON deliveries (event_id) WHERE event_id IS NOT NULL;

CREATE TABLE delivery_attempts (
  delivery_id uuid NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
  number integer NOT NULL,
  started_at timestamptz NOT NULL,
  duration_ms integer NOT NULL,
  response_code integer,
  error text CHECK (error IN ('timeout', 'connection_error', 'tls_error', 'blocked_destination', 'non_2xx')),
  response_excerpt text,
  PRIMARY KEY (delivery_id, number)
);

-- Up Migration

-- The provider's id of a photoapp business account (the primary channel is found by phone_number_id).
ALTER TABLE channel_accounts ADD COLUMN provider_account_id text;
CREATE UNIQUE INDEX channel_accounts_provider_account ON channel_accounts (channel, provider_account_id) WHERE provider_account_id IS NOT NULL;

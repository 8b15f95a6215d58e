-- Up Migration

-- API processes keep recently used keys in memory (api/api-key-cache.ts). Every committed change
-- to a key (revocation, new scopes, deletion with its Account) is announced on this channel with
-- the key's hash, so each process forgets it at once; a TRUNCATE announces '*' (forget all).
CREATE FUNCTION notify_api_key_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    PERFORM pg_notify('api_key_changes', '*');
  ELSE
    PERFORM pg_notify('api_key_changes', encode(OLD.key_hash, 'hex'));
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER api_keys_changed AFTER UPDATE OR DELETE ON api_keys
  FOR EACH ROW EXECUTE FUNCTION notify_api_key_change();
CREATE TRIGGER api_keys_truncated AFTER TRUNCATE ON api_keys
  FOR EACH STATEMENT EXECUTE FUNCTION notify_api_key_change();

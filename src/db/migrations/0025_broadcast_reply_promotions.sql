-- Up Migration

-- A reply to a broadcast is handled once (SPEC 6.3, changed_by auto): its message claims its row
-- in the transaction that may promote its contact, so a redelivery of the same reply, or the
-- same reply ingested twice at once, never promotes again (even after the contact was moved
-- back by hand). A new table: nothing to rewrite on a populated database.
CREATE TABLE broadcast_reply_promotions (
  reply_message_id uuid PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
  contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- A contact's deletion finds its rows without a scan.
CREATE INDEX broadcast_reply_promotions_contact ON broadcast_reply_promotions (contact_id);

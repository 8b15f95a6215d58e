-- Up Migration

-- A reply to a broadcast is handled once (SPEC 6.3, changed_by auto): its message claims its row
-- in the transaction that may promote its contact, so a redelivery of the same reply, or the
-- same reply ingested twice at once, never promotes again (even after the contact was moved
-- back by hand). No foreign key: its key-share lock on the message (or the contact), taken
-- before the promotion locks the stage and the contact, would invert the lock order of a stage
-- or contact deletion and deadlock. A row left by a deleted message is inert (ids are never
-- reused). A new table: nothing to rewrite on a populated database.
CREATE TABLE broadcast_reply_promotions (
  reply_message_id uuid PRIMARY KEY,
  created_at timestamptz NOT NULL DEFAULT now()
);

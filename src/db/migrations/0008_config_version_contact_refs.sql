-- Up Migration

-- Bumped by every change that invalidates a verification (url, Authorization). A test send
-- captures it before its POST and verifies the endpoint only if it is unchanged at the answer,
-- so a PATCH committed while the test was in flight is never verified by it.
ALTER TABLE endpoints ADD COLUMN config_version integer NOT NULL DEFAULT 0;

-- Every contact an event carries (a message's contact, both contacts of an opportunity that
-- changed hands...): deleting any of them removes the event (SPEC 6.5 rule 6).
ALTER TABLE events ADD COLUMN contact_refs text[] NOT NULL DEFAULT '{}';
UPDATE events SET contact_refs = ARRAY[contact_ref] WHERE contact_ref IS NOT NULL;
CREATE INDEX events_contact_refs ON events USING gin (contact_refs);
DROP INDEX events_contact;

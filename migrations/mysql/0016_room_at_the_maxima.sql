-- Migration 16: room for what the contract allows at its maxima.
--
-- JSON documents whose size the contract bounds only loosely move to
-- MEDIUMTEXT (16 MiB): an event's data (`period.closed` carries ten
-- entries with 1 KiB of metadata each, about 12 KB), a stored idempotent
-- answer (a post with its metadata, and its fed boards' entries in v4)
-- and an audit record's detail (a webhook's URL of 2,048 characters). A
-- row too long for its column stopped every period close for good
-- (issue 39); `store::LongText` reads these columns, which sqlx hands
-- back as blobs on MySQL.
ALTER TABLE webhook_deliveries MODIFY data MEDIUMTEXT NOT NULL;
ALTER TABLE idempotency_keys MODIFY body MEDIUMTEXT NOT NULL;
ALTER TABLE audit_log MODIFY detail MEDIUMTEXT NOT NULL;
-- A league's tiers as a JSON list: 20 names of 64 characters, each of
-- which may double when escaped (`"` and `\`), is 2,621 characters.
ALTER TABLE leagues MODIFY tiers VARCHAR(4096) NOT NULL;
-- Idempotency keys of server-key posts are kept apart from the player's
-- own (`<key> server`: a player's key has no space), so a player cannot
-- claim the key a game server will use for them.
ALTER TABLE idempotency_keys MODIFY idem_key VARCHAR(96) CHARACTER SET ascii COLLATE ascii_bin NOT NULL;

-- An erasure deletes a player's rows from every table by `user_id`: an
-- index each, so that the delete locks the player's rows only, never a
-- scan's worth of other players' (posts to a league wait on those).
CREATE INDEX IF NOT EXISTS league_members_user ON league_members (user_id);
CREATE INDEX IF NOT EXISTS league_placements_user ON league_placements (user_id);
CREATE INDEX IF NOT EXISTS board_entrants_user ON board_entrants (user_id);
CREATE INDEX IF NOT EXISTS held_posts_user ON held_posts (user_id);

-- The outbox read by lane (results before `score.held`, each lane its own
-- share of the senders) and a webhook's backlog of one event counted,
-- each by an index: a flood of one kind never scans past the other.
CREATE INDEX IF NOT EXISTS webhook_deliveries_lane ON webhook_deliveries (status, event, next_attempt_at);
CREATE INDEX IF NOT EXISTS webhook_deliveries_backlog ON webhook_deliveries (webhook, event, status);

-- Migration 16: the SQLite twin of migrations/mysql/0016_room_at_the_maxima.sql
-- (comments there). SQLite's TEXT columns have no length: only the
-- indexes are new here.
CREATE INDEX IF NOT EXISTS league_members_user ON league_members (user_id);
CREATE INDEX IF NOT EXISTS league_placements_user ON league_placements (user_id);
CREATE INDEX IF NOT EXISTS board_entrants_user ON board_entrants (user_id);
CREATE INDEX IF NOT EXISTS held_posts_user ON held_posts (user_id);
CREATE INDEX IF NOT EXISTS webhook_deliveries_lane ON webhook_deliveries (status, event, next_attempt_at);
CREATE INDEX IF NOT EXISTS webhook_deliveries_backlog ON webhook_deliveries (webhook, event, status);

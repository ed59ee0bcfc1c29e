-- Migration 16: the SQLite twin of migrations/mysql/0016_room_at_the_maxima.sql
-- (comments there). SQLite's TEXT columns have no length: only the
-- indexes an erasure deletes by are new here.
CREATE INDEX IF NOT EXISTS league_members_user ON league_members (user_id);
CREATE INDEX IF NOT EXISTS league_placements_user ON league_placements (user_id);
CREATE INDEX IF NOT EXISTS board_entrants_user ON board_entrants (user_id);
CREATE INDEX IF NOT EXISTS held_posts_user ON held_posts (user_id);

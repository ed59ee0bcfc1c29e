-- Migration 4: moderation and self-service.
--
-- users.version is bumped by every change to a player's row (a post, a
-- deleted post, a ban, a rename): what orders the copies in the caches and
-- the rank engines now that play_count can go down. It starts at
-- play_count, which is what those copies were ordered by before.
ALTER TABLE users
  ADD COLUMN IF NOT EXISTS version BIGINT NOT NULL DEFAULT 0,
  -- set while the player is banned: off every board, nothing deleted
  ADD COLUMN IF NOT EXISTS banned_at BIGINT NULL,
  ADD COLUMN IF NOT EXISTS ban_reason VARCHAR(500) NULL;
UPDATE users SET version = play_count WHERE version < play_count;

-- The board indexes lead with banned_at: the boards are the players with
-- `banned_at IS NULL`, one index range, so bans cost reads nothing.
DROP INDEX IF EXISTS users_best_board ON users;
DROP INDEX IF EXISTS users_total_board ON users;
CREATE INDEX users_best_board ON users (banned_at, best_score DESC, best_at, id);
CREATE INDEX users_total_board ON users (banned_at, total_score DESC, id, best_at);

-- A banned player's entries stay, hidden (1) until the ban is lifted; the
-- order index puts the flag right after the period for the same reason.
ALTER TABLE board_entries ADD COLUMN IF NOT EXISTS hidden TINYINT NOT NULL DEFAULT 0;
DROP INDEX IF EXISTS board_entries_order ON board_entries;
CREATE INDEX board_entries_order ON board_entries (board, period, hidden, rank_score, achieved_at, user_id);

-- Every admin action, newest last. `actor` names the admin token by a
-- fingerprint (never the token); `detail` is a JSON object.
CREATE TABLE IF NOT EXISTS audit_log (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  at BIGINT NOT NULL,
  actor VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  action VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  target VARCHAR(200) NOT NULL,
  detail VARCHAR(2000) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

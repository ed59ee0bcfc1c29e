-- Migration 10: posts held for review (v3 score integrity).
--
-- A board's `hold_beyond` (a score better than this in the board's order)
-- and `hold_jump` (a score better than the player's entry by more than
-- this factor) hold a post: it is in its log with `status` 'held' and
-- counts for nothing (every recount reads the 'accepted' posts alone)
-- until a decision makes it 'accepted' (then its period's entry, or the
-- player's aggregates, are recounted as if it had been accepted when it
-- was made) or 'rejected'.
ALTER TABLE boards ADD COLUMN IF NOT EXISTS hold_beyond BIGINT NULL;
ALTER TABLE boards ADD COLUMN IF NOT EXISTS hold_jump DOUBLE NULL;
ALTER TABLE builtin_board_rules ADD COLUMN IF NOT EXISTS hold_beyond BIGINT NULL;
ALTER TABLE builtin_board_rules ADD COLUMN IF NOT EXISTS hold_jump DOUBLE NULL;
ALTER TABLE scores ADD COLUMN IF NOT EXISTS status VARCHAR(8) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'accepted';
ALTER TABLE board_scores ADD COLUMN IF NOT EXISTS status VARCHAR(8) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'accepted';

-- The review queue, oldest first: one row per held post, written with it.
-- `board` 0 is the `/api/scores` log (custom board numbers start at 1),
-- else the custom board whose log holds post `post_id`. `decided_at` is
-- set by the decision (the queue is its NULL range).
CREATE TABLE IF NOT EXISTS held_posts (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  board BIGINT NOT NULL,
  post_id BIGINT NOT NULL,
  user_id BIGINT NOT NULL,
  period BIGINT NOT NULL,
  rule VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  decided_at BIGINT NULL,
  UNIQUE KEY held_posts_post (board, post_id),
  KEY held_posts_open (decided_at, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

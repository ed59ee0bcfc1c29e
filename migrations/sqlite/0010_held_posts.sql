-- Migration 10: posts held for review (the SQLite twin of
-- migrations/mysql/0010_held_posts.sql; comments there).
ALTER TABLE boards ADD COLUMN hold_beyond INTEGER NULL;
ALTER TABLE boards ADD COLUMN hold_jump REAL NULL;
ALTER TABLE builtin_board_rules ADD COLUMN hold_beyond INTEGER NULL;
ALTER TABLE builtin_board_rules ADD COLUMN hold_jump REAL NULL;
ALTER TABLE scores ADD COLUMN status TEXT NOT NULL DEFAULT 'accepted';
ALTER TABLE board_scores ADD COLUMN status TEXT NOT NULL DEFAULT 'accepted';

CREATE TABLE IF NOT EXISTS held_posts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  board INTEGER NOT NULL,
  post_id INTEGER NOT NULL,
  user_id INTEGER NOT NULL,
  period INTEGER NOT NULL,
  rule TEXT NOT NULL,
  decided_at INTEGER NULL,
  UNIQUE (board, post_id)
);
CREATE INDEX IF NOT EXISTS held_posts_open ON held_posts (decided_at, id);

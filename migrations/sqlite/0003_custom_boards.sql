-- Migration 3: custom boards (comments in migrations/mysql/0003_custom_boards.sql).
-- AUTOINCREMENT: board numbers and post ids are never reused, even after a wipe.
CREATE TABLE IF NOT EXISTS boards (
  number INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  sort_order TEXT NOT NULL,
  operator TEXT NOT NULL,
  reset TEXT NULL,
  timezone TEXT NOT NULL,
  archive_periods INTEGER NOT NULL,
  min_score INTEGER NOT NULL,
  max_score INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS catalog_version (
  id INTEGER PRIMARY KEY,
  version INTEGER NOT NULL
);

INSERT OR IGNORE INTO catalog_version (id, version) VALUES (1, 0);

CREATE TABLE IF NOT EXISTS board_periods (
  board INTEGER NOT NULL,
  period INTEGER NOT NULL,
  starts_at INTEGER NOT NULL,
  ends_at INTEGER NULL,
  players INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (board, period)
);

CREATE TABLE IF NOT EXISTS board_entries (
  board INTEGER NOT NULL,
  period INTEGER NOT NULL,
  user_id INTEGER NOT NULL,
  score INTEGER NOT NULL,
  rank_score INTEGER NOT NULL,
  achieved_at INTEGER NOT NULL,
  post_id INTEGER NOT NULL,
  metadata TEXT NULL,
  plays INTEGER NOT NULL,
  version INTEGER NOT NULL,
  PRIMARY KEY (board, period, user_id)
);
CREATE INDEX IF NOT EXISTS board_entries_order ON board_entries (board, period, rank_score, achieved_at, user_id);
CREATE INDEX IF NOT EXISTS board_entries_user ON board_entries (user_id);

CREATE TABLE IF NOT EXISTS board_scores (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  board INTEGER NOT NULL,
  period INTEGER NOT NULL,
  user_id INTEGER NOT NULL,
  score INTEGER NOT NULL,
  metadata TEXT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS board_scores_by_user ON board_scores (user_id, board, id);
CREATE INDEX IF NOT EXISTS board_scores_by_period ON board_scores (board, period, user_id, id);

ALTER TABLE idempotency_keys ADD COLUMN fingerprint TEXT NULL;

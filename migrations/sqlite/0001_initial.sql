-- Migration 1: the schema of the first release (the SQLite twin of
-- migrations/mysql/0001_initial.sql; comments there). IF NOT EXISTS, so a
-- database that release created is adopted as it is.
CREATE TABLE IF NOT EXISTS users (
  id INTEGER PRIMARY KEY,
  login_name TEXT NOT NULL,
  login_key TEXT NOT NULL UNIQUE,
  display_name TEXT NOT NULL,
  password_hash TEXT NOT NULL,
  best_score INTEGER NOT NULL DEFAULT 0,
  best_at INTEGER NULL,
  best_score_id INTEGER NULL,
  total_score INTEGER NOT NULL DEFAULT 0,
  play_count INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS users_best_board ON users (best_score DESC, best_at, id);
-- best_at only marks players (NULL until the first score): it keeps board
-- reads that skip non-players inside the index
CREATE INDEX IF NOT EXISTS users_total_board ON users (total_score DESC, id, best_at);

CREATE TABLE IF NOT EXISTS scores (
  id INTEGER PRIMARY KEY,
  user_id INTEGER NOT NULL,
  score INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS scores_by_user ON scores (user_id, id);

CREATE TABLE IF NOT EXISTS sessions (
  token_hash TEXT NOT NULL PRIMARY KEY,
  user_id INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_expiry ON sessions (expires_at);

-- How many users are on the boards, in one row (id 1): see schema.sql.
CREATE TABLE IF NOT EXISTS board_stats (
  id INTEGER PRIMARY KEY,
  players INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS idempotency_keys (
  user_id INTEGER NOT NULL,
  idem_key TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  status INTEGER NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (user_id, idem_key)
);
CREATE INDEX IF NOT EXISTS idempotency_age ON idempotency_keys (created_at);

-- A database from before board_stats counts its players once.
INSERT OR IGNORE INTO board_stats (id, players) SELECT 1, COUNT(*) FROM users WHERE best_at IS NOT NULL;

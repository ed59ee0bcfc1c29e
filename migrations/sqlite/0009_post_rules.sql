-- Migration 9: the rules a post must pass and the server keys (the SQLite
-- twin of migrations/mysql/0009_post_rules.sql; comments there).
ALTER TABLE boards ADD COLUMN min_interval_ms INTEGER NULL;
ALTER TABLE boards ADD COLUMN writers TEXT NOT NULL DEFAULT 'players';

CREATE TABLE IF NOT EXISTS builtin_board_rules (
  board TEXT NOT NULL PRIMARY KEY,
  min_interval_ms INTEGER NULL,
  writers TEXT NOT NULL DEFAULT 'players'
);

-- AUTOINCREMENT: a revoked key's id is never given to another.
CREATE TABLE IF NOT EXISTS server_keys (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  key_hash TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL,
  revoked_at INTEGER NULL
);

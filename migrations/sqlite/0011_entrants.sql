-- Migration 11: tournaments' entrants and attempts (the SQLite twin of
-- migrations/mysql/0011_entrants.sql; comments there).
ALTER TABLE boards ADD COLUMN join_required INTEGER NOT NULL DEFAULT 0;
ALTER TABLE boards ADD COLUMN max_entrants INTEGER NULL;
ALTER TABLE boards ADD COLUMN max_attempts INTEGER NULL;

CREATE TABLE IF NOT EXISTS board_entrants (
  board INTEGER NOT NULL,
  period INTEGER NOT NULL,
  user_id INTEGER NOT NULL,
  joined_at INTEGER NOT NULL,
  PRIMARY KEY (board, period, user_id)
);

-- Migration 15: changes to a tournament's fields (the SQLite twin of
-- migrations/mysql/0015_tournament_changes.sql; comments there).
CREATE TABLE IF NOT EXISTS board_terms (
  board INTEGER NOT NULL,
  from_period INTEGER NOT NULL,
  join_required INTEGER NOT NULL,
  max_entrants INTEGER NULL,
  max_attempts INTEGER NULL,
  starts_at INTEGER NULL,
  ends_at INTEGER NULL,
  PRIMARY KEY (board, from_period)
);

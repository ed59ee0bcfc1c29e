-- Migration 4: moderation and self-service (the SQLite twin of
-- migrations/mysql/0004_moderation.sql; comments there).
--
-- The users table is rebuilt with AUTOINCREMENT: an erased player's id is
-- never handed out again (a plain INTEGER PRIMARY KEY reuses the highest
-- id once its row is gone, and every cache and rank engine knows players
-- by id).
CREATE TABLE users_v4 (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  login_name TEXT NOT NULL,
  login_key TEXT NOT NULL UNIQUE,
  display_name TEXT NOT NULL,
  password_hash TEXT NOT NULL,
  best_score INTEGER NOT NULL DEFAULT 0,
  best_at INTEGER NULL,
  best_score_id INTEGER NULL,
  total_score INTEGER NOT NULL DEFAULT 0,
  play_count INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  version INTEGER NOT NULL DEFAULT 0,
  banned_at INTEGER NULL,
  ban_reason TEXT NULL
);
INSERT INTO users_v4 (id, login_name, login_key, display_name, password_hash, best_score, best_at, best_score_id,
                      total_score, play_count, created_at, version)
  SELECT id, login_name, login_key, display_name, password_hash, best_score, best_at, best_score_id,
         total_score, play_count, created_at, play_count FROM users;
DROP TABLE users;
ALTER TABLE users_v4 RENAME TO users;
CREATE INDEX users_best_board ON users (banned_at, best_score DESC, best_at, id);
CREATE INDEX users_total_board ON users (banned_at, total_score DESC, id, best_at);

ALTER TABLE board_entries ADD COLUMN hidden INTEGER NOT NULL DEFAULT 0;
DROP INDEX board_entries_order;
CREATE INDEX board_entries_order ON board_entries (board, period, hidden, rank_score, achieved_at, user_id);

CREATE TABLE IF NOT EXISTS audit_log (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
  actor TEXT NOT NULL,
  action TEXT NOT NULL,
  target TEXT NOT NULL,
  detail TEXT NOT NULL
);

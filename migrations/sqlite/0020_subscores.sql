-- Migration 20: tie-breakers (the SQLite twin of
-- migrations/mysql/0020_subscores.sql; comments there).
ALTER TABLE boards ADD COLUMN subscores TEXT NOT NULL DEFAULT '[]';
ALTER TABLE board_entries ADD COLUMN subscore1 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE board_entries ADD COLUMN subscore2 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE board_entries ADD COLUMN rank_sub1 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE board_entries ADD COLUMN rank_sub2 INTEGER NOT NULL DEFAULT 0;
DROP INDEX board_entries_order;
CREATE INDEX board_entries_order ON board_entries (board, period, hidden, rank_score, rank_sub1, rank_sub2, achieved_at, user_id);
ALTER TABLE board_scores ADD COLUMN subscore1 INTEGER NULL;
ALTER TABLE board_scores ADD COLUMN subscore2 INTEGER NULL;

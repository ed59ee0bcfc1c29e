-- Migration 17: one post, many boards (the SQLite twin of
-- migrations/mysql/0017_feeds.sql; comments there).
ALTER TABLE boards ADD COLUMN feeds TEXT NOT NULL DEFAULT '[]';
ALTER TABLE builtin_board_rules ADD COLUMN feeds TEXT NOT NULL DEFAULT '[]';
ALTER TABLE board_scores ADD COLUMN via TEXT NULL;
ALTER TABLE board_scores ADD COLUMN via_post INTEGER NULL;
CREATE INDEX IF NOT EXISTS board_scores_via ON board_scores (via_post);

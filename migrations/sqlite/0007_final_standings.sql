-- Migration 7: the final standings of ended periods (the SQLite twin of
-- migrations/mysql/0007_final_standings.sql; comments there).
ALTER TABLE board_periods ADD COLUMN standings_changes INTEGER NULL;
ALTER TABLE board_periods ADD COLUMN standings_claimed_at INTEGER NULL;
ALTER TABLE board_entries ADD COLUMN final_position INTEGER NULL;
ALTER TABLE board_entries ADD COLUMN final_rank INTEGER NULL;
CREATE INDEX IF NOT EXISTS board_entries_final ON board_entries (board, period, final_position);

-- Migration 12: a tournament's window (the SQLite twin of
-- migrations/mysql/0012_tournament_window.sql; comments there).
ALTER TABLE boards ADD COLUMN starts_at INTEGER NULL;
ALTER TABLE boards ADD COLUMN ends_at INTEGER NULL;

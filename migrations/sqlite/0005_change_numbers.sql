-- Migration 5: each board period numbers the changes to its entries (the
-- SQLite twin of migrations/mysql/0005_change_numbers.sql; comments there).
ALTER TABLE board_periods ADD COLUMN changes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE board_entries ADD COLUMN changed INTEGER NOT NULL DEFAULT 0;

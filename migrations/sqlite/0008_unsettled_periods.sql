-- Migration 8: the ended periods without final standings, found by an
-- index (the SQLite twin of migrations/mysql/0008_unsettled_periods.sql;
-- comments there).
CREATE INDEX IF NOT EXISTS board_periods_unsettled ON board_periods (standings_changes, ends_at);

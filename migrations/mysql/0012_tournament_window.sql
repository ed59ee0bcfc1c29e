-- Migration 12: a tournament's window (v3). Posts and joins are taken in
-- [starts_at, ends_at) alone (409 `board_closed` outside); at `ends_at` the
-- period in force ends, like at a reset, and its results are final. NULL:
-- no bound on that side.
ALTER TABLE boards ADD COLUMN IF NOT EXISTS starts_at BIGINT NULL;
ALTER TABLE boards ADD COLUMN IF NOT EXISTS ends_at BIGINT NULL;

-- Migration 7: the final standings of ended periods, written once.
--
-- When a period has ended, a background job (usecases/standings.rs) writes
-- each listed entry's 0-based position and competition rank
-- (`final_position`, `final_rank`), a chunk at a time, then records the
-- period's change count they were written at (`standings_changes`). Reads of
-- an ended period are then seeks on `board_entries_final` by position, and
-- a player's rank is read off their row, where without them a deep page or a
-- bottom player's rank is a count over the period's index.
--
-- They hold while `standings_changes = changes`: every change to the
-- period's entries clears `standings_changes` in its own transaction (the
-- score writer when it numbers changes, so a post committed after the end
-- does; moderation that hides, shows or deletes an entry, with any claim).
-- The job then writes them again. `standings_claimed_at` is when an
-- instance began writing them: others leave the period alone while the
-- claim is fresh. `board_periods_unsettled` finds the ended periods
-- without standings (NULL first) without reading every kept period.
ALTER TABLE board_periods ADD COLUMN IF NOT EXISTS standings_changes BIGINT NULL;
ALTER TABLE board_periods ADD COLUMN IF NOT EXISTS standings_claimed_at BIGINT NULL;
ALTER TABLE board_entries ADD COLUMN IF NOT EXISTS final_position BIGINT NULL;
ALTER TABLE board_entries ADD COLUMN IF NOT EXISTS final_rank BIGINT NULL;
CREATE INDEX IF NOT EXISTS board_entries_final ON board_entries (board, period, final_position);
CREATE INDEX IF NOT EXISTS board_periods_unsettled ON board_periods (standings_changes, ends_at);

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
-- They hold while `standings_changes = changes`: a post committed after the
-- job read the count moves `changes`; moderation that hides, shows or
-- deletes an entry of the period clears `standings_changes` (and any claim)
-- in the statement that moves the period's player count. The job then
-- writes them again. `standings_claimed_at` is when an instance began
-- writing them: others leave the period alone while the claim is fresh.
ALTER TABLE board_periods ADD COLUMN IF NOT EXISTS standings_changes BIGINT NULL;
ALTER TABLE board_periods ADD COLUMN IF NOT EXISTS standings_claimed_at BIGINT NULL;
ALTER TABLE board_entries ADD COLUMN IF NOT EXISTS final_position BIGINT NULL;
ALTER TABLE board_entries ADD COLUMN IF NOT EXISTS final_rank BIGINT NULL;
CREATE INDEX IF NOT EXISTS board_entries_final ON board_entries (board, period, final_position);

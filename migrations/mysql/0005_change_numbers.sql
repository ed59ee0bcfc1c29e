-- Migration 5: each board period numbers the changes to its entries.
--
-- `board_periods.changes` counts them; `board_entries.changed` is the
-- number of the change that last wrote the entry. Both move in the
-- transaction that changes the entry (the period's row is locked first by
-- every writer), so the numbers follow commit order. A cursor walk carries
-- the count it began at and leaves out entries changed since, on every
-- source alike: the database, Redis and the in-process index all keep
-- these numbers.
ALTER TABLE board_periods ADD COLUMN IF NOT EXISTS changes BIGINT NOT NULL DEFAULT 0;
ALTER TABLE board_entries ADD COLUMN IF NOT EXISTS changed BIGINT NOT NULL DEFAULT 0;

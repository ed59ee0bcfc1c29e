-- Migration 20: tie-breakers (v4 `subscores`).
--
-- `subscores` on a board: its up to two subscores' names and orders, as a
-- JSON list (`[{"name": "time", "order": "asc"}]`), set at creation only.
ALTER TABLE boards ADD COLUMN IF NOT EXISTS subscores VARCHAR(256) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '[]';
-- An entry's subscores as posted (`subscore1`, `subscore2`), and as the
-- order index holds them (`rank_sub1`, `rank_sub2`: ascending is better,
-- as `rank_score` holds the score); 0 on boards without them, where they
-- order nothing. Board order is (rank_score, rank_sub1, rank_sub2,
-- achieved_at, user_id); a rank is taken over the first three.
ALTER TABLE board_entries ADD COLUMN IF NOT EXISTS subscore1 BIGINT NOT NULL DEFAULT 0;
ALTER TABLE board_entries ADD COLUMN IF NOT EXISTS subscore2 BIGINT NOT NULL DEFAULT 0;
ALTER TABLE board_entries ADD COLUMN IF NOT EXISTS rank_sub1 BIGINT NOT NULL DEFAULT 0;
ALTER TABLE board_entries ADD COLUMN IF NOT EXISTS rank_sub2 BIGINT NOT NULL DEFAULT 0;
DROP INDEX IF EXISTS board_entries_order ON board_entries;
CREATE INDEX board_entries_order ON board_entries (board, period, hidden, rank_score, rank_sub1, rank_sub2, achieved_at, user_id);
-- A post's subscores (NULL beyond its board's).
ALTER TABLE board_scores ADD COLUMN IF NOT EXISTS subscore1 BIGINT NULL;
ALTER TABLE board_scores ADD COLUMN IF NOT EXISTS subscore2 BIGINT NULL;

-- Migration 11: tournaments' entrants and attempts (v3).
--
-- `join_required` (0 or 1): only a period's entrants may post to the
-- board; `max_entrants`: how many may join a period (NULL: no limit);
-- `max_attempts`: posts per player per period, held ones included (NULL:
-- no limit; counted from `board_scores`, whose `board_scores_by_period`
-- index finds a player's posts in a period).
ALTER TABLE boards ADD COLUMN IF NOT EXISTS join_required BIGINT NOT NULL DEFAULT 0;
ALTER TABLE boards ADD COLUMN IF NOT EXISTS max_entrants BIGINT NULL;
ALTER TABLE boards ADD COLUMN IF NOT EXISTS max_attempts BIGINT NULL;

-- Who joined which period of a board. A join locks the period's row
-- (`board_periods`, as the score writer does), so a full period stays full
-- whatever number of instances take joins at once.
CREATE TABLE IF NOT EXISTS board_entrants (
  board BIGINT NOT NULL,
  period BIGINT NOT NULL,
  user_id BIGINT NOT NULL,
  joined_at BIGINT NOT NULL,
  PRIMARY KEY (board, period, user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

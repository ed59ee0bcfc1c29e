-- Migration 19: rewards at the close of a period (v4).
--
-- A board's (or league's own board's) reward bands, in the order they are
-- tried: ranks `rank_from..=rank_to`, or a `top_percent` in hundredths;
-- the reward is a JSON object of at most 1 KiB that hiscore never reads.
CREATE TABLE IF NOT EXISTS board_rewards (
  board BIGINT NOT NULL,
  band BIGINT NOT NULL,
  rank_from BIGINT NULL,
  rank_to BIGINT NULL,
  top_percent BIGINT NULL,
  reward VARCHAR(1024) NOT NULL,
  PRIMARY KEY (board, band)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The bands a close granted, as they were then (a later PATCH or a
-- deleted board leaves a grant as it was): written once per band in the
-- closing transaction, with the board's id and the period's bounds for
-- the players' lists.
CREATE TABLE IF NOT EXISTS granted_bands (
  board BIGINT NOT NULL,
  period BIGINT NOT NULL,
  band BIGINT NOT NULL,
  board_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  -- 1: a league's own board (the grant names the league)
  league BIGINT NOT NULL,
  starts_at BIGINT NOT NULL,
  ends_at BIGINT NOT NULL,
  reward VARCHAR(1024) NOT NULL,
  PRIMARY KEY (board, period, band)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One reward granted to one player at a close: their final rank (in the
-- cohort, for a league, with its tier and cohort) and the band it matched.
-- Unclaimed grants wait for their player; claimed ones go 90 days after
-- the claim; all of a player's go with their erasure.
CREATE TABLE IF NOT EXISTS reward_grants (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  user_id BIGINT NOT NULL,
  board BIGINT NOT NULL,
  period BIGINT NOT NULL,
  band BIGINT NOT NULL,
  final_rank BIGINT NOT NULL,
  tier BIGINT NULL,
  cohort BIGINT NULL,
  granted_at BIGINT NOT NULL,
  claimed_at BIGINT NULL,
  KEY reward_grants_player (user_id, id),
  KEY reward_grants_period (board, period, id),
  KEY reward_grants_claimed (claimed_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

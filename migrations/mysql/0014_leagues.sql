-- Migration 14: leagues (v3).
--
-- A league plays on a board of its own (`boards.league` = 1: its period
-- clock, its posts and its entries are the board's; the board is not
-- listed or served as a board). `leagues` holds the ladder; the other
-- tables name the league by its board's number (`board`), so a deleted
-- league's rows and an expired period's go with the board's purges.
ALTER TABLE boards ADD COLUMN IF NOT EXISTS league BIGINT NOT NULL DEFAULT 0;

CREATE TABLE IF NOT EXISTS leagues (
  board BIGINT NOT NULL PRIMARY KEY,
  -- the tiers' names, lowest first, a JSON list
  tiers VARCHAR(2048) NOT NULL,
  cohort_size BIGINT NOT NULL,
  promote BIGINT NOT NULL,
  demote BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Each player's tier for their next placement: written when they are
-- first placed (tier 0), then by the moves when a period closes.
CREATE TABLE IF NOT EXISTS league_members (
  board BIGINT NOT NULL,
  user_id BIGINT NOT NULL,
  tier BIGINT NOT NULL,
  PRIMARY KEY (board, user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The cohorts of a period, per tier, numbered from 1 in the order they
-- were opened; `members` counts who was placed in each.
CREATE TABLE IF NOT EXISTS league_cohorts (
  board BIGINT NOT NULL,
  period BIGINT NOT NULL,
  tier BIGINT NOT NULL,
  seq BIGINT NOT NULL,
  members BIGINT NOT NULL,
  PRIMARY KEY (board, period, tier, seq)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Who was placed where in a period (never changed during it), and, once
-- the period closed, their final rank in the cohort and their move (NULL
-- for a player without a shown entry: banned, or their post deleted).
CREATE TABLE IF NOT EXISTS league_placements (
  board BIGINT NOT NULL,
  period BIGINT NOT NULL,
  user_id BIGINT NOT NULL,
  tier BIGINT NOT NULL,
  cohort BIGINT NOT NULL,
  placed_at BIGINT NOT NULL,
  final_rank BIGINT NULL,
  movement VARCHAR(8) CHARACTER SET ascii COLLATE ascii_bin NULL,
  PRIMARY KEY (board, period, user_id),
  KEY league_placements_cohort (board, period, tier, cohort),
  KEY league_placements_member (board, user_id, period)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Migration 14: leagues (the SQLite twin of migrations/mysql/0014_leagues.sql;
-- comments there).
ALTER TABLE boards ADD COLUMN league INTEGER NOT NULL DEFAULT 0;

CREATE TABLE IF NOT EXISTS leagues (
  board INTEGER NOT NULL PRIMARY KEY,
  tiers TEXT NOT NULL,
  cohort_size INTEGER NOT NULL,
  promote INTEGER NOT NULL,
  demote INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS league_members (
  board INTEGER NOT NULL,
  user_id INTEGER NOT NULL,
  tier INTEGER NOT NULL,
  PRIMARY KEY (board, user_id)
);

CREATE TABLE IF NOT EXISTS league_cohorts (
  board INTEGER NOT NULL,
  period INTEGER NOT NULL,
  tier INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  members INTEGER NOT NULL,
  PRIMARY KEY (board, period, tier, seq)
);

CREATE TABLE IF NOT EXISTS league_placements (
  board INTEGER NOT NULL,
  period INTEGER NOT NULL,
  user_id INTEGER NOT NULL,
  tier INTEGER NOT NULL,
  cohort INTEGER NOT NULL,
  placed_at INTEGER NOT NULL,
  final_rank INTEGER NULL,
  movement TEXT NULL,
  PRIMARY KEY (board, period, user_id)
);
CREATE INDEX IF NOT EXISTS league_placements_cohort ON league_placements (board, period, tier, cohort);
CREATE INDEX IF NOT EXISTS league_placements_member ON league_placements (board, user_id, period);

-- Migration 19: rewards at the close of a period (the SQLite twin of
-- migrations/mysql/0019_rewards.sql; comments there).
CREATE TABLE IF NOT EXISTS board_rewards (
  board INTEGER NOT NULL,
  band INTEGER NOT NULL,
  rank_from INTEGER NULL,
  rank_to INTEGER NULL,
  top_percent INTEGER NULL,
  reward TEXT NOT NULL,
  PRIMARY KEY (board, band)
);

CREATE TABLE IF NOT EXISTS granted_bands (
  board INTEGER NOT NULL,
  period INTEGER NOT NULL,
  band INTEGER NOT NULL,
  board_id TEXT NOT NULL,
  league INTEGER NOT NULL,
  starts_at INTEGER NOT NULL,
  ends_at INTEGER NOT NULL,
  reward TEXT NOT NULL,
  PRIMARY KEY (board, period, band)
);

CREATE TABLE IF NOT EXISTS reward_grants (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id INTEGER NOT NULL,
  board INTEGER NOT NULL,
  period INTEGER NOT NULL,
  band INTEGER NOT NULL,
  final_rank INTEGER NOT NULL,
  tier INTEGER NULL,
  cohort INTEGER NULL,
  granted_at INTEGER NOT NULL,
  claimed_at INTEGER NULL
);
CREATE INDEX IF NOT EXISTS reward_grants_player ON reward_grants (user_id, id);
CREATE INDEX IF NOT EXISTS reward_grants_period ON reward_grants (board, period, id);
CREATE INDEX IF NOT EXISTS reward_grants_claimed ON reward_grants (claimed_at);

-- Migration 3: custom boards. A board's number is its key everywhere
-- (never reused, so a board deleted and created again under the same id
-- shares nothing with the old one); `id` is what clients use.
CREATE TABLE IF NOT EXISTS boards (
  number BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  name VARCHAR(128) NOT NULL,
  -- 'desc' or 'asc'; 'best', 'latest' or 'total'
  sort_order VARCHAR(4) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  operator VARCHAR(8) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  -- a cron pattern (5 fields, or 6 with seconds first), NULL: never resets
  reset VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NULL,
  timezone VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  archive_periods INT NOT NULL,
  min_score BIGINT NOT NULL,
  max_score BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  UNIQUE KEY boards_id (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Bumped by every change to the catalog, in the same transaction: the
-- instances watch it to reload their copy of the catalog.
CREATE TABLE IF NOT EXISTS catalog_version (
  id INT NOT NULL PRIMARY KEY,
  version BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

INSERT IGNORE INTO catalog_version (id, version) VALUES (1, 0);

-- The periods of a board that began, with their bounds (computed forward
-- from the board's creation, so every instance writes the same values) and
-- how many players have an entry in them.
CREATE TABLE IF NOT EXISTS board_periods (
  board BIGINT NOT NULL,
  period BIGINT NOT NULL,
  starts_at BIGINT NOT NULL,
  ends_at BIGINT NULL,
  players BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (board, period)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- A player's entry on a board in one period: the denormalised aggregate
-- (like best_score on the user row), written in the same transaction as
-- the post. `rank_score` is the score in the board's direction (-score on
-- 'desc' boards, score on 'asc' ones), so that one ascending index serves
-- both: ranking never aggregates the posts.
CREATE TABLE IF NOT EXISTS board_entries (
  board BIGINT NOT NULL,
  period BIGINT NOT NULL,
  user_id BIGINT NOT NULL,
  score BIGINT NOT NULL,
  rank_score BIGINT NOT NULL,
  -- when the entry's current score was reached
  achieved_at BIGINT NOT NULL,
  -- the post that set the score, and its metadata
  post_id BIGINT NOT NULL,
  metadata VARCHAR(1024) NULL,
  plays BIGINT NOT NULL,
  -- bumped by every change: orders updates in the caches
  version BIGINT NOT NULL,
  PRIMARY KEY (board, period, user_id),
  KEY board_entries_order (board, period, rank_score, achieved_at, user_id),
  KEY board_entries_user (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Every post to a custom board, with the period it was counted in.
CREATE TABLE IF NOT EXISTS board_scores (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  board BIGINT NOT NULL,
  period BIGINT NOT NULL,
  user_id BIGINT NOT NULL,
  score BIGINT NOT NULL,
  metadata VARCHAR(1024) NULL,
  created_at BIGINT NOT NULL,
  KEY board_scores_by_user (user_id, board, id),
  KEY board_scores_by_period (board, period, user_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- An Idempotency-Key remembers what it was used for (a fingerprint of the
-- board and body): a repeat with another body is refused, not replayed.
ALTER TABLE idempotency_keys ADD COLUMN IF NOT EXISTS fingerprint CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL;

-- hiscore schema for MariaDB 10.6+ (the production backend): the tables
-- the migrations in migrations/mysql/ build, in one file for loading by hand.
-- docker-compose loads it into a fresh database; the service then records
-- the migrations as applied (they are all IF NOT EXISTS). A test checks that
-- this file and the migrations describe the same columns and indexes: when
-- a migration changes the schema, change this file with it.
-- Times are milliseconds since the Unix epoch (BIGINT), so they sort and
-- compare identically on both backends.

-- Players, with their aggregates denormalised onto the row so that ranking
-- never aggregates over the score log.
CREATE TABLE IF NOT EXISTS users (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  login_name VARCHAR(32) NOT NULL,
  -- lower-cased login_name: case-insensitive uniqueness on every backend
  login_key VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  display_name VARCHAR(32) NOT NULL,
  password_hash VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  best_score BIGINT NOT NULL DEFAULT 0,
  best_at BIGINT NULL,
  -- the score (log id) that set best_score: tells a post whether it was a new best
  best_score_id BIGINT NULL,
  total_score BIGINT NOT NULL DEFAULT 0,
  play_count BIGINT NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL,
  -- bumped by every change to the row (a post, a deleted post, a ban, a
  -- rename): orders the copies in the caches and the rank engines
  version BIGINT NOT NULL DEFAULT 0,
  -- set while the player is banned: off every board, nothing deleted
  banned_at BIGINT NULL,
  ban_reason VARCHAR(500) NULL,
  UNIQUE KEY users_login_key (login_key),
  -- The boards are the players with `banned_at IS NULL` and a `best_at`
  -- (NULL until the first score): both tests stay inside these indexes.
  KEY users_best_board (banned_at, best_score DESC, best_at, id),
  KEY users_total_board (banned_at, total_score DESC, id, best_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The score log (a post leaves it only by moderation or the player's
-- erasure). No foreign key: bulk loads and wipes stay simple and fast.
CREATE TABLE IF NOT EXISTS scores (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  user_id BIGINT NOT NULL,
  score BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  -- 'accepted', or 'held' for review, or 'rejected' (see held_posts)
  status VARCHAR(8) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'accepted',
  KEY scores_by_user (user_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Sessions by SHA-256 of the token; the token itself is never stored.
CREATE TABLE IF NOT EXISTS sessions (
  token_hash CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
  user_id BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  KEY sessions_expiry (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- How many users are on the boards (have at least one score), in one row
-- (id 1): kept by the score writer and initialize in the transactions that
-- change it, so the player count is one row read even when the boards are
-- read from the database (Redis down) instead of a count over every user.
CREATE TABLE IF NOT EXISTS board_stats (
  id INT NOT NULL PRIMARY KEY,
  players BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The first response to each (user, Idempotency-Key), replayed on repeats.
CREATE TABLE IF NOT EXISTS idempotency_keys (
  user_id BIGINT NOT NULL,
  -- the key as sent; a server key's post for the player: `<key> server`
  idem_key VARCHAR(96) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  created_at BIGINT NOT NULL,
  status INT NOT NULL,
  -- (MEDIUMTEXT: a post's answer carries its metadata, and in v4 its fed
  -- boards' entries; `store::LongText` reads it)
  body MEDIUMTEXT NOT NULL,
  -- what the key was used for (board and body): another body is refused
  fingerprint CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL,
  PRIMARY KEY (user_id, idem_key),
  KEY idempotency_age (created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The data generation (one row, id 1), bumped by every initialize in the
-- same transaction as the new data; cached copies carry the generation of
-- the snapshot they were read from.
CREATE TABLE IF NOT EXISTS data_generation (
  id INT NOT NULL PRIMARY KEY,
  generation BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

INSERT IGNORE INTO data_generation (id, generation) VALUES (1, 0);

-- Custom boards (comments in migrations/mysql/0003_custom_boards.sql).
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
  -- the least time between two posts of one player (NULL: none), and who
  -- posts: 'players' (sessions) or 'server' (server keys only)
  min_interval_ms BIGINT NULL,
  writers VARCHAR(8) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'players',
  -- posts held for review: better than hold_beyond, or better than the
  -- player's entry by more than hold_jump times (NULL: no such rule)
  hold_beyond BIGINT NULL,
  hold_jump DOUBLE NULL,
  -- tournaments: only entrants post (0 or 1), entrants and posts per
  -- player per period at most (NULL: no limit)
  join_required BIGINT NOT NULL DEFAULT 0,
  max_entrants BIGINT NULL,
  max_attempts BIGINT NULL,
  -- posts and joins only in [starts_at, ends_at); the period in force
  -- ends at ends_at (NULL: no bound)
  starts_at BIGINT NULL,
  ends_at BIGINT NULL,
  -- 1: a league's own board, not listed or served as a board (migration 14)
  league BIGINT NOT NULL DEFAULT 0,
  -- the boards posts are also posted to (v4): a JSON list of board numbers
  feeds VARCHAR(256) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '[]',
  -- the subscores entries are ranked by after the score (v4): a JSON list
  -- of {"name", "order"}
  subscores VARCHAR(256) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '[]',
  -- partitions (v4): the metadata field posts are partitioned by, the
  -- partitions one period opens at most, the only values taken (a JSON
  -- list; NULL: any)
  partition_by VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
  max_partitions BIGINT NOT NULL DEFAULT 1000,
  partition_values MEDIUMTEXT CHARACTER SET ascii COLLATE ascii_bin NULL,
  -- a partition's own row (id `<board number>:<value>`): its board and value
  partition_of BIGINT NULL,
  partition_value VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL,
  UNIQUE KEY boards_id (id),
  KEY boards_partitions (partition_of, partition_value)
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
  -- how many changes its entries have had: numbers them in commit order
  -- (cursor walks leave out entries changed after the count they began at)
  changes BIGINT NOT NULL DEFAULT 0,
  -- once the period has ended: the change count its entries' final
  -- standings were written at (they hold while it equals `changes`), and
  -- when an instance began writing them (migrations 7 and 8)
  standings_changes BIGINT NULL,
  standings_claimed_at BIGINT NULL,
  -- when its `period.closed` event was emitted (migration 13)
  closed_at BIGINT NULL,
  PRIMARY KEY (board, period),
  KEY board_periods_unsettled (standings_changes, ends_at),
  KEY board_periods_unclosed (closed_at, ends_at)
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
  -- the subscores as posted, and as the order index holds them (ascending
  -- is better, as rank_score); 0 on boards without them
  subscore1 BIGINT NOT NULL DEFAULT 0,
  subscore2 BIGINT NOT NULL DEFAULT 0,
  rank_sub1 BIGINT NOT NULL DEFAULT 0,
  rank_sub2 BIGINT NOT NULL DEFAULT 0,
  -- when the entry's current score was reached
  achieved_at BIGINT NOT NULL,
  -- the post that set the score, and its metadata
  post_id BIGINT NOT NULL,
  metadata VARCHAR(1024) NULL,
  plays BIGINT NOT NULL,
  -- bumped by every change: orders updates in the caches
  version BIGINT NOT NULL,
  -- 1 while the player is banned
  hidden TINYINT NOT NULL DEFAULT 0,
  -- the number of the period's change that last wrote the entry
  changed BIGINT NOT NULL DEFAULT 0,
  -- in an ended period, the entry's final 0-based position and rank
  final_position BIGINT NULL,
  final_rank BIGINT NULL,
  PRIMARY KEY (board, period, user_id),
  KEY board_entries_order (board, period, hidden, rank_score, rank_sub1, rank_sub2, achieved_at, user_id),
  KEY board_entries_user (user_id),
  KEY board_entries_final (board, period, final_position)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Every post to a custom board, with the period it was counted in.
CREATE TABLE IF NOT EXISTS board_scores (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  board BIGINT NOT NULL,
  period BIGINT NOT NULL,
  user_id BIGINT NOT NULL,
  score BIGINT NOT NULL,
  -- the post's subscores (NULL beyond its board's)
  subscore1 BIGINT NULL,
  subscore2 BIGINT NULL,
  metadata VARCHAR(1024) NULL,
  created_at BIGINT NOT NULL,
  status VARCHAR(8) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'accepted',
  -- a fed post's original: its board (`best` for /api/scores) and post id
  via VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
  via_post BIGINT NULL,
  KEY board_scores_by_user (user_id, board, id),
  KEY board_scores_by_period (board, period, user_id, id),
  KEY board_scores_via (via_post)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Every admin action. `actor` names the admin token by a fingerprint
-- (never the token); `detail` is a JSON object.
CREATE TABLE IF NOT EXISTS audit_log (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  at BIGINT NOT NULL,
  actor VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  action VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  target VARCHAR(200) NOT NULL,
  detail MEDIUMTEXT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Secrets of the deployment (the ranking cursors' signing secret), made at
-- the first start that needs one and shared by every instance on this
-- database. Initialize keeps them.
CREATE TABLE IF NOT EXISTS secrets (
  name VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
  value VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The rules of the built-in boards (no catalog row), present once set.
CREATE TABLE IF NOT EXISTS builtin_board_rules (
  board VARCHAR(8) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
  min_interval_ms BIGINT NULL,
  writers VARCHAR(8) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'players',
  hold_beyond BIGINT NULL,
  hold_jump DOUBLE NULL,
  -- the boards posts are also posted to (v4): a JSON list of board numbers
  feeds VARCHAR(256) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '[]'
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Server keys, stored as the SHA-256 of the key (shown once, at creation);
-- a revoked key keeps its row with `revoked_at` set.
CREATE TABLE IF NOT EXISTS server_keys (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(128) NOT NULL,
  key_hash CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  created_at BIGINT NOT NULL,
  revoked_at BIGINT NULL,
  -- 'server' (posts scores for players), 'moderator' or 'viewer' (v4)
  role VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'server',
  UNIQUE KEY server_keys_hash (key_hash)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The review queue: one row per held post (`board` 0: the /api/scores
-- log, else a custom board's number), oldest first; decided ones keep
-- their row with `decided_at` set.
CREATE TABLE IF NOT EXISTS held_posts (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  board BIGINT NOT NULL,
  post_id BIGINT NOT NULL,
  user_id BIGINT NOT NULL,
  period BIGINT NOT NULL,
  rule VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  decided_at BIGINT NULL,
  UNIQUE KEY held_posts_post (board, post_id),
  KEY held_posts_open (decided_at, id),
  -- an erasure deletes by player (migration 16)
  KEY held_posts_user (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Who joined which period of a tournament board.
CREATE TABLE IF NOT EXISTS board_entrants (
  board BIGINT NOT NULL,
  period BIGINT NOT NULL,
  user_id BIGINT NOT NULL,
  joined_at BIGINT NOT NULL,
  PRIMARY KEY (board, period, user_id),
  KEY board_entrants_user (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Changes to a tournament's fields by PATCH (migration 15): from
-- `from_period` on, the fields are this row's (the latest row whose
-- `from_period` is at most the period's index; before the first, the
-- `boards` row's).
CREATE TABLE IF NOT EXISTS board_terms (
  board BIGINT NOT NULL,
  from_period BIGINT NOT NULL,
  join_required BIGINT NOT NULL,
  max_entrants BIGINT NULL,
  max_attempts BIGINT NULL,
  starts_at BIGINT NULL,
  ends_at BIGINT NULL,
  PRIMARY KEY (board, from_period)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Webhooks: where events are sent, which ones, and the signing secret.
CREATE TABLE IF NOT EXISTS webhooks (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  url VARCHAR(2048) NOT NULL,
  events VARCHAR(512) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  secret VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  created_at BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The outbox: one row per event per subscribed webhook, written in the
-- transaction of the change it reports (migration 13 says how it is sent).
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  webhook BIGINT NOT NULL,
  event VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  created_at BIGINT NOT NULL,
  -- ten entries with 1 KiB of metadata each is about 12 KB (migration 16)
  data MEDIUMTEXT NOT NULL,
  status VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'pending',
  attempts BIGINT NOT NULL DEFAULT 0,
  last_status BIGINT NULL,
  next_attempt_at BIGINT NULL,
  KEY webhook_deliveries_due (status, next_attempt_at),
  KEY webhook_deliveries_log (webhook, id),
  -- by lane, and a webhook's backlog of one event (migration 16)
  KEY webhook_deliveries_lane (status, event, next_attempt_at),
  KEY webhook_deliveries_backlog (webhook, event, status)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Leagues (migration 14): a league plays on a board of its own
-- (`boards.league` = 1); the ladder, each player's tier, the cohorts of
-- each period and who was placed where, with the final rank and move.
CREATE TABLE IF NOT EXISTS leagues (
  board BIGINT NOT NULL PRIMARY KEY,
  tiers VARCHAR(4096) NOT NULL,
  cohort_size BIGINT NOT NULL,
  promote BIGINT NOT NULL,
  demote BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS league_members (
  board BIGINT NOT NULL,
  user_id BIGINT NOT NULL,
  tier BIGINT NOT NULL,
  PRIMARY KEY (board, user_id),
  KEY league_members_user (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS league_cohorts (
  board BIGINT NOT NULL,
  period BIGINT NOT NULL,
  tier BIGINT NOT NULL,
  seq BIGINT NOT NULL,
  members BIGINT NOT NULL,
  PRIMARY KEY (board, period, tier, seq)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- A closed period's `movement` is written for those who moved (`up`,
-- `down`); NULL: stayed. `final_rank` is not written (ranks are read from
-- the entries as they stand).
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
  KEY league_placements_member (board, user_id, period),
  KEY league_placements_user (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Reward bands of boards, the bands each close granted, and the grants
-- (v4; comments in migrations/mysql/0019_rewards.sql).
CREATE TABLE IF NOT EXISTS board_rewards (
  board BIGINT NOT NULL,
  band BIGINT NOT NULL,
  rank_from BIGINT NULL,
  rank_to BIGINT NULL,
  top_percent BIGINT NULL,
  reward VARCHAR(1024) NOT NULL,
  PRIMARY KEY (board, band)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS granted_bands (
  board BIGINT NOT NULL,
  period BIGINT NOT NULL,
  band BIGINT NOT NULL,
  board_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  league BIGINT NOT NULL,
  starts_at BIGINT NOT NULL,
  ends_at BIGINT NOT NULL,
  reward VARCHAR(1024) NOT NULL,
  PRIMARY KEY (board, period, band)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

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

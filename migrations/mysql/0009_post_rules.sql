-- Migration 9: the rules a post must pass beside its score range (v3
-- score integrity), and the keys game servers post with.
--
-- `min_interval_ms`: the least time between two posts of one player to the
-- board (NULL: none). `writers`: 'players' (sessions post) or 'server'
-- (only server keys post). The built-in boards have no catalog row: their
-- rules are rows of `builtin_board_rules`, present only once set.
ALTER TABLE boards ADD COLUMN IF NOT EXISTS min_interval_ms BIGINT NULL;
ALTER TABLE boards ADD COLUMN IF NOT EXISTS writers VARCHAR(8) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'players';

CREATE TABLE IF NOT EXISTS builtin_board_rules (
  board VARCHAR(8) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
  min_interval_ms BIGINT NULL,
  writers VARCHAR(8) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'players'
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Server keys: only the SHA-256 of a key is stored (the key is shown once,
-- at creation). A revoked key keeps its row (the audit names it) with
-- `revoked_at` set; every post looks its key up here, so a revocation
-- holds on every instance at once.
CREATE TABLE IF NOT EXISTS server_keys (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(128) NOT NULL,
  key_hash CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  created_at BIGINT NOT NULL,
  revoked_at BIGINT NULL,
  UNIQUE KEY server_keys_hash (key_hash)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

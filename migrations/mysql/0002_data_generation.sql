-- Migration 2: the data generation, bumped by every initialize in the same
-- transaction as the new data. Cached copies (user rows in Redis) carry the
-- generation of the snapshot they were read from, so a copy of replaced
-- data is never served as current.
CREATE TABLE IF NOT EXISTS data_generation (
  id INT NOT NULL PRIMARY KEY,
  generation BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

INSERT IGNORE INTO data_generation (id, generation) VALUES (1, 0);

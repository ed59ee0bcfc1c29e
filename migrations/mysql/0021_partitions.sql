-- Migration 21: partitions (v4 `partition_by`).
--
-- A partitioned board names the metadata field its posts are partitioned
-- by, how many partitions one period opens at most, and (optionally) the
-- only values taken, as a JSON list.
ALTER TABLE boards ADD COLUMN IF NOT EXISTS partition_by VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL;
ALTER TABLE boards ADD COLUMN IF NOT EXISTS max_partitions BIGINT NOT NULL DEFAULT 1000;
ALTER TABLE boards ADD COLUMN IF NOT EXISTS partition_values MEDIUMTEXT CHARACTER SET ascii COLLATE ascii_bin NULL;
-- A partition is a row of its own, opened by the first post to it: its
-- board's number and its value (its id is `<board number>:<value>`, which
-- no client id can be). Its entries, periods and posts are stored under
-- its own number, so every rank source serves it as it serves a board.
ALTER TABLE boards ADD COLUMN IF NOT EXISTS partition_of BIGINT NULL;
ALTER TABLE boards ADD COLUMN IF NOT EXISTS partition_value VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL;
CREATE INDEX IF NOT EXISTS boards_partitions ON boards (partition_of, partition_value);

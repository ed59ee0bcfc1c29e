-- Migration 21: partitions (the SQLite twin of
-- migrations/mysql/0021_partitions.sql; comments there).
ALTER TABLE boards ADD COLUMN partition_by TEXT NULL;
ALTER TABLE boards ADD COLUMN max_partitions INTEGER NOT NULL DEFAULT 1000;
ALTER TABLE boards ADD COLUMN partition_values TEXT NULL;
ALTER TABLE boards ADD COLUMN partition_of INTEGER NULL;
ALTER TABLE boards ADD COLUMN partition_value TEXT NULL;
CREATE INDEX boards_partitions ON boards (partition_of, partition_value);

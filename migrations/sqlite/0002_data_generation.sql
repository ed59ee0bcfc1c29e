-- Migration 2: the data generation (see migrations/mysql/0002_data_generation.sql).
CREATE TABLE IF NOT EXISTS data_generation (
  id INTEGER PRIMARY KEY,
  generation INTEGER NOT NULL
);

INSERT OR IGNORE INTO data_generation (id, generation) VALUES (1, 0);

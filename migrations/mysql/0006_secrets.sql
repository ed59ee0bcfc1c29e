-- Migration 6: secrets of the deployment (the ranking cursors' signing
-- secret), made at the first start that needs one and shared by every
-- instance on this database. Initialize keeps them.
CREATE TABLE IF NOT EXISTS secrets (
  name VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
  value VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

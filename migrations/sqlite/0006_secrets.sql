-- Migration 6: secrets of the deployment (the SQLite twin of
-- migrations/mysql/0006_secrets.sql; comments there).
CREATE TABLE IF NOT EXISTS secrets (
  name TEXT NOT NULL PRIMARY KEY,
  value TEXT NOT NULL
);

-- Migration 18: scoped admin keys (the SQLite twin of
-- migrations/mysql/0018_key_roles.sql; comments there).
ALTER TABLE server_keys ADD COLUMN role TEXT NOT NULL DEFAULT 'server';

-- Migration 18: scoped admin keys (v4). A key's role: 'server' (the v3
-- server key: posts scores for players), 'moderator' or 'viewer' (admin
-- routes within the role; see `routes::access`).
ALTER TABLE server_keys ADD COLUMN IF NOT EXISTS role VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'server';

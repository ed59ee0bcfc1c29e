-- Migration 13: webhooks and their outbox (the SQLite twin of
-- migrations/mysql/0013_webhooks.sql; comments there).
CREATE TABLE IF NOT EXISTS webhooks (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  url TEXT NOT NULL,
  events TEXT NOT NULL,
  secret TEXT NOT NULL,
  created_at INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS webhook_deliveries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  webhook INTEGER NOT NULL,
  event TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  data TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'pending',
  attempts INTEGER NOT NULL DEFAULT 0,
  last_status INTEGER NULL,
  next_attempt_at INTEGER NULL
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
CREATE INDEX IF NOT EXISTS webhook_deliveries_log ON webhook_deliveries (webhook, id);

ALTER TABLE board_periods ADD COLUMN closed_at INTEGER NULL;
UPDATE board_periods SET closed_at = ends_at WHERE ends_at <= CAST(strftime('%s', 'now') AS INTEGER) * 1000;
CREATE INDEX IF NOT EXISTS board_periods_unclosed ON board_periods (closed_at, ends_at);

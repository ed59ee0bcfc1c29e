-- Migration 13: webhooks and their outbox (v3).
--
-- `webhooks`: where a studio wants events sent, which events (a JSON list
-- of names) and the secret deliveries are signed with (HMAC needs it in
-- clear; it is shown once, at creation, and never read back by the API).
CREATE TABLE IF NOT EXISTS webhooks (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  url VARCHAR(2048) NOT NULL,
  events VARCHAR(512) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  secret VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  created_at BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The outbox: one row per event per subscribed webhook, inserted in the
-- transaction of the change it reports, so no crash loses one. `data` is
-- the event's JSON as first written; every attempt sends the same body.
-- A sender claims a due row by moving `next_attempt_at` past the send's
-- timeout with a conditional UPDATE (one instance wins); a sender killed
-- mid-way leaves the row due again when that moment passes.
-- `status`: 'pending', 'delivered' or 'failed' (retries ran out).
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  webhook BIGINT NOT NULL,
  event VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  created_at BIGINT NOT NULL,
  -- (a VARCHAR: sqlx reads MySQL's TEXT types as BLOBs; an event's data
  -- is a few KiB at most: ten entries, or a post with 1 KiB of metadata)
  data VARCHAR(8000) NOT NULL,
  status VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'pending',
  attempts BIGINT NOT NULL DEFAULT 0,
  last_status BIGINT NULL,
  next_attempt_at BIGINT NULL,
  KEY webhook_deliveries_due (status, next_attempt_at),
  KEY webhook_deliveries_log (webhook, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- When a period's `period.closed` event was emitted (set at once for the
-- periods that had ended before this migration: they never emit one). The
-- closing job flips it from NULL with a conditional UPDATE, so each period
-- closes once whatever number of instances run the job.
ALTER TABLE board_periods ADD COLUMN IF NOT EXISTS closed_at BIGINT NULL;
UPDATE board_periods SET closed_at = ends_at WHERE ends_at <= UNIX_TIMESTAMP() * 1000;
CREATE INDEX IF NOT EXISTS board_periods_unclosed ON board_periods (closed_at, ends_at);

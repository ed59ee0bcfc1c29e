-- Migration 15: changes to a tournament's fields (v3), by PATCH.
--
-- A change applies to periods that have not started: from `from_period`
-- on, the board's `join_required`, `max_entrants`, `max_attempts`,
-- `starts_at` and `ends_at` are this row's (the latest row whose
-- `from_period` is at most the period's index; before the first row,
-- the `boards` row's). A board keeps the rows its latest recorded period
-- and later ones still need: a few at most.
CREATE TABLE IF NOT EXISTS board_terms (
  board BIGINT NOT NULL,
  from_period BIGINT NOT NULL,
  join_required BIGINT NOT NULL,
  max_entrants BIGINT NULL,
  max_attempts BIGINT NULL,
  starts_at BIGINT NULL,
  ends_at BIGINT NULL,
  PRIMARY KEY (board, from_period)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

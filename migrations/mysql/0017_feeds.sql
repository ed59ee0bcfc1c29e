-- Migration 17: one post, many boards (v4 `feeds`).
--
-- `feeds`: the custom boards a board's accepted and held posts are also
-- posted to, as a JSON list of board numbers (numbers are never reused,
-- so a deleted board's number is skipped until the list changes). On
-- `boards` and on `builtin_board_rules` alike.
ALTER TABLE boards ADD COLUMN IF NOT EXISTS feeds VARCHAR(256) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '[]';
ALTER TABLE builtin_board_rules ADD COLUMN IF NOT EXISTS feeds VARCHAR(256) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '[]';
-- A fed post names its original: the original's board (`best` for
-- `/api/scores`) and post id. Deleting the original deletes the posts it
-- fed (found by `via_post`); the history shows `via`.
ALTER TABLE board_scores ADD COLUMN IF NOT EXISTS via VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL;
ALTER TABLE board_scores ADD COLUMN IF NOT EXISTS via_post BIGINT NULL;
CREATE INDEX IF NOT EXISTS board_scores_via ON board_scores (via_post);

-- Migration 8: the ended periods without final standings, found by an
-- index. Every change to a period's entries clears `standings_changes`
-- (the score writer when it numbers a change, moderation with the claim),
-- so the periods the standings job has to write are the NULL range of this
-- index up to now, not a read of every kept period (1,000 boards keeping
-- 1,000 periods each would be a million rows every 2 s).
CREATE INDEX IF NOT EXISTS board_periods_unsettled ON board_periods (standings_changes, ends_at);

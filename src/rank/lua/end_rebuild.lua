-- KEYS: the `rebuilding` mark, the change log; ARGV: the mark a rebuild set.
-- Ends its logging if the mark is still its own (see RedisSource::end_rebuild).
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1], KEYS[2]) end return 0

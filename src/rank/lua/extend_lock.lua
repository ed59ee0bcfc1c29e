-- KEYS: a lock; ARGV: the token that took it, a new lifetime (ms).
-- Extends it if still the token's: 1, else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0

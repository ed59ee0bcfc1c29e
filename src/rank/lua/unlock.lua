-- KEYS: a lock; ARGV: the token that took it. Deletes it if still the token's.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0

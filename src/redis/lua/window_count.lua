-- KEYS: the counter; ARGV: window in ms. Returns {count, ms until the window closes}.
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {count, redis.call('PTTL', KEYS[1])}

-- KEYS: a counter; ARGV: a value. Sets the counter to the value if it is higher.
local now = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > now then redis.call('SET', KEYS[1], ARGV[1]) return tonumber(ARGV[1]) end
return now

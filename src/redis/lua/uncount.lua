-- KEYS: a window counter. Gives one event back, if the window is still open
-- (a DECR of a closed window would leave a counter without expiry).
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('DECR', KEYS[1]) end
return 0

-- KEYS: the key; ARGV: version, value, ttl in ms. Stored as 'version|value';
-- versions are fixed-width text, compared as text.
local old = redis.call('GET', KEYS[1])
if old then
  local version = string.match(old, '^([^|]*)|')
  if version and version > ARGV[1] then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1] .. '|' .. ARGV[2], 'PX', ARGV[3])
return 1

-- KEYS: set, entries, ready; ARGV: period, ranked digits (see SLICE), then player ids
local ready = redis.call('GET', KEYS[3])
if not ready or tonumber(ARGV[1]) < tonumber(ready) then return {-1} end
local digits = tonumber(ARGV[2])
local found = {}
for i = 3, #ARGV do
  local entry = redis.call('HGET', KEYS[2], ARGV[i])
  local member, metadata
  if entry then member, metadata = string.match(entry, '^(%x+) %S+ ?(.*)$') end
  if member then
    local floor = string.sub(member, 1, digits) .. string.rep('0', string.len(member) - digits)
    local rank = redis.call('ZLEXCOUNT', KEYS[1], '-', '(' .. floor) + 1
    table.insert(found, {member, metadata, rank})
  end
end
return {redis.call('ZCARD', KEYS[1]), found}

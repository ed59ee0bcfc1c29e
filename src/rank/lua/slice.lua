-- KEYS: set, entries, ready, the group's change sequence, the group's epoch,
--       change numbers, changes applied
-- ARGV: mode (offset | after | around), offset / member / id, count, ranked digits (those of
--       the score and subscores, at the front of a member), radius, period,
--       with metadata (1/0), the stamp of a copy the caller holds ('' for none),
--       the change count where the caller's walk began ('' for none), scan limit
-- The stamp (epoch:sequence) names the group's state: while it holds, the
-- caller's copy is exact and only {-3} is answered. A walk after a member
-- leaves out the entries whose change number is past its start, and
-- answers each entry's position and rank; {-4} while some change up to its
-- start is not recorded here yet. The last value is where a walk beginning
-- at this read begins.
local ready = redis.call('GET', KEYS[3])
if not ready or tonumber(ARGV[6]) < tonumber(ready) then return {-1} end
local epoch, seq = redis.call('GET', KEYS[5]) or '', redis.call('GET', KEYS[4]) or '0'
local stamp = epoch .. ':' .. seq
if stamp == ARGV[8] then return {-3} end
local total = redis.call('ZCARD', KEYS[1])
local digits = tonumber(ARGV[4])
local function rank_of(member)
  local floor = string.sub(member, 1, digits) .. string.rep('0', string.len(member) - digits)
  return redis.call('ZLEXCOUNT', KEYS[1], '-', '(' .. floor) + 1
end
local position
if ARGV[1] == 'offset' then
  position = tonumber(ARGV[2])
elseif ARGV[1] == 'after' then
  position = redis.call('ZLEXCOUNT', KEYS[1], '-', '[' .. ARGV[2])
else
  local entry = redis.call('HGET', KEYS[2], ARGV[2])
  local mine = entry and string.match(entry, '^(%x+) ')
  if not mine then return {-2} end
  position = redis.call('ZLEXCOUNT', KEYS[1], '-', '(' .. mine) - tonumber(ARGV[5])
  if position < 0 then position = 0 end
end
local count = tonumber(ARGV[3])
local members, positions, ranks, stopped = {}, {}, {}, ''
local walked = ARGV[1] == 'after' and ARGV[9] ~= ''
if walked then
  local since = tonumber(ARGV[9])
  if tonumber(redis.call('GET', KEYS[7]) or '0') < since then return {-4} end
  local last = math.min(total, position + count + tonumber(ARGV[10]))
  local at = position
  while at < last and #members < count do
    local batch = redis.call('ZRANGE', KEYS[1], at, math.min(last, at + count) - 1)
    for i, member in ipairs(batch) do
      if #members < count then
        local id = tostring(tonumber(string.sub(member, -12), 16))
        local changed = tonumber(redis.call('HGET', KEYS[6], id) or '0')
        if changed <= since then
          table.insert(members, member)
          table.insert(positions, at + i - 1)
          if #members > 1 and string.sub(member, 1, digits) == string.sub(members[#members - 1], 1, digits) then
            table.insert(ranks, ranks[#ranks])
          else
            table.insert(ranks, rank_of(member))
          end
        end
        if at + i == last and last < total and #members < count then stopped = member end
      end
    end
    if #batch == 0 then break end
    at = at + #batch
  end
elseif position < total and count > 0 then
  members = redis.call('ZRANGE', KEYS[1], position, position + count - 1)
end
local first_rank = 0
if #members > 0 then first_rank = rank_of(members[1]) end
local metadata = {}
if ARGV[7] == '1' then
  for i, member in ipairs(members) do metadata[i] = metadata_of(KEYS[2], member) end
end
local walk = redis.call('GET', KEYS[7]) or '0'
return {total, position, first_rank, members, metadata, stamp, walked and 1 or 0, positions, ranks, stopped, walk}

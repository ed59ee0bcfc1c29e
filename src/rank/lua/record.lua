-- KEYS: changes, seq, ready, rebuilding, then (set, entries, change numbers,
--       changes applied, changes ahead) per board of the group
-- ARGV: id, version, log (1 = append to the change log; 0 = a replay after a
--       rebuild), log length, period, expire at (ms, 0: never), track changes
--       (1 on `latest` boards), the entry's change number (the database's),
--       then per board: member ('' takes the player off the board), metadata
--       ('' for none)
-- An entries value is 'member stamp metadata', or '- stamp' for a player
-- taken off (a tombstone: older updates arriving late lose to it). A stamp
-- is 'change number:version', and a later stamp is a later change number,
-- else a higher version: a removed entry's tombstone keeps its change
-- number, and the entry the player's next post makes starts again at
-- version 1 with a later one, which a version alone would refuse. (A bare
-- version, as values written before stamps read, is change number 0.)
-- Every change moves the sequence (a replay too), so that a page stamped
-- with it (see SLICE) is never served after its board changed. A tracked
-- board notes each entry's change number, and how far the numbers it has
-- seen run without a gap (where a walk begins, see SLICE).
local id, version, period, number = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[5]), tonumber(ARGV[8])
local boards = (#KEYS - 4) / 5
if ARGV[3] == '1' then
  local seq = redis.call('INCR', KEYS[2])
  -- Logged only while a rebuild may be reading the database (`rebuilding`
  -- is set before it reads): the log holds what a replay needs, and
  -- expires with the mark.
  -- A line names the change, not what it wrote (the replay reads that
  -- from the database): about 30 bytes whatever the metadata.
  local window = redis.call('PTTL', KEYS[4])
  if window > 0 then
    redis.call('RPUSH', KEYS[1], cjson.encode({seq, tonumber(id), period, version, number}))
    redis.call('LTRIM', KEYS[1], -tonumber(ARGV[4]), -1)
    redis.call('PEXPIRE', KEYS[1], window)
  end
end
local ready = redis.call('GET', KEYS[3])
if not ready then return -1 end
if period < tonumber(ready) then return 0 end
for i = 1, boards do
  local set, entries, changed = KEYS[5 * i], KEYS[5 * i + 1], KEYS[5 * i + 2]
  local applied, ahead = KEYS[5 * i + 3], KEYS[5 * i + 4]
  local member, metadata = ARGV[7 + 2 * i], ARGV[8 + 2 * i]
  if ARGV[7] == '1' then
    local through = tonumber(redis.call('GET', applied) or '0')
    if number > through then
      redis.call('SADD', ahead, ARGV[8])
      while redis.call('SREM', ahead, tostring(through + 1)) == 1 do through = through + 1 end
      redis.call('SET', applied, through)
      if ARGV[6] ~= '0' then
        redis.call('PEXPIREAT', applied, ARGV[6])
        redis.call('PEXPIREAT', ahead, ARGV[6])
      end
    end
  end
  local old = redis.call('HGET', entries, id)
  local newer = true
  if old then
    local old_member, first, second = string.match(old, '^(%S+) (%d+):?(%d*)')
    local old_number, old_version = 0, tonumber(first)
    if second ~= '' then old_number, old_version = tonumber(first), tonumber(second) end
    if old_number > number or (old_number == number and old_version >= version) then
      newer = false
    elseif old_member ~= '-' then
      redis.call('ZREM', set, old_member)
    end
  end
  if newer then
    local stamp = number .. ':' .. version
    if ARGV[3] ~= '1' then redis.call('INCR', KEYS[2]) end
    if member == '' then
      -- off the board: a tombstone keeps the version
      redis.call('HSET', entries, id, '- ' .. stamp)
      if ARGV[7] == '1' then redis.call('HDEL', changed, id) end
    else
      redis.call('ZADD', set, 0, member)
      redis.call('HSET', entries, id, member .. ' ' .. stamp .. ' ' .. metadata)
      if ARGV[7] == '1' then redis.call('HSET', changed, id, ARGV[8]) end
    end
    if ARGV[6] ~= '0' then
      redis.call('PEXPIREAT', set, ARGV[6])
      redis.call('PEXPIREAT', entries, ARGV[6])
      if ARGV[7] == '1' then redis.call('PEXPIREAT', changed, ARGV[6]) end
    end
  end
end
return 1

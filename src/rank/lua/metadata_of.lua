-- The metadata of a member's entry (the id is the member's last 12 hex digits).
local function metadata_of(entries, member)
  local entry = redis.call('HGET', entries, tostring(tonumber(string.sub(member, -12), 16)))
  if not entry then return '' end
  return string.match(entry, '^%x+ %S+ (.*)$') or ''
end

# Sourced by floor.sh and reads_ab.sh: `custom_board URL TOKEN PLAYERS
# WORKDIR` makes a custom board `runs` on the server at URL (admin token
# TOKEN) and has a server key post to it for players 1..PLAYERS for 4 s
# (about 10,000 entries), so that `/api/rankings/runs?limit=10` is a
# custom board's top page. Needs curl, python3 and wrk.
custom_board() {
  local url=$1 token=$2 players=$3 work=$4 key
  curl -fsS -XPOST "$url/api/admin/boards" -H "Authorization: Bearer $token" -H 'content-type: application/json' \
    -d '{"id": "runs", "name": "Runs"}' > /dev/null
  key=$(curl -fsS -XPOST "$url/api/admin/keys" -H "Authorization: Bearer $token" -H 'content-type: application/json' \
    -d '{"name": "runs"}' | python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])')
  cat > "$work/runs.lua" <<LUA
counter = 0
request = function()
  counter = counter + 1
  local body = '{"user_id": ' .. (counter * 7919 % $players + 1) .. ', "score": ' .. (counter * 104729 % 100000) .. '}'
  return wrk.format("POST", "/api/boards/runs/scores", {["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer $key"}, body)
end
LUA
  wrk -t1 -c8 -d4s -s "$work/runs.lua" "$url" > /dev/null
}

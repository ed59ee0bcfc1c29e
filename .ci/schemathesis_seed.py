"""Seeds the server under schemathesis (.ci/schemathesis.sh) and prints
the fixture .ci/schemathesis_hooks.py reads: a generated dataset, the
run's player with posts on every kind of board (a partitioned one too), a tournament it joined,
a league it plays in, a board that holds posts, a server key, a
webhook and a reward the player was granted. HISCORE_URL and HISCORE_ADMIN say where and who."""

import json
import os
import time

from hiscore_api import call, ok

ADMIN = os.environ["HISCORE_ADMIN"]
# The run's player's password; throwaway players get another (the
# fixture's), so a call meant for one never erases the other.
RUN_PASSWORD = "schemathesis-run-player"
PASSWORD = "schemathesis-throwaway"


def admin(method, path, body=None):
    return ok(call(method, path, body, ADMIN))


admin("POST", "/api/admin/initialize", {"users": 200, "scores": 2000, "seed": 1})
for board in ("sprint", "patchable"):
    # Partitioned by a field no generated metadata has: every read's
    # `partition=` reaches a board with partitions, and posts land on it.
    admin("POST", "/api/admin/boards", {"id": board, "name": board, "reset": "0 0 * * 1", "archive_periods": 5,
                                        "partition_by": "region_code"})
admin("POST", "/api/admin/boards", {"id": "cup", "name": "Cup", "join_required": True})
admin("POST", "/api/admin/boards", {"id": "guarded", "name": "Guarded", "hold_beyond": 100})
league_definition = {"tiers": ["Bronze", "Silver"], "cohort_size": 10, "promote": 2, "demote": 2, "reset": "0 0 * * 1"}
admin("POST", "/api/admin/leagues", {**league_definition, "id": "weekly", "name": "Weekly"})
key = admin("POST", "/api/admin/keys", {"name": "game servers"})
webhook_url = "https://93.184.215.14/hiscore-hooks"
webhook = admin("POST", "/api/admin/webhooks", {"url": webhook_url, "events": ["period.closed"]})["id"]

registered = ok(call("POST", "/api/users", {"login_name": "schemathesis", "password": RUN_PASSWORD}))
# Logins fuzzed with the right credentials start sessions of their own
# player (a player keeps a bounded number: the run's own would end).
ok(call("POST", "/api/users", {"login_name": "schemathesis_login", "password": RUN_PASSWORD}))
token, user_id = registered["token"], registered["user"]["id"]
ok(call("POST", "/api/scores", {"score": 1200}, token))
ok(call("POST", "/api/boards/sprint/scores", {"score": 30, "metadata": {"level": 3, "region_code": "DE"}}, token))
ok(call("POST", "/api/boards/cup/entrants", None, token))
placed = ok(call("POST", "/api/leagues/weekly/scores", {"score": 40}, token))

# A reward for the run's player to claim: a board whose periods last a
# second pays rank 1; once a period it played closed, the board goes (its
# grants stay the player's).
admin("POST", "/api/admin/boards", {"id": "paid", "name": "Paid", "reset": "* * * * * *",
                                    "rewards": [{"ranks": [1, 1], "reward": {"gems": 5}}]})
ok(call("POST", "/api/boards/paid/scores", {"score": 1}, token))
for _ in range(100):
    rewards = ok(call("GET", "/api/me/rewards", None, token))["rewards"]
    if rewards:
        break
    time.sleep(0.1)
else:
    raise SystemExit("no reward was granted to the run's player within 10 s")
admin("DELETE", "/api/admin/boards/paid")

print(json.dumps({
    "password": PASSWORD,
    "login": ["schemathesis_login", RUN_PASSWORD],
    "token": token,
    "user_id": user_id,
    "board": "sprint",
    "patchable": "patchable",
    "cup": "cup",
    "guarded": "guarded",
    "league": "weekly",
    "league_definition": league_definition,
    "cohort": placed["cohort"],
    "server_key": key["key"],
    "server_key_id": key["id"],
    "webhook": webhook,
    "webhook_url": webhook_url,
    "reward": rewards[0]["id"],
}))

"""schemathesis hooks for .ci/schemathesis.sh: each operation is called
the way the contract says it is called, on rows that exist.

- Authentication per operation: the admin token on /api/admin/ routes, a
  server key on a player's rewards (the game servers' routes), a
  player's session on the player's routes, a fresh throwaway player for
  the routes that end a session or an account (so the run's own player
  never logs out, changes its password or erases itself), and a server
  key for posts to the server-only board.
- Path parameters: three calls in four name a row made for the call (a
  board, post, key, webhook, league or player made just before it when
  the call deletes or changes it; the seeded ones when it reads), the
  fourth keeps what schemathesis generated, so the refusals (404, 422)
  are fuzzed as well.

The ids come from the fixture file the script writes after seeding
(HISCORE_FIXTURE); HISCORE_URL and HISCORE_ADMIN say where and who;
every answer's status goes to HISCORE_REACHED.
"""

import itertools
import json
import os
import sys

import schemathesis

from hiscore_api import call, ok

ADMIN = os.environ["HISCORE_ADMIN"]
with open(os.environ["HISCORE_FIXTURE"], encoding="utf-8") as fixture_file:
    FIXTURE = json.load(fixture_file)
PASSWORD = FIXTURE["password"]

_calls = itertools.count()
_names = itertools.count()


def admin(method, path, body=None):
    return ok(call(method, path, body, ADMIN))


def fresh_name(kind):
    return f"{kind}{next(_names)}"


def throwaway_player():
    """A new player: (id, token)."""
    answer = ok(call("POST", "/api/users", {"login_name": fresh_name("fz_"), "password": PASSWORD}))
    return answer["user"]["id"], answer["token"]


def fresh_board(**fields):
    """A new custom board with these fields: its id."""
    board = fresh_name("fx-")
    admin("POST", "/api/admin/boards", {"id": board, "name": board, **fields})
    return board


def negative(case):
    """Whether schemathesis made the case invalid on purpose."""
    meta = getattr(case, "meta", None)
    return meta is not None and str(meta.generation.mode) == "negative"


def own_answer(case):
    """Three positive calls in four get a made-up row; the fourth, and
    every negative one, keep what was generated. Joining is the exception:
    every positive join gets a fresh tournament, since the boards other
    calls create (stateful links pass them on) take no entrants, and a
    run whose joins met mostly 422 `join_not_required` would have fuzzed
    the join in name only."""
    if negative(case):
        return False
    joining = case.path == "/api/boards/{board}/entrants" and case.method.upper() == "POST"
    return next(_calls) % 4 != 3 or joining


# The rows the run reads and posts to: a generated change or deletion that
# names one is turned to a row made for it, so that they stay as seeded.
def protected(case):
    params = {name: str(value) for name, value in (case.path_parameters or {}).items()}
    if not case.path.startswith("/api/admin/") or case.method.upper() == "GET":
        return False
    named = {
        "/api/admin/boards/{board}": ("board", (FIXTURE["board"], FIXTURE["cup"], FIXTURE["guarded"], FIXTURE["patchable"])),
        "/api/admin/leagues/{id}": ("id", (FIXTURE["league"],)),
        "/api/admin/users/{id}": ("id", (str(FIXTURE["user_id"]),)),
        "/api/admin/users/{id}/ban": ("id", (str(FIXTURE["user_id"]),)),
        "/api/admin/webhooks/{id}": ("id", (str(FIXTURE["webhook"]),)),
        "/api/admin/keys/{id}": ("id", (str(FIXTURE["server_key_id"]),)),
    }.get(case.path)
    return named is not None and params.get(named[0]) in named[1]


# Who calls what: the first provider whose filter takes the operation.
class Bearer:
    def set(self, case, data, context):
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}


@schemathesis.auth().apply_to(path_regex="^/api/admin/")
class AdminToken(Bearer):
    def get(self, case, context):
        return ADMIN


@schemathesis.auth(refresh_interval=None).apply_to(path_regex="^/api/(me|sessions)$", method=["DELETE", "PATCH"])
class ThrowawayPlayer(Bearer):
    def get(self, case, context):
        return throwaway_player()[1]


@schemathesis.auth().apply_to(path_regex="^/api/users/[^/]+/rewards")
class GameServerKey(Bearer):
    def get(self, case, context):
        return FIXTURE["server_key"]


@schemathesis.auth().skip_for(path_regex="^/api/admin/").skip_for(
    path_regex="^/api/(me|sessions)$", method=["DELETE", "PATCH"]
).skip_for(path_regex="^/api/users/[^/]+/rewards")
class RunPlayer(Bearer):
    def get(self, case, context):
        return FIXTURE["token"]


def made_for(case):
    """Path parameters naming rows made or seeded for this call, by route."""
    method, path = case.method.upper(), case.path
    if path == "/api/admin/boards/{board}":
        return {"board": fresh_board() if method == "DELETE" else FIXTURE["patchable"]}
    if path == "/api/admin/boards/{board}/scores/{id}":
        _, token = throwaway_player()
        board = fresh_board()
        posted = ok(call("POST", f"/api/boards/{board}/scores", {"score": 5}, token))
        return {"board": board, "id": posted["score"]["id"]}
    if path == "/api/admin/scores/{id}":
        _, token = throwaway_player()
        return {"id": ok(call("POST", "/api/scores", {"score": 5}, token))["score"]["id"]}
    if path.startswith("/api/admin/users/{id}"):
        user_id, _ = throwaway_player()
        if method == "DELETE":
            admin("POST", f"/api/admin/users/{user_id}/ban", {"reason": "fixture"})
        return {"id": user_id}
    if path == "/api/admin/held/{score_id}":
        _, token = throwaway_player()
        held = ok(call("POST", f"/api/boards/{fresh_board(hold_beyond=100)}/scores", {"score": 500}, token))
        return {"score_id": held["score"]["id"]}
    if path == "/api/admin/keys/{id}":
        return {"id": admin("POST", "/api/admin/keys", {"name": fresh_name("key")})["id"]}
    if path == "/api/admin/webhooks/{id}":
        hook = admin("POST", "/api/admin/webhooks", {"url": FIXTURE["webhook_url"], "events": ["score.held"]})
        return {"id": hook["id"]}
    if path == "/api/admin/webhooks/{id}/deliveries":
        return {"id": FIXTURE["webhook"]}
    if path == "/api/admin/leagues/{id}":
        league = fresh_name("gone-")
        admin("POST", "/api/admin/leagues", {**FIXTURE["league_definition"], "id": league, "name": league})
        return {"id": league}
    if path == "/api/boards/{board}/entrants":
        return {"board": fresh_board(join_required=True) if method == "POST" else FIXTURE["cup"]}
    if path.startswith("/api/boards/{board}"):
        return {"board": FIXTURE["board"]}
    if path.startswith("/api/leagues/{id}"):
        return {"id": FIXTURE["league"], "cohort": FIXTURE["cohort"], "user_id": FIXTURE["user_id"]}
    if path.startswith("/api/rankings/{board}"):
        return {"board": FIXTURE["board"], "user_id": FIXTURE["user_id"]}
    if path == "/api/me/rewards/{id}/claim":
        return {"id": FIXTURE["reward"]}
    if path.startswith("/api/users/{id}"):
        return {"id": FIXTURE["user_id"], "reward": FIXTURE["reward"]}
    return {}


@schemathesis.hook
def before_call(context, case, kwargs):
    if case.path_parameters and (protected(case) or own_answer(case)):
        try:
            chosen = made_for(case)
        except Exception as error:  # the generated parameters stay; a 404 will tell
            print(f"schemathesis_hooks: no row for {case.method} {case.path}: {error}", file=sys.stderr)
            chosen = {}
        case.path_parameters = {**case.path_parameters, **{k: v for k, v in chosen.items() if k in case.path_parameters}}
    if case.path == "/api/admin/initialize" and isinstance(case.body, dict):
        # A run's dataset, not a benchmark's: initialize is fuzzed apart, last.
        for field, most in (("users", 500), ("scores", 5000)):
            if isinstance(case.body.get(field), int) and case.body[field] > most:
                case.body[field] = most
    if case.path == "/api/me" and case.method.upper() in ("DELETE", "PATCH") and isinstance(case.body, dict):
        # The throwaway player's password, where the body gives the current one.
        field = "password" if case.method.upper() == "DELETE" else "current_password"
        if isinstance(case.body.get(field), str):
            case.body[field] = PASSWORD
    body = case.body if isinstance(case.body, dict) else None
    if body is not None and case.path in POSTS:
        # `user_id` names the player a server key posts for: such a post is
        # a game server's (for the run's player); a third of the others too.
        if "user_id" not in body and next(_calls) % 3 == 0:
            body["user_id"] = 0
        ours = (case.headers or {}).get("Authorization") == f"Bearer {FIXTURE['token']}"
        if isinstance(body.get("user_id"), int) and ours:
            body["user_id"] = FIXTURE["user_id"]
            case.headers["Authorization"] = f"Bearer {FIXTURE['server_key']}"
    if body is not None and not negative(case):
        repair(case.path, case.method.upper(), body)
    if body is not None and own_answer(case):
        if case.path in POSTS and "Idempotency-Key" in (case.headers or {}):
            # A key of its own: a key the run used for another body is a 422.
            case.headers["Idempotency-Key"] = fresh_name("key-")


# The score posts, with a session or a server key.
POSTS = ("/api/scores", "/api/boards/{board}/scores", "/api/leagues/{id}/scores")


def repair(path, method, body):
    """In a positive case, the fields no JSON Schema can state (a cron
    pattern, an IANA zone, the ids of boards to feed, a public URL that needs no DNS, a password's
    length in bytes, one field bounded by another, a unique id) made valid
    where they are there, so that creations succeed often enough to fuzz
    what follows them."""
    for field in ("password", "current_password"):
        if isinstance(body.get(field), str) and not 8 <= len(body[field].encode()) <= 72:
            body[field] = (body[field] + "-padding-")[:8] if len(body[field]) < 8 else body[field][:18]
    if path in ("/api/admin/boards", "/api/admin/leagues") and isinstance(body.get("id"), str):
        # The schema's example id, again and again, is 409 after the first.
        body["id"] = fresh_name("new-")
    if path == "/api/sessions":
        body["login_name"], body["password"] = FIXTURE["login"]
    if path == "/api/admin/leagues" and isinstance(body.get("tiers"), list):
        body["tiers"] = [f"Tier {n}" for n in range(len(body["tiers"]))]
    if path in ("/api/admin/boards", "/api/admin/leagues", "/api/admin/boards/{board}"):
        if isinstance(body.get("timezone"), str):
            body["timezone"] = "Europe/Paris"
        if isinstance(body.get("reset"), str):
            body["reset"] = "0 0 * * 1"
        low, high = body.get("min_score"), body.get("max_score")
        if isinstance(low, int) and isinstance(high, int) and low > high:
            body["min_score"], body["max_score"] = high, low
        if body.get("operator") == "total":
            body["order"] = "desc"
            body.pop("subscores", None)
        if isinstance(body.get("subscores"), list):
            # Distinct names (a rule across items).
            for n, subscore in enumerate(body["subscores"]):
                if isinstance(subscore, dict) and isinstance(subscore.get("name"), str):
                    subscore["name"] = f"s{n}_{subscore['name']}"[:32]
        for field in ("starts_at", "ends_at"):
            if isinstance(body.get(field), str):
                body[field] = None
        if isinstance(body.get("feeds"), list):
            # Boards that exist and feed none (no schema can name them).
            body["feeds"] = [fresh_board() for _ in body["feeds"][:3]]
        if not isinstance(body.get("partition_by"), str):
            # Partitions' limits need `partition_by` (a rule across fields).
            body.pop("max_partitions", None)
            body.pop("partition_values", None)
        if isinstance(body.get("partition_values"), list):
            # Distinct values, no more than `max_partitions`.
            most = body.get("max_partitions") if isinstance(body.get("max_partitions"), int) else 1000
            body["partition_values"] = [f"v{n}" for n in range(min(len(body["partition_values"]), max(most, 0)))]
    if isinstance(body.get("rewards"), list):
        # A band's ranks in order, its percent to two decimals and its
        # reward within 1 KiB: rules a JSON Schema states loosely at best.
        for band in body["rewards"]:
            if not isinstance(band, dict):
                continue
            if isinstance(band.get("ranks"), list) and len(band["ranks"]) == 2:
                band["ranks"] = sorted(band["ranks"], key=lambda rank: rank if isinstance(rank, int) else 0)
            if isinstance(band.get("top_percent"), (int, float)):
                band["top_percent"] = min(100, max(0.01, round(band["top_percent"], 2)))
            if isinstance(band.get("reward"), dict) and len(json.dumps(band["reward"])) > 1000:
                band["reward"] = {}
    if path == "/api/admin/leagues" and isinstance(body.get("cohort_size"), int):
        for field in ("promote", "demote"):
            if isinstance(body.get(field), int):
                body[field] = min(body[field], body["cohort_size"])
    if path in POSTS:
        # A post carries as many subscores as its board has: the run's
        # boards and leagues have none (no schema can tie the two).
        body.pop("subscores", None)
    if path == "/api/admin/webhooks" and isinstance(body.get("url"), str):
        body["url"] = FIXTURE["webhook_url"]


@schemathesis.hook
def after_call(context, case, response):
    """Every answer's status by operation, for .ci/schemathesis_reached.py."""
    code = "-"
    if response.status_code >= 400:
        try:
            code = response.json()["error"]["code"]
        except Exception:  # not the contract's envelope: the checks say so
            code = "?"
    with open(os.environ["HISCORE_REACHED"], "a", encoding="utf-8") as log:
        log.write(f"{case.method.upper()} {case.path} {response.status_code} {code}\n")
    if case.path == "/api/admin/boards/{board}" and case.method.upper() == "PATCH" and response.status_code == 200:
        # A built-in's rules changed: back to what the run's player posts under.
        builtin = (case.path_parameters or {}).get("board")
        if builtin in ("best", "total"):
            rules = {"writers": "players", "min_interval_ms": None, "hold_beyond": None, "hold_jump": None}
            admin("PATCH", f"/api/admin/boards/{builtin}", rules)

#!/usr/bin/env python3
"""A small, independent server of the HTTP contract, for the bench's tests.

Written from the contract (the API section of the README and the OpenAPI
document), not from hiscore's code, in another language on purpose: where
the contract allows more than one answer it gives the one hiscore does not,
so that a bench which only accepts hiscore's choices fails here.

    a banned player's old token     401 (their sessions die), not 403
    an idempotent replay            200 (hiscore answers 201 again)
    a cursor walk                   pages of a snapshot taken when the walk
                                    began (hiscore walks the live board and
                                    leaves out entries changed since)
    around a player                 `radius` entries either side, no next_*
    a live page                     asked again every 300 ms, ids of another
                                    digest, the connection closed at the end
                                    instead of chunked

Everything lives in memory behind one lock. It serves what `hiscore bench`
sends; `reset` accepts only null or `*/N * * * * *` with N dividing 60 (the
bench's resetting board), anything else is 422 `invalid_reset`.

`--fault NAME` plants a known bug, for tests that require the bench to catch
it in every run:
    lowest-wins-highest-first   `asc` boards ordered and ranked as `desc`
    dense-ranks                 ties followed by 1, 2, 2, 3 instead of 1, 2, 2, 4
    live-steps-back             a live page sends, after each new page, the
                                one before it again
"""

import argparse
import collections
import datetime
import hashlib
import json
import random
import re
import secrets
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOGIN_NAME = re.compile(r"^[A-Za-z0-9_.-]{3,32}$")
BOARD_ID = re.compile(r"^[a-z0-9_-]{1,64}$")
EVERY_N_SECONDS = re.compile(r"^\*/([0-9]{1,2}) \* \* \* \* \*$")
MAX_SCORE = 1_000_000_000
SNAPSHOTS_KEPT = 5_000


class Reject(Exception):
    """An error answer: status, code, message."""

    def __init__(self, status, code, message):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def now_ms():
    return int(datetime.datetime.now(datetime.timezone.utc).timestamp() * 1000)


def rfc3339(ms):
    if ms is None:
        return None
    moment = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def is_integer(value):
    return isinstance(value, int) and not isinstance(value, bool)


class Board:
    """A custom board: its definition and its entries per period."""

    def __init__(self, spec, created, every):
        self.spec, self.created, self.every = spec, created, every
        self.periods = collections.defaultdict(dict)  # index -> {user id: entry}

    def period_at(self, ms):
        if self.every is None:
            return 0
        step = self.every * 1000
        first = (self.created // step + 1) * step
        return 0 if ms < first else 1 + (ms - first) // step

    def period_object(self, index):
        if self.every is None:
            return {"index": 0, "start": rfc3339(self.created), "end": None}
        step = self.every * 1000
        first = (self.created // step + 1) * step
        start = self.created if index == 0 else first + (index - 1) * step
        return {"index": index, "start": rfc3339(start), "end": rfc3339(first + index * step)}


class Store:
    def __init__(self, admin_token, fault):
        self.admin_token, self.fault = admin_token, fault
        self.lock = threading.Lock()
        self.snapshots = collections.OrderedDict()
        self.wipe()

    def wipe(self):
        self.users, self.by_login, self.sessions = {}, {}, {}
        self.posts, self.board_posts, self.keys, self.boards = {}, {}, {}, {}
        self.next_user, self.next_post = 1, 1
        self.snapshots.clear()

    # ------------------------------------------------------------ players

    def add_user(self, login_name, password, display_name, created):
        salt = secrets.token_hex(8)
        user = {
            "id": self.next_user, "login_name": login_name, "display_name": display_name,
            "salt": salt, "hash": hashlib.sha256((salt + password).encode()).hexdigest(),
            "created": created, "banned": False, "posts": [],
            "best": 0, "best_at": None, "total": 0, "count": 0,
        }
        self.users[user["id"]] = user
        self.by_login[login_name.lower()] = user["id"]
        self.next_user += 1
        return user

    def apply_post(self, user, post):
        if user["count"] == 0 or post["score"] > user["best"]:
            user["best"], user["best_at"] = post["score"], post["created"]
        user["total"] += post["score"]
        user["count"] += 1

    def recount(self, user):
        user["best"], user["best_at"], user["total"], user["count"] = 0, None, 0, 0
        for post_id in user["posts"]:
            self.apply_post(user, self.posts[post_id])

    def new_session(self, user):
        token = secrets.token_urlsafe(24)
        self.sessions[token] = user["id"]
        return token

    def public(self, user, ranks):
        best_ranks, total_ranks = ranks
        return {
            "id": user["id"], "display_name": user["display_name"], "image": user["id"] % 10 + 1,
            "best_score": user["best"], "best_at": rfc3339(user["best_at"]), "total_score": user["total"],
            "play_count": user["count"], "best_rank": best_ranks.get(user["id"]),
            "total_rank": total_ranks.get(user["id"]), "created_at": rfc3339(user["created"]),
        }

    def me(self, user):
        return dict(self.public(user, self.rank_maps()), login_name=user["login_name"])

    def rank_maps(self):
        return ({e["id"]: e["rank"] for e in self.standings("best", 0)},
                {e["id"]: e["rank"] for e in self.standings("total", 0)})

    # ------------------------------------------------------------- boards

    def standings(self, board_id, period):
        """The board in its order, each entry with its competition rank."""
        if board_id in ("best", "total"):
            listed = [u for u in self.users.values() if u["count"] > 0 and not u["banned"]]
            if board_id == "best":
                rows = [(u["best"], u["best_at"], u, None) for u in listed]
            else:
                rows = [(u["total"], None, u, None) for u in listed]
            lowest_first = False
        else:
            board = self.boards[board_id]
            entries = board.periods.get(period, {})
            rows = [(e["score"], e["at"], self.users[uid], e["metadata"])
                    for uid, e in entries.items() if not self.users[uid]["banned"]]
            lowest_first = board.spec["order"] == "asc" and self.fault != "lowest-wins-highest-first"
        sign = 1 if lowest_first else -1
        rows.sort(key=lambda r: (sign * r[0], r[1] or 0, r[2]["id"]))
        ranked, rank, distinct = [], 0, 0
        for position, (score, at, user, metadata) in enumerate(rows):
            if position == 0 or score != rows[position - 1][0]:
                distinct += 1
                rank = distinct if self.fault == "dense-ranks" else position + 1
            ranked.append({
                "rank": rank, "top_percent": top_percent(rank, len(rows)), "score": score,
                "achieved_at": rfc3339(at) if board_id != "total" else None,
                "user": {"id": user["id"], "display_name": user["display_name"], "image": user["id"] % 10 + 1},
                "metadata": metadata, "id": user["id"],
            })
        return ranked

    def board_period(self, board_id, query):
        """(period index, period object) asked for by `period`."""
        if board_id in ("best", "total"):
            if query.get("period", "current") not in ("current", "0"):
                raise Reject(404, "period_not_found", "built-in boards have only period 0")
            return 0, {"index": 0, "start": None, "end": None}
        board = self.boards.get(board_id)
        if board is None:
            raise Reject(404, "board_not_found", f"no board {board_id}")
        current = board.period_at(now_ms())
        wanted = query.get("period", "current")
        if wanted == "current":
            index = current
        else:
            index = parse_int(wanted, "invalid_period")
            kept = board.spec["archive_periods"]
            if index < 0 or index > current or (board.every is not None and index < current - kept):
                raise Reject(404, "period_not_found", f"period {index} is not kept")
        return index, board.period_object(index)

    def board_object(self, board):
        spec = dict(board.spec)
        spec["created_at"] = rfc3339(board.created)
        spec["period"] = board.period_object(board.period_at(now_ms()))
        return spec

    def snapshot(self, rows):
        snapshot_id = secrets.token_hex(6)
        self.snapshots[snapshot_id] = rows
        while len(self.snapshots) > SNAPSHOTS_KEPT:
            self.snapshots.popitem(last=False)
        return snapshot_id


def parse_int(text, code):
    try:
        return int(text)
    except (TypeError, ValueError):
        raise Reject(400, code, f"not an integer: {text}") from None


def bounded(query, name, default, low, high):
    value = parse_int(query.get(name, default), f"invalid_{name}")
    if not low <= value <= high:
        raise Reject(400, f"invalid_{name}", f"{name} must be {low}..{high}")
    return value


def page_entry(entry):
    return {k: v for k, v in entry.items() if k != "id"}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body in one write (unbuffered, they leave as two packets
    # and meet the peer's delayed ACK: 40 ms per answer).
    wbufsize = 1 << 16
    store = None  # set in main

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def dispatch(self, method):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        parts = [p for p in url.path.split("/") if p]
        if method == "GET" and len(parts) == 4 and parts[:2] == ["api", "rankings"] and parts[3] == "live":
            return self.live(parts[2], query)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            return self.answer(400, error("invalid_body", "the body is not JSON"))
        try:
            with self.store.lock:
                status, payload = self.route(method, parts, query, body)
        except Reject as rejected:
            status, payload = rejected.status, error(rejected.code, rejected.message)
        self.answer(status, payload)

    def answer(self, status, payload):
        self.send_response(status)
        if status == 204:
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if isinstance(payload, str):
            data, kind = payload.encode(), "text/html; charset=utf-8"
        else:
            data, kind = json.dumps(payload).encode(), "application/json"
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def live(self, board_id, query):
        """The page as server-sent events: again whenever it differs."""
        def read():
            with self.store.lock:
                return json.dumps(ranking_page(self.store, board_id, query)).encode()
        try:
            body = read()
        except Reject as rejected:
            return self.answer(rejected.status, error(rejected.code, rejected.message))
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        sent, pinged = self.headers.get("Last-Event-ID"), time.monotonic()
        earlier = None  # the page before the last one sent (for the planted fault)
        try:
            while True:
                page_id = hashlib.sha1(body).hexdigest()[:20]
                if page_id != sent:
                    self.wfile.write(b"event: page\nid: " + page_id.encode() + b"\ndata: " + body + b"\n\n")
                    sent = page_id
                    if earlier is not None and self.store.fault == "live-steps-back":
                        earlier_id = hashlib.sha1(earlier).hexdigest()[:20].encode()
                        self.wfile.write(b"event: page\nid: " + earlier_id + b"\ndata: " + earlier + b"\n\n")
                        sent = None
                    earlier = body
                elif time.monotonic() - pinged > 15:
                    self.wfile.write(b": ping\n\n")
                    pinged = time.monotonic()
                self.wfile.flush()
                time.sleep(0.3)
                try:
                    body = read()
                except Reject as rejected:
                    ended = json.dumps(error(rejected.code, rejected.message)).encode()
                    self.wfile.write(b"event: ended\ndata: " + ended + b"\n\n")
                    self.wfile.flush()
                    return
        except (BrokenPipeError, ConnectionResetError):
            return

    # ------------------------------------------------------------ routing

    def route(self, method, parts, query, body):
        s = self.store
        match (method, parts):
            case ("GET", []):
                return 200, "<!doctype html><title>contract server</title><p>rankings"
            case ("GET", ["healthz"]):
                return 200, {"status": "ok"}
            case ("POST", ["api", "admin", "initialize"]):
                self.admin()
                return 200, initialize(s, body or {})
            case ("POST", ["api", "users"]):
                return register(s, body)
            case ("POST", ["api", "sessions"]):
                return log_in(s, body)
            case ("DELETE", ["api", "sessions"]):
                token, _ = self.session()
                del s.sessions[token]
                return 204, None
            case ("GET", ["api", "me"]):
                return 200, s.me(self.session()[1])
            case ("POST", ["api", "scores"]):
                return self.keyed(body, "scores", lambda user: post_score(s, user, body))
            case ("POST", ["api", "boards", board_id, "scores"]):
                return self.keyed(body, board_id, lambda user: post_to_board(s, user, board_id, body))
            case ("GET", ["api", "users"]):
                return 200, users_by_ids(s, query)
            case ("GET", ["api", "users", user_id]):
                user = s.users.get(parse_int(user_id, "invalid_id"))
                if user is None or user["banned"]:
                    raise Reject(404, "user_not_found", "no such player")
                return 200, s.public(user, s.rank_maps())
            case ("GET", ["api", "users", user_id, "scores"]):
                return 200, history(s, parse_int(user_id, "invalid_id"), query)
            case ("GET", ["api", "rankings", board_id]):
                return 200, ranking_page(s, board_id, query)
            case ("GET", ["api", "rankings", board_id, "around", user_id]):
                return 200, around(s, board_id, parse_int(user_id, "invalid_id"), query)
            case ("GET", ["api", "rankings", board_id, "users"]):
                return 200, friends(s, board_id, query)
            case ("GET", ["api", "boards", board_id]):
                if board_id not in s.boards:
                    raise Reject(404, "board_not_found", f"no board {board_id}")
                return 200, s.board_object(s.boards[board_id])
            case ("POST", ["api", "admin", "boards"]):
                self.admin()
                return 201, create_board(s, body)
            case ("DELETE", ["api", "admin", "scores", post_id]):
                self.admin()
                return remove_post(s, parse_int(post_id, "invalid_id"))
            case ("POST" | "DELETE", ["api", "admin", "users", user_id, "ban"]):
                self.admin()
                return ban(s, parse_int(user_id, "invalid_id"), method == "POST")
        raise Reject(404, "not_found", f"no route {method} /{'/'.join(parts)}")

    def bearer(self):
        header = self.headers.get("Authorization") or ""
        return header[7:].strip() if header[:7].lower() == "bearer " else None

    def admin(self):
        if not self.store.admin_token:
            raise Reject(404, "not_found", "no admin token is configured")
        if self.bearer() != self.store.admin_token:
            raise Reject(401, "invalid_admin_token", "wrong admin token")

    def session(self):
        token = self.bearer()
        user_id = self.store.sessions.get(token)
        if user_id is None:
            raise Reject(401, "invalid_session", "no such session")
        return token, self.store.users[user_id]

    def keyed(self, body, scope, post):
        """A post, answered again for a replayed Idempotency-Key."""
        _, user = self.session()
        key = self.headers.get("Idempotency-Key")
        if key is None:
            return post(user)
        fingerprint = json.dumps([scope, body], sort_keys=True)
        earlier = self.store.keys.get((user["id"], key))
        if earlier is not None:
            if earlier[0] != fingerprint:
                raise Reject(422, "idempotency_key_reused", "the key was used for another post")
            return 200, earlier[1]
        status, answer = post(user)
        self.store.keys[(user["id"], key)] = (fingerprint, answer)
        return status, answer


def error(code, message):
    return {"error": {"code": code, "message": message}}


# ---------------------------------------------------------------- handlers

def initialize(s, body):
    users, scores = body.get("users", 1_000), body.get("scores", 10_000)
    rng = random.Random(body.get("seed", 1))
    s.wipe()
    start = 1_767_225_600_000  # 2026-01-01T00:00:00Z
    for i in range(users):
        s.add_user(f"player{i + 1}", secrets.token_hex(8), f"Player {i + 1}", start)
    for i in range(scores):
        user = s.users[rng.randint(1, users)]
        post = {"id": s.next_post, "user": user["id"], "score": int(rng.random() ** 3 * 1_000_000),
                "created": start + 1_000 * (i + 1)}
        s.next_post += 1
        s.posts[post["id"]] = post
        user["posts"].append(post["id"])
        s.apply_post(user, post)
    return {"users": users, "scores": scores}


def register(s, body):
    body = body if isinstance(body, dict) else {}
    login_name, password = body.get("login_name"), body.get("password")
    display_name = body.get("display_name", login_name)
    if not isinstance(login_name, str) or not LOGIN_NAME.match(login_name):
        raise Reject(422, "invalid_login_name", "3..32 of [A-Za-z0-9_.-]")
    if not isinstance(password, str) or not 8 <= len(password.encode()) <= 72:
        raise Reject(422, "invalid_password", "8..72 bytes")
    if not isinstance(display_name, str) or not 1 <= len(display_name) <= 32:
        raise Reject(422, "invalid_display_name", "1..32 characters")
    if login_name.lower() in s.by_login:
        raise Reject(409, "login_name_taken", "taken")
    user = s.add_user(login_name, password, display_name, now_ms())
    return 201, {"user": s.me(user), "token": s.new_session(user)}


def log_in(s, body):
    body = body if isinstance(body, dict) else {}
    user = s.users.get(s.by_login.get(str(body.get("login_name", "")).lower()))
    password = str(body.get("password", ""))
    if user is None or hashlib.sha256((user["salt"] + password).encode()).hexdigest() != user["hash"]:
        raise Reject(401, "invalid_credentials", "wrong login name or password")
    if user["banned"]:
        raise Reject(403, "banned", "this player is banned")
    return 200, {"user": s.me(user), "token": s.new_session(user)}


def valid_score(body, low=0, high=MAX_SCORE):
    score = body.get("score") if isinstance(body, dict) else None
    if not is_integer(score) or not low <= score <= high:
        raise Reject(422, "invalid_score", f"an integer {low}..{high}")
    return score


def post_score(s, user, body):
    score = valid_score(body)
    post = {"id": s.next_post, "user": user["id"], "score": score, "created": now_ms()}
    s.next_post += 1
    s.posts[post["id"]] = post
    new_best = user["count"] == 0 or score > user["best"]
    user["posts"].append(post["id"])
    s.apply_post(user, post)
    answer = {"score": {"id": post["id"], "score": score, "created_at": rfc3339(post["created"])},
              "new_best": new_best, "user": s.me(user)}
    return 201, answer


def post_to_board(s, user, board_id, body):
    board = s.boards.get(board_id)
    if board is None:
        raise Reject(404, "board_not_found", f"no board {board_id}")
    score = valid_score(body, board.spec["min_score"], board.spec["max_score"])
    metadata = body.get("metadata")
    if metadata is not None and (not isinstance(metadata, dict) or len(json.dumps(metadata)) > 1024):
        raise Reject(422, "invalid_metadata", "an object of at most 1 KiB")
    created = now_ms()
    index = board.period_at(created)
    entries = board.periods[index]
    previous = entries.get(user["id"])
    operator, lowest_first = board.spec["operator"], board.spec["order"] == "asc"
    reached = {"score": score, "at": created, "metadata": metadata}
    if previous is None:
        entry, improved = reached, True
    elif operator == "best":
        better = score < previous["score"] if lowest_first else score > previous["score"]
        entry, improved = (reached, True) if better else (previous, False)
    elif operator == "latest":
        entry, improved = reached, score != previous["score"]
    else:
        entry, improved = dict(reached, score=previous["score"] + score), score != 0
    entries[user["id"]] = entry
    post_id = s.next_post
    s.next_post += 1
    s.board_posts[post_id] = {"board": board_id, "user": user["id"], "score": score}
    shown = next(e for e in s.standings(board_id, index) if e["id"] == user["id"])
    return 201, {
        "score": {"id": post_id, "score": score, "created_at": rfc3339(created), "metadata": metadata},
        "entry": page_entry(shown), "improved": improved, "period": board.period_object(index),
    }


def users_by_ids(s, query):
    ids = parse_ids(query)
    ranks = s.rank_maps()
    found = [s.users[i] for i in ids if i in s.users and not s.users[i]["banned"]]
    return {"users": [s.public(user, ranks) for user in found]}


def parse_ids(query):
    texts = [t for t in query.get("ids", "").split(",") if t]
    if not 1 <= len(texts) <= 100:
        raise Reject(400, "invalid_ids", "1..100 ids")
    ids = []
    for text in texts:
        value = parse_int(text, "invalid_ids")
        if value not in ids:
            ids.append(value)
    return ids


def history(s, user_id, query):
    user = s.users.get(user_id)
    if user is None or user["banned"]:
        raise Reject(404, "user_not_found", "no such player")
    limit = bounded(query, "limit", 20, 1, 100)
    newest_first = sorted(user["posts"], reverse=True)
    if "before" in query:
        before = parse_int(query["before"], "invalid_before")
        newest_first = [p for p in newest_first if p < before]
    shown = newest_first[:limit]
    scores = [{"id": p, "score": s.posts[p]["score"], "created_at": rfc3339(s.posts[p]["created"])} for p in shown]
    more = len(newest_first) > limit
    return {"scores": scores, "next_before": shown[-1] if more else None}


def top_percent(rank, players):
    """ceil(10000 × rank ÷ players) hundredths, with at most two decimals."""
    hundredths = -(-10000 * rank // players)
    return hundredths // 100 if hundredths % 100 == 0 else hundredths / 100


def ranking_page(s, board_id, query):
    index, period = s.board_period(board_id, query)
    limit = bounded(query, "limit", 10, 1, 100)
    if "cursor" in query:
        snapshot_id, _, position = query["cursor"].partition(".")
        rows = s.snapshots.get(snapshot_id)
        if rows is None or not position.isdigit():
            raise Reject(400, "invalid_cursor", "not a cursor of this server")
        s.snapshots.move_to_end(snapshot_id)
        start = int(position)
    else:
        rows = s.standings(board_id, index)
        start = bounded(query, "offset", 0, 0, 10**9)
        snapshot_id = None
    end = start + limit
    more = end < len(rows)
    if more and snapshot_id is None:
        snapshot_id = s.snapshot(rows)
    return {
        "board": board_id, "entries": [page_entry(e) for e in rows[start:end]], "total_players": len(rows),
        "next_offset": end if more else None, "next_cursor": f"{snapshot_id}.{end}" if more else None,
        "period": period,
    }


def around(s, board_id, user_id, query):
    index, period = s.board_period(board_id, query)
    radius = bounded(query, "radius", 5, 0, 50)
    rows = s.standings(board_id, index)
    position = next((i for i, e in enumerate(rows) if e["id"] == user_id), None)
    if position is None:
        raise Reject(404, "user_not_on_board", f"player {user_id} is not on {board_id}")
    shown = rows[max(0, position - radius):position + radius + 1]
    return {"board": board_id, "entries": [page_entry(e) for e in shown], "total_players": len(rows),
            "next_offset": None, "next_cursor": None, "period": period}


def friends(s, board_id, query):
    index, period = s.board_period(board_id, query)
    wanted = set(parse_ids(query))
    rows = s.standings(board_id, index)
    return {"board": board_id, "entries": [page_entry(e) for e in rows if e["id"] in wanted],
            "total_players": len(rows), "period": period}


def create_board(s, body):
    body = body if isinstance(body, dict) else {}
    board_id = body.get("id")
    if not isinstance(board_id, str) or not BOARD_ID.match(board_id) or board_id in ("best", "total"):
        raise Reject(422, "invalid_id", "1..64 of [a-z0-9_-], not best or total")
    if board_id in s.boards:
        raise Reject(409, "board_exists", "taken")
    spec = {
        "id": board_id, "name": body.get("name", board_id), "order": body.get("order", "desc"),
        "operator": body.get("operator", "best"), "reset": body.get("reset"), "timezone": "UTC",
        "archive_periods": body.get("archive_periods", 10), "min_score": body.get("min_score", 0),
        "max_score": body.get("max_score", MAX_SCORE),
    }
    if spec["order"] not in ("asc", "desc"):
        raise Reject(422, "invalid_order", "asc or desc")
    if spec["operator"] not in ("best", "latest", "total") or (spec["operator"], spec["order"]) == ("total", "asc"):
        raise Reject(422, "invalid_operator", "best, latest, or total (desc only)")
    if not is_integer(spec["archive_periods"]) or not 0 <= spec["archive_periods"] <= 1000:
        raise Reject(422, "invalid_archive_periods", "0..1000")
    every = None
    if spec["reset"] is not None:
        matched = EVERY_N_SECONDS.match(str(spec["reset"]))
        every = int(matched.group(1)) if matched else 0
        if every < 1 or 60 % every:
            raise Reject(422, "invalid_reset", "this server knows only '*/N * * * * *' with N dividing 60")
    board = Board(spec, now_ms(), every)
    s.boards[board_id] = board
    return s.board_object(board)


def remove_post(s, post_id):
    post = s.posts.pop(post_id, None)
    if post is None:
        raise Reject(404, "score_not_found", f"no post {post_id}")
    user = s.users[post["user"]]
    user["posts"].remove(post_id)
    s.recount(user)
    return 204, None


def ban(s, user_id, banning):
    user = s.users.get(user_id)
    if user is None:
        raise Reject(404, "user_not_found", "no such player")
    if user["banned"] == banning:
        raise Reject(409, "already_banned" if banning else "not_banned", "nothing to change")
    user["banned"] = banning
    if banning:
        for token in [t for t, uid in s.sessions.items() if uid == user_id]:
            del s.sessions[token]
    return 200, {"user_id": user_id, "banned": banning}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed on the first line)")
    parser.add_argument("--admin-token")
    parser.add_argument("--fault", choices=["lowest-wins-highest-first", "dense-ranks", "live-steps-back"])
    args = parser.parse_args()
    Handler.store = Store(args.admin_token, args.fault)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

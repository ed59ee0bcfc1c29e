// The hiscore ranking page: boards with "load more" by cursor, around me,
// register / login / logout, posting a score with an Idempotency-Key, and
// profiles with history. No framework, no CDN: it works offline.
"use strict";

const PAGE = 10;
const state = { board: "best", cursor: null, me: null, pendingKey: null };
const $ = (id) => document.getElementById(id);

// What an API error means, in plain words.
const PLAIN = {
  invalid_credentials: "That login name and password do not match.",
  login_name_taken: "That login name is taken; pick another.",
  invalid_login_name: "Login names are 3 to 32 letters, digits, '_', '.' or '-'.",
  invalid_password: "Passwords are 8 to 72 characters.",
  invalid_display_name: "Display names are 1 to 32 characters.",
  invalid_score: "A score is a whole number from 0 to 1,000,000,000.",
  session_required: "Log in first.",
  invalid_session: "Your session has ended; log in again.",
  too_many_requests: "Slow down a little and try again.",
  database_unavailable: "The leaderboard is busy; try again in a moment.",
};

class ApiError extends Error {
  constructor(status, code, message) {
    super(PLAIN[code] || message || `Something went wrong (${status}).`);
    this.code = code;
  }
}

async function api(method, path, body, headers = {}) {
  const init = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (_) {
    throw new ApiError(0, "network", "The leaderboard cannot be reached. Check your connection.");
  }
  if (response.status === 204) return null;
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new ApiError(response.status, data.error && data.error.code, data.error && data.error.message);
  return data;
}

function say(id, text, isError = false) {
  $(id).textContent = text;
  $(id).classList.toggle("error", isError);
}

function avatar(image) {
  const span = document.createElement("span");
  span.className = "avatar";
  span.style.background = `hsl(${image * 36}, 55%, 45%)`;
  span.textContent = image;
  span.setAttribute("aria-hidden", "true");
  return span;
}

function entryRow(entry) {
  const li = document.createElement("li");
  li.className = "entry";
  li.dataset.rank = entry.rank;
  li.dataset.userId = entry.user.id;
  if (state.me && state.me.id === entry.user.id) li.classList.add("me");
  const rank = Object.assign(document.createElement("span"), { className: "rank", textContent: `#${entry.rank}` });
  const name = Object.assign(document.createElement("button"), { className: "name", textContent: entry.user.display_name });
  name.addEventListener("click", () => showProfile(entry.user.id));
  const score = Object.assign(document.createElement("span"), { className: "score", textContent: entry.score.toLocaleString() });
  li.append(rank, avatar(entry.user.image), name, score);
  return li;
}

function showPage(page, append) {
  if (!append) $("entries").replaceChildren();
  page.entries.forEach((entry) => $("entries").append(entryRow(entry)));
  $("summary").textContent = `${page.total_players.toLocaleString()} players on the board`;
  state.cursor = page.next_cursor;
  $("more").hidden = !state.cursor;
}

async function loadBoard(append) {
  say("board-message", "");
  const query = new URLSearchParams({ limit: PAGE });
  if (append && state.cursor) query.set("cursor", state.cursor);
  try {
    showPage(await api("GET", `/api/rankings/${state.board}?${query}`), append);
  } catch (error) {
    say("board-message", `Could not load the board: ${error.message}`, true);
  }
}

async function aroundMe() {
  if (!state.me) return;
  try {
    showPage(await api("GET", `/api/rankings/${state.board}/around/${state.me.id}?radius=5`), false);
  } catch (error) {
    const text = error.code === "user_not_on_board" ? "Post a score to get on the board." : error.message;
    say("board-message", text, true);
  }
}

async function showProfile(id) {
  try {
    const [user, history] = await Promise.all([api("GET", `/api/users/${id}`), api("GET", `/api/users/${id}/scores?limit=10`)]);
    $("profile").classList.remove("hidden");
    $("profile-name").textContent = user.display_name;
    $("profile-stats").textContent =
      `Best ${user.best_score.toLocaleString()} (rank ${user.best_rank ?? "–"}), ` +
      `total ${user.total_score.toLocaleString()} (rank ${user.total_rank ?? "–"}), ${user.play_count} plays`;
    $("profile-history").replaceChildren(
      ...history.scores.map((s) => Object.assign(document.createElement("li"), {
        textContent: `${s.score.toLocaleString()} — ${new Date(s.created_at).toLocaleString()}`,
      })),
    );
  } catch (error) {
    say("board-message", `Could not open the profile: ${error.message}`, true);
  }
}

function setMe(me) {
  state.me = me;
  $("logged-out").classList.toggle("hidden", !!me);
  $("logged-in").classList.toggle("hidden", !me);
  $("around").hidden = !me;
  if (me) $("whoami").textContent = `${me.display_name}: best ${me.best_score.toLocaleString()}, rank ${me.best_rank ?? "–"}`;
}

async function account(kind) {
  const body = { login_name: $("login-name").value, password: $("password").value };
  try {
    const data = kind === "register" ? await api("POST", "/api/users", body) : await api("POST", "/api/sessions", body);
    setMe(data.user);
    say("account-message", kind === "register" ? "Welcome! Post your first score." : "Welcome back.");
    $("password").value = "";
  } catch (error) {
    say("account-message", error.message, true);
  }
}

async function postScore(event) {
  event.preventDefault();
  const score = Number($("score").value);
  // One key per score the player means to post: a retry after a network
  // error reuses it, so the score counts once.
  state.pendingKey = state.pendingKey || crypto.randomUUID();
  try {
    const result = await api("POST", "/api/scores", { score }, { "Idempotency-Key": state.pendingKey });
    state.pendingKey = null;
    setMe(result.user);
    say("account-message", "");
    say("score-message", result.new_best ? `New best: ${score.toLocaleString()}!` : `Posted ${score.toLocaleString()}.`);
    loadBoard(false);
  } catch (error) {
    if (error.code !== "network") state.pendingKey = null;
    say("score-message", error.message, true);
  }
}

document.querySelectorAll("[role=tab]").forEach((tab) => tab.addEventListener("click", () => {
  document.querySelectorAll("[role=tab]").forEach((t) => t.setAttribute("aria-selected", String(t === tab)));
  state.board = tab.dataset.board;
  loadBoard(false);
}));
$("more").addEventListener("click", () => loadBoard(true));
$("around").addEventListener("click", aroundMe);
$("register").addEventListener("click", () => account("register"));
$("login").addEventListener("click", () => account("login"));
$("account-form").addEventListener("submit", (event) => { event.preventDefault(); account("login"); });
$("logout").addEventListener("click", async () => {
  try { await api("DELETE", "/api/sessions"); } catch (_) { /* the session is gone either way */ }
  setMe(null);
  say("account-message", "Logged out.");
});
$("score-form").addEventListener("submit", postScore);

api("GET", "/api/me").then(setMe, () => setMe(null));
loadBoard(false);

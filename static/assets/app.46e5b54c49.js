// The hiscore ranking page: every board (the built-ins and custom ones),
// their periods (step to earlier ones), a board's partitions (v4: pick
// one, post to one), "load more" by cursor, around me,
// register / login / logout, posting a score with an Idempotency-Key,
// profiles with history, and the player's own account settings (display
// name, password, deleting the account), and a league: the player's cohort
// with each player's zone. No framework, no CDN: it works offline.
"use strict";

const PAGE = 10;
const state = {
  boards: [],          // GET /api/boards
  board: null,         // the board shown (an entry of `boards`)
  period: null,        // the period index shown; null: the current one
  partition: null,     // the partition shown; null: the whole board
  cursor: null,
  me: null,
  pendingKey: null,
  loading: null,       // the AbortController of the page being loaded
  live: null,          // the EventSource of the first page shown, if any
  poll: null,          // the timer that polls instead where there is none
};
const $ = (id) => document.getElementById(id);

// What an API error means, in plain words.
const PLAIN = {
  invalid_credentials: "That login name and password do not match.",
  login_name_taken: "That login name is taken; pick another.",
  invalid_login_name: "Login names are 3 to 32 letters, digits, '_', '.' or '-'.",
  invalid_password: "Passwords are 8 to 72 characters.",
  invalid_display_name: "Display names are 1 to 32 characters.",
  session_required: "Log in first.",
  invalid_session: "Your session has ended; log in again.",
  too_many_requests: "Slow down a little and try again.",
  database_unavailable: "The leaderboard is busy; try again in a moment.",
  period_not_found: "That period is no longer kept.",
  banned: "This account is banned.",
  invalid_current_password: "Enter your current password to set a new one.",
  invalid_change: "Enter a new display name or password first.",
};

class ApiError extends Error {
  constructor(status, code, message) {
    super(PLAIN[code] || message || `Something went wrong (${status}).`);
    this.code = code;
  }
}

async function api(method, path, body, headers = {}, signal = undefined) {
  const init = { method, headers: { ...headers }, signal };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, "network", "The leaderboard cannot be reached. Check your connection.");
  }
  if (response.status === 204) return null;
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new ApiError(response.status, data.error && data.error.code, data.error && data.error.message);
  return data;
}

// A random Idempotency-Key. crypto.randomUUID exists only in secure
// contexts (https, localhost); on plain http at a LAN address it does not.
function newKey() {
  if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function say(id, text, isError = false) {
  $(id).textContent = text;
  $(id).classList.toggle("error", isError);
}

function when(timestamp) {
  return timestamp ? new Date(timestamp).toLocaleString() : "";
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
  // A board with tie-breakers: each subscore by its name, after the score.
  if (entry.subscores) {
    const names = (state.board && state.board.subscores) || [];
    const text = entry.subscores.map((value, i) => `${names[i] ? names[i].name : "sub"} ${value.toLocaleString()}`).join(" · ");
    score.append(" ", Object.assign(document.createElement("small"), { className: "subscores", textContent: text }));
  }
  // The share of the board at least as good as this entry (the contract's top_percent).
  const top = Object.assign(document.createElement("span"), { className: "top", textContent: `top ${entry.top_percent}%` });
  li.append(rank, avatar(entry.user.image), name, score, top);
  return li;
}

// The period line: which period, since when, until when, and the steps.
function showPeriod(period) {
  const board = state.board;
  const resets = board && board.reset;
  $("period").hidden = !resets;
  if (!resets) return;
  const current = board.period.index;
  const shown = period.index;
  const label = shown === current ? `Period ${shown} (current)` : `Period ${shown} (ended)`;
  const range = period.end ? `${when(period.start)} – ${when(period.end)}` : `since ${when(period.start)}`;
  $("period-label").textContent = `${label}: ${range}`;
  $("period-label").dataset.index = shown;
  $("period-earlier").disabled = shown <= Math.max(0, current - board.archive_periods);
  $("period-later").disabled = shown >= current;
}

function showPage(page, append) {
  // The current period moves on by itself on a resetting board.
  if (state.period === null && state.board) state.board.period = page.period;
  if (!append) $("entries").replaceChildren();
  page.entries.forEach((entry) => $("entries").append(entryRow(entry)));
  const order = state.board && state.board.order === "asc" ? " · lowest first" : "";
  const where = page.partition ? `in ${page.partition}` : "on the board";
  $("summary").textContent = `${page.total_players.toLocaleString()} players ${where}${order}`;
  showPeriod(page.period);
  state.cursor = page.next_cursor;
  $("more").hidden = !state.cursor;
}

// Loads the first page of the board shown (or the next one, `append`). A
// newer load cancels the one in flight, so a quick switch of boards never
// shows the older board; "load more" is disabled until its page is in.
async function loadBoard(append) {
  if (!state.board) return;
  if (state.loading) state.loading.abort();
  const loading = new AbortController();
  state.loading = loading;
  $("more").disabled = true;
  say("board-message", "");
  const query = new URLSearchParams({ limit: PAGE });
  if (state.period !== null) query.set("period", state.period);
  if (state.partition !== null) query.set("partition", state.partition);
  if (append && state.cursor) query.set("cursor", state.cursor);
  try {
    const page = await api("GET", `/api/rankings/${state.board.id}?${query}`, undefined, {}, loading.signal);
    if (state.loading === loading) {
      showPage(page, append);
      // Only the first page follows the board: a list grown by "load more"
      // would be cut back to it.
      if (append) stopLive(); else startLive(`/api/rankings/${state.board.id}/live?${query}`, () => loadBoard(false));
    }
  } catch (error) {
    if (error.name !== "AbortError") say("board-message", `Could not load the board: ${error.message}`, true);
  } finally {
    if (state.loading === loading) {
      state.loading = null;
      $("more").disabled = false;
    }
  }
}

// The first page of the board shown, and the window around the player,
// update themselves: a live page (server-sent events: a new page within a
// second of any post), or, without EventSource or when the server turned
// the stream away (429, 503), a poll every few seconds.
const POLL_MS = 5000;

function stopLive() {
  if (state.live) state.live.close();
  clearInterval(state.poll);
  state.live = null;
  state.poll = null;
}

// Follows the live page at `path` (its first page is already shown);
// `reload` shows it again when polling instead.
function startLive(path, reload) {
  stopLive();
  const poll = () => {
    state.poll = setInterval(() => { if (!state.loading) reload(); }, POLL_MS);
  };
  if (!window.EventSource) return poll();
  const source = new EventSource(path);
  state.live = source;
  source.addEventListener("page", (event) => {
    if (state.live === source && !state.loading) showPage(JSON.parse(event.data), false);
  });
  // The answer went away (the board deleted, the player banned): say why.
  source.addEventListener("ended", (event) => {
    if (state.live !== source) return;
    stopLive();
    say("board-message", JSON.parse(event.data).error.message, true);
  });
  // A lost connection is retried by the browser itself; a closed source is
  // one the server refused.
  source.addEventListener("error", () => {
    if (state.live === source && source.readyState === EventSource.CLOSED) {
      state.live = null;
      poll();
    }
  });
}

// The window around the player on the board shown, live like the board.
async function aroundMe() {
  if (!state.me || !state.board) return;
  stopLive();
  const query = new URLSearchParams({ radius: 5 });
  if (state.period !== null) query.set("period", state.period);
  if (state.partition !== null) query.set("partition", state.partition);
  const path = `/api/rankings/${state.board.id}/around/${state.me.id}`;
  const show = async () => showPage(await api("GET", `${path}?${query}`), false);
  try {
    await show();
    startLive(`${path}/live?${query}`, () => show().catch(() => {}));
  } catch (error) {
    const text = error.code === "user_not_on_board" ? "Post a score to get on this board." : error.message;
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
        textContent: `${s.score.toLocaleString()} — ${when(s.created_at)}`,
      })),
    );
    $("profile").scrollIntoView({ behavior: "smooth", block: "start" });
    $("profile").focus({ preventScroll: true });
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
  $("league-form").classList.toggle("hidden", !me);
  showLeague();
}

async function account(kind) {
  const body = { login_name: $("login-name").value, password: $("password").value };
  if (kind === "register" && $("display-name").value.trim()) body.display_name = $("display-name").value.trim();
  try {
    const data = kind === "register" ? await api("POST", "/api/users", body) : await api("POST", "/api/sessions", body);
    setMe(data.user);
    say("account-message", kind === "register" ? "Welcome! Post your first score." : "Welcome back.");
    $("password").value = "";
  } catch (error) {
    say("account-message", error.message, true);
  }
}

// Posts to the board shown: the built-ins take their scores at /api/scores.
async function postScore(event) {
  event.preventDefault();
  const score = Number($("score").value);
  const board = state.board;
  const custom = board && board.id !== "best" && board.id !== "total";
  const body = { score };
  const subscores = [...document.querySelectorAll("#subscore-inputs input")].map((input) => Number(input.value));
  if (custom && subscores.length > 0) body.subscores = subscores;
  // A partitioned board: the partition goes in the metadata field it is named by.
  const partition = $("partition-input").value.trim();
  if (custom && board.partition_by && partition) body.metadata = { [board.partition_by]: partition };
  // One key per score the player means to post: a retry after a network
  // error reuses it, so the score counts once.
  state.pendingKey = state.pendingKey || newKey();
  try {
    const path = custom ? `/api/boards/${board.id}/scores` : "/api/scores";
    const result = await api("POST", path, body, { "Idempotency-Key": state.pendingKey });
    state.pendingKey = null;
    say("account-message", "");
    if (custom) {
      const there = result.partition && result.partition.entry
        ? ` In ${result.partition.value}: #${result.partition.entry.rank}.` : "";
      say("score-message", (result.improved ? `Posted ${score.toLocaleString()}: now #${result.entry.rank} (top ${result.entry.top_percent}%).` : `Posted ${score.toLocaleString()}.`) + there);
      loadPartitions();
    } else {
      setMe(result.user);
      say("score-message", result.new_best ? `New best: ${score.toLocaleString()}!` : `Posted ${score.toLocaleString()}.`);
    }
    state.period = null;
    loadBoard(false);
  } catch (error) {
    if (error.code !== "network") state.pendingKey = null;
    say("score-message", error.message, true);
  }
}

// Shows a board by id: its current period, from the top.
function selectBoard(id) {
  const board = state.boards.find((b) => b.id === id);
  if (!board) return;
  state.board = board;
  state.period = null;
  state.partition = null;
  state.cursor = null;
  document.querySelectorAll("[role=tab]").forEach((tab) => {
    const selected = tab.dataset.board === id;
    tab.setAttribute("aria-selected", String(selected));
    tab.tabIndex = selected ? 0 : -1;
  });
  $("board-picker").value = id;
  $("score").min = String(board.min_score);
  $("score").max = String(board.max_score);
  $("score-label").textContent = board.id === "best" || board.id === "total" ? "Score" : `Score on ${board.name}`;
  // One input per tie-breaker of the board (v4 subscores), by its name.
  $("subscore-inputs").replaceChildren(...(board.subscores || []).map((subscore) => {
    const input = Object.assign(document.createElement("input"), { type: "number", step: "1", min: "0", required: true });
    input.dataset.subscore = subscore.name;
    const label = Object.assign(document.createElement("label"), { textContent: `${subscore.name} (${subscore.order === "asc" ? "lower wins ties" : "higher wins ties"}) ` });
    label.append(input);
    return label;
  }));
  $("partition-input-field").hidden = !board.partition_by;
  $("partition-input-label").textContent = board.partition_by || "Partition";
  loadPartitions();
  loadBoard(false);
}

// The picker of the board's partitions with entries in the period shown
// (hidden on boards without `partition_by`): "Whole board" first.
async function loadPartitions() {
  const board = state.board;
  $("partition-field").hidden = !(board && board.partition_by);
  if (!board || !board.partition_by) return;
  const query = new URLSearchParams({ limit: 100 });
  if (state.period !== null) query.set("period", state.period);
  let values = [];
  try {
    values = (await api("GET", `/api/boards/${board.id}/partitions?${query}`)).partitions.map((p) => p.value);
  } catch (_) { /* the whole board still shows */ }
  if (state.board !== board) return;
  if (state.partition !== null && !values.includes(state.partition)) values.push(state.partition);
  const whole = Object.assign(document.createElement("option"), { value: "", textContent: "Whole board" });
  $("partition-picker").replaceChildren(whole, ...values.map((value) =>
    Object.assign(document.createElement("option"), { value, textContent: value })));
  $("partition-picker").value = state.partition ?? "";
}

function selectPartition(value) {
  state.partition = value || null;
  state.cursor = null;
  if (value) $("partition-input").value = value;
  loadBoard(false);
}

function stepPeriod(delta) {
  const shown = Number($("period-label").dataset.index);
  const next = shown + delta;
  state.period = next >= state.board.period.index ? null : next;
  state.cursor = null;
  loadPartitions();
  loadBoard(false);
}

async function loadBoards() {
  try {
    state.boards = (await api("GET", "/api/boards")).boards;
  } catch (error) {
    say("board-message", `Could not load the boards: ${error.message}`, true);
    state.boards = [{ id: "best", name: "Best score", order: "desc", reset: null, min_score: 0, max_score: 1000000000, period: { index: 0 } }];
  }
  $("board-picker").replaceChildren(...state.boards.map((board) =>
    Object.assign(document.createElement("option"), { value: board.id, textContent: board.name })));
  selectBoard(state.board ? state.board.id : "best");
}

const tabs = [...document.querySelectorAll("[role=tab]")];
tabs.forEach((tab, index) => {
  tab.addEventListener("click", () => selectBoard(tab.dataset.board));
  // Arrow keys move between tabs, as the ARIA tabs pattern has it.
  tab.addEventListener("keydown", (event) => {
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    if (!step) return;
    const next = tabs[(index + step + tabs.length) % tabs.length];
    next.focus();
    selectBoard(next.dataset.board);
  });
});
$("board-picker").addEventListener("change", (event) => selectBoard(event.target.value));
$("partition-picker").addEventListener("change", (event) => selectPartition(event.target.value));
$("period-earlier").addEventListener("click", () => stepPeriod(-1));
$("period-later").addEventListener("click", () => stepPeriod(1));
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
loadBoards();
loadLeagues();

// The player's own account: a new display name, a new password (which ends
// their other sessions), or deleting the account after a confirmation.
async function changeAccount(body, done) {
  try {
    setMe(await api("PATCH", "/api/me", body));
    say("settings-message", done);
    loadBoard(false);
    return true;
  } catch (error) {
    say("settings-message", error.message, true);
    return false;
  }
}

$("change-name").addEventListener("click", () =>
  changeAccount({ display_name: $("new-display-name").value.trim() }, "Your display name has changed."));

$("change-password").addEventListener("click", async () => {
  const body = { password: $("new-password").value, current_password: $("current-password").value };
  if (await changeAccount(body, "Password changed. Your other sessions have ended.")) {
    $("current-password").value = "";
    $("new-password").value = "";
  }
});

$("delete-account").addEventListener("click", () => {
  $("delete-confirm").hidden = false;
  say("settings-message", "This erases your account, every score and every entry for good. Press “Yes, delete everything” to go on.", true);
});

$("delete-confirm").addEventListener("click", async () => {
  try {
    await api("DELETE", "/api/me", { password: $("delete-password").value });
    $("delete-password").value = "";
    $("delete-confirm").hidden = true;
    $("settings").open = false;
    say("settings-message", "");
    setMe(null);
    say("account-message", "Your account has been deleted.");
    loadBoard(false);
  } catch (error) {
    say("settings-message", error.message, true);
  }
});

// Leagues: the logged-in player's cohort in the chosen league, ranked,
// each row with its zone (promote, demote, stay: where it would move if
// the period ended now), and where the player stands.
const ZONE = { promote: "promotion", demote: "demotion", stay: "safe" };

async function loadLeagues() {
  let leagues = [];
  try {
    leagues = (await api("GET", "/api/leagues")).leagues;
  } catch (_) {
    return; // a server without leagues: the section stays hidden
  }
  $("league-section").hidden = leagues.length === 0;
  $("league-picker").replaceChildren(...leagues.map((league) =>
    Object.assign(document.createElement("option"), { value: league.id, textContent: league.name })));
  showLeague();
}

async function showLeague() {
  const id = $("league-picker").value;
  $("league-entries").replaceChildren();
  delete $("league-summary").dataset.zone;
  if (!id) return;
  if (!state.me) {
    $("league-summary").textContent = "Log in to see your cohort.";
    return;
  }
  try {
    const member = await api("GET", `/api/leagues/${id}/members/${state.me.id}`).catch((error) => {
      if (error.code === "user_not_found") return null;
      throw error;
    });
    if (!member || !member.cohort) {
      const tier = member ? `You play in ${member.tier.name}. ` : "";
      $("league-summary").textContent = `${tier}Post a score to the league to be placed in a cohort.`;
      return;
    }
    const cohort = await api("GET", `/api/leagues/${id}/cohorts/${member.cohort}`);
    const zone = member.entry ? member.entry.zone : "stay";
    $("league-summary").textContent =
      `${member.tier.name}, a cohort of ${cohort.total_players}: you are in the ${ZONE[zone]} zone.`;
    $("league-summary").dataset.zone = zone;
    $("league-entries").replaceChildren(...cohort.entries.map((entry) => {
      const li = entryRow(entry);
      li.dataset.zone = entry.zone;
      li.classList.add(`zone-${entry.zone}`);
      return li;
    }));
    say("league-message", "");
  } catch (error) {
    say("league-message", `Could not load the league: ${error.message}`, true);
  }
}

$("league-picker").addEventListener("change", showLeague);
$("league-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const id = $("league-picker").value;
  try {
    const answer = await api("POST", `/api/leagues/${id}/scores`, { score: Number($("league-score").value) },
      { "Idempotency-Key": newKey() });
    say("league-message", `Posted in ${answer.tier.name}.`);
    showLeague();
  } catch (error) {
    say("league-message", error.message, true);
  }
});

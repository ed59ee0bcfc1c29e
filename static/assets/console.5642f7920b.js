// The hiscore operator's console: boards and leagues (create, change,
// delete; periods, partitions, grants, exports), players (find, posts,
// remove, ban, unban, rename, rewards), the held queue, webhooks with
// their deliveries, keys and the audit log. Every action is a call of the
// documented API with the signed-in token; the server decides what the
// token's role may do. No framework, no build step.
//
// Two rules hold throughout: the token lives in memory and sessionStorage
// only (gone with the tab), and every stored string reaches the page as
// text (`h` below never parses HTML).
"use strict";

const TOKEN_KEY = "hiscore-console-token";
const state = { token: null, role: null, boards: [], auditBefore: null, busy: 0 };
const $ = (id) => document.getElementById(id);

// An element with properties, attributes (`attrs`), listeners (`on`) and
// children (strings become text nodes).
function h(tag, props = {}, ...children) {
  const { attrs = {}, on = {}, ...rest } = props;
  const element = Object.assign(document.createElement(tag), rest);
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, value);
  for (const [event, listener] of Object.entries(on)) element.addEventListener(event, listener);
  element.append(...children.filter((child) => child !== null && child !== undefined));
  return element;
}

function say(text, isError = false) {
  $("message").textContent = text;
  $("message").classList.toggle("error", isError);
}

// What the server answered, in an operator's words.
const PLAIN = {
  forbidden_for_role: "Refused: this needs a higher role than yours.",
  invalid_admin_token: "That token or key is not valid.",
  admin_token_required: "Sign in first.",
  not_found: "The API answers only from allowed addresses (see nginx's ADMIN_ALLOW).",
};

class ApiError extends Error {
  constructor(status, code, message) {
    super(`${PLAIN[code] || message || `The request failed (${status}).`}${code ? ` [${code}]` : ""}`);
    this.code = code;
  }
}

async function send(method, path, body) {
  const init = { method, headers: { Authorization: `Bearer ${state.token}` } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new ApiError(0, "network", "hiscore cannot be reached.");
  }
  if (!response.ok) {
    const data = await response.json().catch(() => ({}));
    throw new ApiError(response.status, data.error && data.error.code, data.error && data.error.message);
  }
  return response;
}

async function api(method, path, body) {
  const response = await send(method, path, body);
  return response.status === 204 ? null : response.json();
}

// Runs an action from a button or form: its outcome goes to the message
// line; the page is marked busy (aria-busy) until every action ends.
async function act(action, done) {
  state.busy += 1;
  document.body.setAttribute("aria-busy", "true");
  try {
    const result = await action();
    if (done) say(typeof done === "function" ? done(result) : done);
    return result;
  } catch (error) {
    say(error.message, true);
    return undefined;
  } finally {
    state.busy -= 1;
    if (state.busy === 0) document.body.removeAttribute("aria-busy");
  }
}

const enc = encodeURIComponent;
const bands = (rewards) => (rewards.length === 0 ? "" : rewards.length === 1 ? "1 band" : `${rewards.length} bands`);
const text = (value) => (value === null || value === undefined ? "" : typeof value === "object" ? JSON.stringify(value) : String(value));

function table(columns, rows, id) {
  const head = h("tr", {}, ...columns.map(([title]) => h("th", { scope: "col" }, title)));
  const body = rows.map((row) =>
    h("tr", {}, ...columns.map(([, cell]) => {
      const value = cell(row);
      if (value instanceof Node) return h("td", { className: "actions" }, value);
      // JSON (details, rewards, metadata) may be long: it wraps anywhere.
      return h("td", value !== null && typeof value === "object" ? { className: "long" } : {}, text(value));
    })));
  return h("table", id ? { id } : {}, h("thead", {}, head), h("tbody", {}, ...body));
}

function buttons(...list) {
  const span = h("span");
  span.append(...list);
  return span;
}

function button(label, onClick, props = {}) {
  return h("button", { type: "button", ...props, on: { click: onClick } }, label);
}

// Every field of an object, as the API shows it.
function fieldList(object) {
  const dl = h("dl", { className: "fields" });
  for (const [name, value] of Object.entries(object)) dl.append(h("dt", {}, name), h("dd", {}, h("code", {}, text(value))));
  return dl;
}

// --- Definition forms (boards and leagues) --------------------------------
// Kinds: text, int, number, bool, choice, list (comma-separated), json.
// `create`: offered at creation; `change`: taken by PATCH.
const BOARD_FIELDS = [
  { name: "id", kind: "text", create: true, hint: "a-z, 0-9, _ and -" },
  { name: "name", kind: "text", create: true, change: true },
  { name: "order", kind: "choice", choices: ["desc", "asc"], create: true },
  { name: "operator", kind: "choice", choices: ["best", "latest", "total"], create: true },
  { name: "reset", kind: "text", create: true, hint: "cron; empty: never" },
  { name: "timezone", kind: "text", create: true, hint: "IANA, default UTC" },
  { name: "archive_periods", kind: "int", create: true },
  { name: "min_score", kind: "int", create: true },
  { name: "max_score", kind: "int", create: true },
  { name: "min_interval_ms", kind: "int", create: true, change: true },
  { name: "writers", kind: "choice", choices: ["players", "server"], create: true, change: true },
  { name: "hold_beyond", kind: "int", create: true, change: true },
  { name: "hold_jump", kind: "number", create: true, change: true },
  { name: "feeds", kind: "list", create: true, change: true, hint: "board ids, comma-separated" },
  { name: "subscores", kind: "json", create: true, hint: '[{"name": "time_ms", "order": "asc"}]' },
  { name: "partition_by", kind: "text", create: true, hint: "a metadata field" },
  { name: "max_partitions", kind: "int", create: true },
  { name: "partition_values", kind: "list", create: true, hint: "comma-separated; empty: any" },
  { name: "rewards", kind: "json", create: true, change: true, hint: '[{"ranks": [1, 3], "reward": {"gems": 100}}]' },
  { name: "starts_at", kind: "text", create: true, change: true, hint: "RFC 3339" },
  { name: "ends_at", kind: "text", create: true, change: true, hint: "RFC 3339" },
  { name: "join_required", kind: "bool", create: true, change: true },
  { name: "max_entrants", kind: "int", create: true, change: true },
  { name: "max_attempts", kind: "int", create: true, change: true },
];
const LEAGUE_FIELDS = [
  { name: "id", kind: "text", create: true },
  { name: "name", kind: "text", create: true, change: true },
  { name: "tiers", kind: "list", create: true, hint: "lowest first, comma-separated" },
  { name: "cohort_size", kind: "int", create: true },
  { name: "promote", kind: "int", create: true },
  { name: "demote", kind: "int", create: true },
  { name: "order", kind: "choice", choices: ["desc", "asc"], create: true },
  { name: "operator", kind: "choice", choices: ["best", "latest", "total"], create: true },
  { name: "min_score", kind: "int", create: true },
  { name: "max_score", kind: "int", create: true },
  { name: "reset", kind: "text", create: true, hint: "cron" },
  { name: "timezone", kind: "text", create: true },
  { name: "archive_periods", kind: "int", create: true },
  { name: "rewards", kind: "json", create: true, change: true, hint: "bands, per cohort" },
];

function fieldText(field, value) {
  if (value === null || value === undefined) return "";
  if (field.kind === "list") return value.join(", ");
  if (field.kind === "json") return JSON.stringify(value);
  return String(value);
}

function fieldValue(field, raw) {
  const trimmed = raw.trim();
  if (trimmed === "") return null;
  switch (field.kind) {
    case "int":
    case "number":
      // Not a number: sent as written, for the server's own 422.
      return Number.isFinite(Number(trimmed)) ? Number(trimmed) : trimmed;
    case "bool":
      return trimmed === "true";
    case "list":
      return trimmed.split(",").map((item) => item.trim()).filter((item) => item !== "");
    case "json":
      try {
        return JSON.parse(trimmed);
      } catch (error) {
        throw new Error(`${field.name}: not valid JSON (${error.message})`);
      }
    default:
      return trimmed;
  }
}

// Boards and leagues: what differs between their definition forms.
const DEFINITIONS = {
  board: { fields: BOARD_FIELDS, path: "/api/admin/boards", list: () => showBoards(), open: (id) => openBoard(id) },
  league: { fields: LEAGUE_FIELDS, path: "/api/admin/leagues", list: () => showLeagues(), open: (id) => openLeague(id) },
};

// Fills `form` with the fields a board or league (`kind`) takes in `mode`,
// "create" or "change" (of `current`). On submit it sends, at creation,
// the fields filled in (POST), on change the fields edited (PATCH; an
// emptied one as null, which clears it); then shows the list and the
// board or league again.
function definitionForm(form, kind, mode, current = {}) {
  const { fields, path, list, open } = DEFINITIONS[kind];
  const creating = mode === "create";
  form.replaceChildren();
  const inputs = [];
  for (const field of fields.filter((f) => f[mode])) {
    const id = `${creating ? "new" : "edit"}-${kind}-${field.name}`;
    const initial = fieldText(field, current[field.name]);
    let input;
    if (field.kind === "choice" || field.kind === "bool") {
      const choices = field.kind === "bool" ? ["false", "true"] : field.choices;
      input = h("select", { id }, h("option", { value: "" }, "(default)"), ...choices.map((c) => h("option", { value: c }, c)));
    } else if (field.kind === "json") {
      input = h("textarea", { id, rows: 2, placeholder: field.hint || "" });
    } else {
      input = h("input", { id, placeholder: field.hint || "" });
    }
    input.value = initial;
    inputs.push({ field, input, initial });
    form.append(h("label", {}, field.name, input));
  }
  const body = () => {
    const sent = {};
    for (const { field, input, initial } of inputs) {
      if (creating ? input.value.trim() === "" : input.value === initial) continue;
      sent[field.name] = fieldValue(field, input.value);
    }
    return sent;
  };
  form.append(h("button", { type: "submit", id: `${kind}-${creating ? "create" : "save"}`, className: "needs-admin" },
    creating ? `Create ${kind}` : "Save changes"));
  form.onsubmit = (event) => {
    event.preventDefault();
    act(async () => {
      const saved = creating ? await api("POST", path, body()) : await api("PATCH", `${path}/${enc(current.id)}`, body());
      await list();
      await open(saved.id);
      return saved;
    }, (saved) => `${kind === "board" ? "Board" : "League"} ${saved.id} ${creating ? "created" : "changed"}.`);
  };
}

// --- Exports: fetched with the header, saved from memory ------------------
async function exportPeriod(board, period, partition, format) {
  const query = new URLSearchParams({ period, format });
  if (partition) query.set("partition", partition);
  const response = await send("GET", `/api/admin/boards/${enc(board)}/export?${query}`);
  const blob = await response.blob();
  const disposition = response.headers.get("Content-Disposition") || "";
  const match = disposition.match(/filename="([^"]+)"/);
  const name = match ? match[1] : `${board}-period-${period}.${format}`;
  const url = URL.createObjectURL(blob);
  const link = h("a", { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
  // The first lines, so the operator sees what was saved.
  const head = (await blob.slice(0, 4096).text()).replace(/\r?\n$/, "").split(/\r?\n/).slice(0, 11).join("\n");
  $("export-preview").replaceChildren(h("p", {}, `${name}: ${blob.size.toLocaleString()} bytes`), h("pre", {}, head));
  $("export-preview").dataset.name = name;
  return name;
}

// --- Boards ---------------------------------------------------------------
async function showBoards() {
  const { boards } = await api("GET", "/api/boards");
  state.boards = boards;
  $("boards-list").replaceChildren(table([
    ["id", (b) => b.id],
    ["name", (b) => b.name],
    ["order", (b) => `${b.order} · ${b.operator}`],
    ["reset", (b) => b.reset],
    ["feeds", (b) => b.feeds.join(", ")],
    ["partition by", (b) => b.partition_by],
    ["subscores", (b) => b.subscores.map((s) => `${s.name} ${s.order}`).join(", ")],
    ["rewards", (b) => bands(b.rewards)],
    ["", (b) => button("Open", () => act(() => openBoard(b.id)), { id: `open-board-${b.id}` })],
  ], boards, "boards-table"));
  definitionForm($("board-form"), "board", "create");
}

async function openBoard(id) {
  const board = await api("GET", `/api/boards/${enc(id)}`);
  const current = { ...board, ...board.tournament };
  const detail = $("board-detail");
  detail.replaceChildren(h("h3", { id: "board-title", tabIndex: -1 }, `Board ${board.id}: ${board.name}`), fieldList(board));
  const builtin = board.id === "best" || board.id === "total";
  const form = h("form", { id: "board-change", className: "fields" });
  definitionForm(form, "board", "change", current);
  detail.append(h("h3", {}, "Change"), form);
  if (!builtin) {
    const confirm = button("Yes, delete it and its posts", () => act(async () => {
      await api("DELETE", `/api/admin/boards/${enc(board.id)}`);
      $("board-detail").replaceChildren();
      await showBoards();
    }, `Board ${board.id} deleted.`), { id: "board-delete-confirm", className: "danger", hidden: true });
    detail.append(button("Delete board…", () => { confirm.hidden = false; confirm.focus(); },
      { id: "board-delete", className: "needs-admin" }), " ", confirm);
  }
  detail.append(h("h3", {}, "Periods"), h("div", { id: "periods" }), h("div", { id: "period-detail" }),
    h("div", { id: "export-preview", attrs: { "aria-live": "polite" } }));
  if (builtin) {
    $("periods").append(h("p", {}, "The built-in boards have one period, 0."),
      buttons(button("Export CSV", () => act(() => exportPeriod(board.id, 0, null, "csv"), (n) => `Exported ${n}.`))));
  } else {
    await showPeriods(board);
  }
  $("board-title").focus();
}

// A board's periods, newest first, 20 at a time (`before`: the next page).
async function showPeriods(board, before = null) {
  const query = before === null ? "" : `&before=${before}`;
  const { periods, next_before: next } = await api("GET", `/api/boards/${enc(board.id)}/periods?limit=20${query}`);
  const rows = table([
    ["period", (p) => p.index],
    ["start", (p) => p.start],
    ["end", (p) => p.end],
    ["players", (p) => p.players],
    ["", (p) => buttons(
      button("Grants", () => act(() => showGrants(`/api/admin/boards/${enc(board.id)}/rewards`, p.index)), { id: `grants-${p.index}` }),
      button("Export CSV", () => act(() => exportPeriod(board.id, p.index, null, "csv"), (n) => `Exported ${n}.`), { id: `export-csv-${p.index}` }),
      button("Export NDJSON", () => act(() => exportPeriod(board.id, p.index, null, "ndjson"), (n) => `Exported ${n}.`)),
      board.partition_by ? button("Partitions", () => act(() => showPartitions(board, p.index)), { id: `partitions-${p.index}` }) : null,
    )],
  ], periods, before === null ? "periods-table" : null);
  if (before === null) $("periods").replaceChildren(rows); else $("periods").querySelector("button.earlier").replaceWith(rows);
  if (next !== null) $("periods").append(button("Earlier periods", () => act(() => showPeriods(board, next)), { className: "earlier" }));
}

async function showGrants(path, period) {
  const { rewards } = await api("GET", `${path}?period=${enc(period)}&limit=100`);
  $("period-detail").replaceChildren(h("h3", {}, `Grants of period ${period}`), rewards.length
    ? table([
      ["player", (r) => r.user_id],
      ["rank", (r) => r.rank],
      ["tier · cohort", (r) => (r.tier !== undefined ? `${text(r.tier)} · ${r.cohort}` : "")],
      ["reward", (r) => r.reward],
      ["granted", (r) => r.granted_at],
      ["claimed", (r) => r.claimed_at],
    ], rewards, "grants-table")
    : h("p", { id: "grants-table" }, "No grants in this period."));
}

async function showPartitions(board, period) {
  const { partitions } = await api("GET", `/api/boards/${enc(board.id)}/partitions?period=${period}&limit=100`);
  $("period-detail").replaceChildren(h("h3", {}, `Partitions of period ${period}`), table([
    ["partition", (p) => p.value],
    ["players", (p) => p.players],
    ["", (p) => button("Export CSV", () => act(() => exportPeriod(board.id, period, p.value, "csv"), (n) => `Exported ${n}.`),
      { id: `export-partition-${p.value}` })],
  ], partitions, "partitions-table"));
}

// --- Leagues --------------------------------------------------------------
async function showLeagues() {
  const { leagues } = await api("GET", "/api/leagues");
  $("leagues-list").replaceChildren(table([
    ["id", (l) => l.id],
    ["name", (l) => l.name],
    ["tiers", (l) => l.tiers.join(" < ")],
    ["cohort", (l) => `${l.cohort_size} (up ${l.promote}, down ${l.demote})`],
    ["reset", (l) => l.reset],
    ["rewards", (l) => bands(l.rewards)],
    ["", (l) => button("Open", () => act(() => openLeague(l.id)), { id: `open-league-${l.id}` })],
  ], leagues, "leagues-table"));
  definitionForm($("league-form"), "league", "create");
}

async function openLeague(id) {
  const league = await api("GET", `/api/leagues/${enc(id)}`);
  const detail = $("league-detail");
  detail.replaceChildren(h("h3", { id: "league-title", tabIndex: -1 }, `League ${league.id}: ${league.name}`), fieldList(league));
  const form = h("form", { className: "fields" });
  definitionForm(form, "league", "change", league);
  const confirm = button("Yes, delete it", () => act(async () => {
    await api("DELETE", `/api/admin/leagues/${enc(league.id)}`);
    detail.replaceChildren();
    await showLeagues();
  }, `League ${league.id} deleted.`), { className: "danger", hidden: true });
  const period = h("input", { type: "number", min: 0, value: Math.max(0, league.period.index - 1) });
  detail.append(h("h3", {}, "Change"), form,
    button("Delete league…", () => { confirm.hidden = false; confirm.focus(); }, { className: "needs-admin" }), " ", confirm,
    h("h3", {}, "Grants"),
    h("form", { on: { submit: (event) => { event.preventDefault(); act(() => showGrants(`/api/admin/leagues/${enc(league.id)}/rewards`, period.value)); } } },
      h("label", {}, "Period", period), h("button", { type: "submit" }, "Show grants")),
    h("div", { id: "period-detail" }));
  $("league-title").focus();
}

// --- Players --------------------------------------------------------------
async function findPlayers(query) {
  const { users } = await api("GET", `/api/admin/users?q=${enc(query)}&limit=50`);
  $("players-list").replaceChildren(table([
    ["id", (u) => u.id],
    ["login", (u) => u.login_name],
    ["display name", (u) => u.display_name],
    ["best", (u) => u.best_score],
    ["total", (u) => u.total_score],
    ["banned", (u) => u.banned_at],
    ["", (u) => button("Open", () => act(() => openPlayer(u.id)), { id: `open-player-${u.id}` })],
  ], users, "players-table"));
  return users.length;
}

async function openPlayer(id) {
  const { users } = await api("GET", `/api/admin/users?q=${id}&limit=100`);
  const player = users.find((u) => u.id === id);
  if (!player) throw new Error(`Player ${id} is gone.`);
  const detail = $("player-detail");
  const name = h("input", { id: "rename-input", maxLength: 32, value: player.display_name });
  const reason = h("input", { id: "ban-reason", maxLength: 500, placeholder: "why" });
  const reopen = () => openPlayer(id);
  detail.replaceChildren(
    h("h3", { id: "player-title", tabIndex: -1, className: player.banned_at ? "banned" : "" },
      `Player ${player.id}: ${player.display_name}${player.banned_at ? " (banned)" : ""}`),
    fieldList(player),
    h("form", { on: { submit: (event) => { event.preventDefault(); act(async () => { await api("PATCH", `/api/admin/users/${id}`, { display_name: name.value }); await reopen(); }, "Renamed."); } } },
      h("label", {}, "Display name", name), h("button", { type: "submit", id: "rename", className: "needs-moderator" }, "Rename")),
    player.banned_at
      ? button("Unban", () => act(async () => { await api("DELETE", `/api/admin/users/${id}/ban`); await reopen(); }, "Unbanned."),
        { id: "unban", className: "needs-moderator" })
      : h("form", { on: { submit: (event) => { event.preventDefault(); act(async () => { await api("POST", `/api/admin/users/${id}/ban`, { reason: reason.value }); await reopen(); }, "Banned."); } } },
        h("label", {}, "Reason", reason), h("button", { type: "submit", id: "ban", className: "needs-moderator" }, "Ban")),
  );
  const picker = h("select", { id: "posts-board", on: { change: () => act(() => showPosts(player, picker.value)) } },
    ...state.boards.filter((b) => b.id !== "total").map((b) => h("option", { value: b.id }, b.id === "best" ? "best and total (/api/scores)" : b.id)));
  detail.append(h("h3", {}, "Posts"), h("label", {}, "Board", picker), h("div", { id: "posts" }),
    h("h3", {}, "Rewards"), h("div", { id: "player-rewards" }));
  $("player-title").focus();
  if (player.banned_at) {
    $("posts").append(h("p", {}, "A banned player's posts are hidden until they are unbanned."));
  } else {
    await showPosts(player, picker.value);
  }
  await showPlayerRewards(id);
}

async function showPosts(player, board) {
  const custom = board !== "best";
  const { scores } = await api("GET", `/api/users/${player.id}/scores?limit=100${custom ? `&board=${enc(board)}` : ""}`);
  const remove = (post) => act(async () => {
    await api("DELETE", custom ? `/api/admin/boards/${enc(board)}/scores/${post.id}` : `/api/admin/scores/${post.id}`);
    await showPosts(player, board);
  }, `Post ${post.id} removed.`);
  $("posts").replaceChildren(table([
    ["post", (p) => p.id],
    ["score", (p) => p.score],
    ["subscores", (p) => p.subscores],
    ["at", (p) => p.created_at],
    ["period", (p) => (p.period ? p.period.index : "")],
    ["status", (p) => p.status],
    ["via", (p) => p.via],
    ["metadata", (p) => p.metadata],
    ["", (p) => button("Remove", () => remove(p), { id: `remove-post-${p.id}`, className: "needs-moderator" })],
  ], scores, "posts-table"));
}

async function showPlayerRewards(id) {
  let rewards;
  try {
    ({ rewards } = await api("GET", `/api/users/${id}/rewards?status=all&limit=100`));
  } catch (error) {
    // Players' rewards are for the admin token and server keys alone.
    $("player-rewards").replaceChildren(h("p", {}, error.message));
    return;
  }
  $("player-rewards").replaceChildren(rewards.length
    ? table([
      ["from", (r) => r.board || r.league],
      ["period", (r) => (r.period && typeof r.period === "object" ? r.period.index : r.period)],
      ["rank", (r) => r.rank],
      ["reward", (r) => r.reward],
      ["granted", (r) => r.granted_at],
      ["claimed", (r) => r.claimed_at],
    ], rewards, "player-rewards-table")
    : h("p", { id: "player-rewards-table" }, "No rewards."));
}

// --- Held posts -----------------------------------------------------------
async function showHeld() {
  const { held } = await api("GET", "/api/admin/held?limit=100");
  const decide = (post, decision, note) => act(async () => {
    await api("POST", `/api/admin/held/${post.score.id}`, { decision, note: note.value || undefined, board: post.board });
    await showHeld();
  }, `Post ${post.score.id} ${decision === "accept" ? "accepted" : "rejected"}.`);
  $("held-list").replaceChildren(held.length
    ? table([
      ["post", (p) => p.score.id],
      ["board", (p) => p.board],
      ["player", (p) => p.user_id],
      ["score", (p) => p.score.score],
      ["rule", (p) => p.rule],
      ["period", (p) => p.period.index],
      ["feeds", (p) => p.feeds.join(", ")],
      ["", (p) => {
        const note = h("input", { maxLength: 500, placeholder: "note", attrs: { "aria-label": `Note on post ${p.score.id}` } });
        return buttons(note,
          button("Accept", () => decide(p, "accept", note), { id: `accept-${p.score.id}`, className: "needs-moderator" }),
          button("Reject", () => decide(p, "reject", note), { id: `reject-${p.score.id}`, className: "needs-moderator" }));
      }],
    ], held, "held-table")
    : h("p", { id: "held-table" }, "Nothing is held."));
}

// --- Webhooks -------------------------------------------------------------
const EVENTS = ["period.closed", "period.amended", "league.closed", "score.held", "reward.granted"];

async function showWebhooks() {
  const { webhooks } = await api("GET", "/api/admin/webhooks");
  $("webhooks-list").replaceChildren(table([
    ["id", (w) => w.id],
    ["url", (w) => w.url],
    ["events", (w) => w.events.join(", ")],
    ["created", (w) => w.created_at],
    ["", (w) => buttons(
      button("Deliveries", () => act(() => showDeliveries(w.id)), { id: `deliveries-${w.id}` }),
      button("Delete", () => act(async () => { await api("DELETE", `/api/admin/webhooks/${w.id}`); await showWebhooks(); }, `Webhook ${w.id} deleted.`),
        { id: `delete-webhook-${w.id}`, className: "needs-admin" }),
    )],
  ], webhooks, "webhooks-table"));
  const url = h("input", { id: "webhook-url", type: "url", placeholder: "https://…", required: true });
  const boxes = EVENTS.map((event) => h("input", { type: "checkbox", value: event }));
  $("webhook-form").replaceChildren(h("label", {}, "URL", url),
    h("fieldset", {}, h("legend", {}, "Events"), ...boxes.map((box) => h("label", { className: "inline" }, box, box.value))),
    h("button", { type: "submit", id: "webhook-create", className: "needs-admin" }, "Create webhook"));
  $("webhook-form").onsubmit = (event) => {
    event.preventDefault();
    act(async () => {
      const created = await api("POST", "/api/admin/webhooks",
        { url: url.value, events: boxes.filter((box) => box.checked).map((box) => box.value) });
      await showWebhooks();
      $("webhook-detail").replaceChildren(h("p", { className: "secret" }, "Its signing secret, shown this once: ", h("code", {}, created.secret)));
    }, "Webhook created.");
  };
}

async function showDeliveries(id) {
  const { deliveries } = await api("GET", `/api/admin/webhooks/${id}/deliveries?limit=100`);
  $("webhook-detail").replaceChildren(h("h3", {}, `Deliveries of webhook ${id}`), table([
    ["id", (d) => d.id],
    ["event", (d) => d.event],
    ["created", (d) => d.created_at],
    ["status", (d) => d.status],
    ["attempts", (d) => d.attempts],
    ["last status", (d) => d.last_status],
    ["next attempt", (d) => d.next_attempt_at],
  ], deliveries, "deliveries-table"));
}

// --- Keys -----------------------------------------------------------------
async function showKeys() {
  const { keys } = await api("GET", "/api/admin/keys");
  $("keys-list").replaceChildren(table([
    ["id", (k) => k.id],
    ["name", (k) => k.name],
    ["role", (k) => k.role],
    ["created", (k) => k.created_at],
    ["", (k) => button("Revoke", () => act(async () => { await api("DELETE", `/api/admin/keys/${k.id}`); await showKeys(); }, `Key ${k.id} revoked.`),
      { id: `revoke-key-${k.id}`, className: "needs-admin" })],
  ], keys, "keys-table"));
  const name = h("input", { id: "key-name", maxLength: 128, required: true });
  const role = h("select", { id: "key-role" }, ...["server", "moderator", "viewer"].map((r) => h("option", { value: r }, r)));
  const shown = h("p", { id: "key-created", className: "secret", hidden: true });
  $("key-form").replaceChildren(h("label", {}, "Name", name), h("label", {}, "Role", role),
    h("button", { type: "submit", id: "key-create", className: "needs-admin" }, "Create key"), shown);
  $("key-form").onsubmit = (event) => {
    event.preventDefault();
    act(async () => {
      const created = await api("POST", "/api/admin/keys", { name: name.value, role: role.value });
      await showKeys();
      // showKeys rebuilt the form: show the key in the new one, this once.
      $("key-created").replaceChildren(`Key ${created.id} (${created.role}), shown this once: `, h("code", {}, created.key));
      $("key-created").hidden = false;
    }, "Key created.");
  };
}

// --- Audit log ------------------------------------------------------------
async function showAudit(older = false) {
  const before = older && state.auditBefore ? `&before=${state.auditBefore}` : "";
  const { entries, next_before: next } = await api("GET", `/api/admin/audit?limit=50${before}`);
  state.auditBefore = next;
  const rows = table([
    ["at", (e) => e.at],
    ["actor", (e) => e.actor],
    ["action", (e) => e.action],
    ["target", (e) => e.target],
    ["detail", (e) => e.detail],
  ], entries, older ? null : "audit-table");
  if (older) $("audit-list").append(rows); else $("audit-list").replaceChildren(rows);
  $("audit-older").hidden = next === null;
}

// --- Views, signing in and out --------------------------------------------
const VIEWS = {
  boards: showBoards,
  leagues: showLeagues,
  players: async () => {},
  held: showHeld,
  webhooks: showWebhooks,
  keys: showKeys,
  audit: () => showAudit(false),
};

async function showView(name) {
  say("");
  for (const view of Object.keys(VIEWS)) {
    $(`view-${view}`).hidden = view !== name;
    if (view === name) $(`nav-${view}`).setAttribute("aria-current", "page");
    else $(`nav-${view}`).removeAttribute("aria-current");
  }
  if (state.boards.length === 0 && name !== "boards") await act(async () => { state.boards = (await api("GET", "/api/boards")).boards; });
  await act(VIEWS[name]);
  $(`${name}-title`).focus();
}

async function signIn(token) {
  state.token = token;
  const who = await api("GET", "/api/admin/whoami");
  sessionStorage.setItem(TOKEN_KEY, token);
  state.role = who.role;
  document.body.dataset.role = who.role;
  $("actor").textContent = `Signed in as ${who.actor} (${who.role})`;
  $("sign-in").hidden = true;
  $("signed-in").hidden = false;
  $("nav").hidden = false;
  say("");
  await showView("boards");
  return true;
}

function signOut() {
  sessionStorage.removeItem(TOKEN_KEY);
  Object.assign(state, { token: null, role: null, boards: [], auditBefore: null });
  delete document.body.dataset.role;
  for (const view of Object.keys(VIEWS)) $(`view-${view}`).hidden = true;
  for (const id of ["boards-list", "board-detail", "leagues-list", "league-detail", "players-list", "player-detail",
    "held-list", "webhooks-list", "webhook-detail", "keys-list", "audit-list"]) $(id).replaceChildren();
  $("sign-in").hidden = false;
  $("signed-in").hidden = true;
  $("nav").hidden = true;
  $("token").value = "";
  $("token").focus();
}

$("sign-in").addEventListener("submit", (event) => {
  event.preventDefault();
  const token = $("token").value.trim();
  $("token").value = "";
  act(() => signIn(token)).then((done) => { if (done === undefined) state.token = null; });
});
$("sign-out").addEventListener("click", () => { signOut(); say("Signed out."); });
$("nav").addEventListener("click", (event) => {
  const view = event.target.dataset && event.target.dataset.view;
  if (view) showView(view);
});
$("player-search").addEventListener("submit", (event) => {
  event.preventDefault();
  act(() => findPlayers($("player-query").value.trim()), (found) => `${found} found.`);
});
$("audit-older").addEventListener("click", () => act(() => showAudit(true)));

const kept = sessionStorage.getItem(TOKEN_KEY);
if (kept) act(() => signIn(kept)).then((done) => { if (done === undefined) signOut(); });

//! The JSON bodies the handlers document but parse by hand (requests whose
//! every field is validated into domain types, with its own error code),
//! and the health answers: types for the OpenAPI document only. Also the
//! `{board}` path parameter, documented once and extracted as itself.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// `{board}` in a path that names any board.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct BoardPath {
    /// `best`, `total` or a custom board's id
    #[param(pattern = "^[a-z0-9_-]{1,64}$")]
    pub board: String,
}

/// `{board}` in a path that names a custom board.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct CustomBoardPath {
    /// A custom board's id
    #[param(pattern = "^[a-z0-9_-]{1,64}$")]
    pub board: String,
}

/// `{id}` in a path that names a league.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct LeaguePath {
    /// A league's id
    #[param(pattern = "^[a-z0-9_-]{1,64}$")]
    pub id: String,
}

/// A league and one of its cohorts.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct CohortPath {
    /// A league's id
    #[param(pattern = "^[a-z0-9_-]{1,64}$")]
    pub id: String,
    /// A cohort's id, as a post or a member answer names it (opaque)
    #[param(pattern = "^[A-Za-z0-9_-]{1,64}$")]
    pub cohort: String,
}

/// A league and a player.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct LeagueMemberPath {
    /// A league's id
    #[param(pattern = "^[a-z0-9_-]{1,64}$")]
    pub id: String,
    /// The player's user id
    #[param(value_type = i64, minimum = 1)]
    pub user_id: String,
}

/// Every error: `{"error": {"code", "message"}}`.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Serialize, ToSchema)]
pub struct ErrorDetail {
    /// snake_case, e.g. `invalid_score`, `login_name_taken`, `invalid_cursor`
    /// (the document lists every code; each response lists its own).
    pub code: String,
    /// Human text, never internals.
    pub message: String,
}

/// `POST /api/users`.
#[derive(Serialize, ToSchema)]
pub struct RegisterRequest {
    /// 3..32 characters of `[A-Za-z0-9_.-]`, unique case-insensitively.
    #[schema(example = "alice_01", pattern = "^[A-Za-z0-9_.-]{3,32}$")]
    pub login_name: String,
    /// 8..72 bytes of UTF-8. JSON Schema's lengths count characters (of
    /// 1 to 4 bytes), so the bounds below are the characters' (2..72) and
    /// the byte rule is stated here.
    #[schema(min_length = 2, max_length = 72)]
    pub password: String,
    /// 1..32 characters, no control characters; default: `login_name`.
    #[schema(min_length = 1, max_length = 32)]
    pub display_name: Option<String>,
}

/// `POST /api/sessions`.
#[derive(Serialize, ToSchema)]
pub struct LoginRequest {
    pub login_name: String,
    pub password: String,
}

/// `POST /api/scores`.
#[derive(Serialize, ToSchema)]
pub struct ScoreRequest {
    /// An integer in 0..=1,000,000,000 (floats, strings, negatives: 422 `invalid_score`).
    #[schema(example = 1200, minimum = 0, maximum = 1_000_000_000)]
    pub score: i64,
    /// With a server key: the player the post is for (a player's session
    /// posts for that player; if sent, it must be their own id).
    #[schema(minimum = 1)]
    pub user_id: Option<i64>,
    /// Any JSON object of at most 1 KiB serialized (422 `invalid_metadata`
    /// otherwise): the built-in boards keep none of it, the boards they
    /// feed keep it with the fed posts (v4).
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<serde_json::Value>,
}

/// `POST /api/boards/{board}/scores`.
#[derive(Serialize, ToSchema)]
pub struct BoardScoreRequest {
    /// An integer in the board's `min_score..=max_score` (422 `invalid_score` outside).
    #[schema(example = 83_250)]
    pub score: i64,
    /// On a board with subscores (v4), exactly that many integers in
    /// 0..2^53-1, in the board's order of them; on a board without, none.
    /// 422 `invalid_subscores` otherwise.
    #[schema(max_items = 2)]
    pub subscores: Option<Vec<u64>>,
    /// Any JSON object of at most 1 KiB serialized (422 `invalid_metadata`
    /// otherwise), stored with the post and shown with the entry it sets.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<serde_json::Value>,
    /// With a server key only: the player the post is for.
    #[schema(minimum = 1)]
    pub user_id: Option<i64>,
}

/// `POST /api/admin/boards`: everything but `id` and `name` has a default;
/// only `name`, the rule fields (`min_interval_ms`, `writers`,
/// `hold_beyond`, `hold_jump`, `feeds`) and the tournament fields can change later.
#[derive(Serialize, ToSchema)]
pub struct BoardRequest {
    /// 1..64 characters of `[a-z0-9_-]`; `best` and `total` are taken.
    #[schema(example = "level-3", pattern = "^[a-z0-9_-]{1,64}$")]
    pub id: String,
    /// 1..128 characters, no control characters.
    #[schema(example = "Level 3: fastest run", min_length = 1, max_length = 128)]
    pub name: String,
    /// `desc` (higher is better, default) or `asc` (lower is better).
    #[schema(value_type = Option<SortOrder>, example = "asc")]
    pub order: Option<String>,
    /// `best` (default), `latest` or `total` (`desc` only).
    #[schema(value_type = Option<ScoreOperator>, example = "best")]
    pub operator: Option<String>,
    /// A cron pattern (5 fields, or 6 with seconds first) in `timezone`; null: never resets.
    #[schema(example = "0 0 * * 1")]
    pub reset: Option<String>,
    /// An IANA time zone, default `UTC`.
    #[schema(example = "Europe/Paris")]
    pub timezone: Option<String>,
    /// Ended periods kept readable, 0..1000, default 10.
    #[schema(minimum = 0, maximum = 1000)]
    pub archive_periods: Option<i64>,
    /// Default 0.
    pub min_score: Option<i64>,
    /// Default 1,000,000,000; at least `min_score`.
    pub max_score: Option<i64>,
    /// The least time in ms between two posts of one player to the board,
    /// 1..86,400,000; null (default): none. Sooner: 429 with `Retry-After`.
    #[schema(minimum = 1, maximum = 86_400_000)]
    pub min_interval_ms: Option<i64>,
    /// `players` (default) or `server`: only server keys post (a
    /// player's session gets 403 `server_only`).
    #[schema(value_type = Option<BoardWriters>, example = "players")]
    pub writers: Option<String>,
    /// A post better than this (in the board's order) is held for review (202).
    pub hold_beyond: Option<i64>,
    /// A post better than the player's entry by more than this factor
    /// (> 1, at most 1,000,000) is held for review (202).
    #[schema(exclusive_minimum = 1, maximum = 1_000_000)]
    pub hold_jump: Option<f64>,
    /// Up to 10 custom board ids (none a league's, this board, a duplicate,
    /// or a board with feeds of its own; no feeds on a board another feeds)
    /// that every accepted or held post is also posted to, in the same
    /// transaction (v4); 422 `invalid_feeds` otherwise. `best` and `total`
    /// together feed at most 10. Default `[]`.
    #[schema(example = json!(["level-3-daily"]), max_items = 10)]
    pub feeds: Option<Vec<String>>,
    /// Up to 20 reward bands granted when a period closes (v4; the first
    /// band an entry matches is its reward); 422 `invalid_rewards`
    /// otherwise. Default `[]`.
    #[schema(max_items = 20)]
    pub rewards: Option<Vec<crate::domain::RewardBand>>,
    /// Up to 2 tie-breakers after the score (v4; set at creation only;
    /// not on `total`): entries order by score, then each subscore in its
    /// own order, then `achieved_at`, then user id, and share a rank only
    /// when equal on the score and every subscore. Posts must then carry
    /// that many `subscores`. 422 `invalid_subscores` otherwise. Default `[]`.
    #[schema(max_items = 2)]
    pub subscores: Option<Vec<SubscoreRequest>>,
    /// The metadata field posts are partitioned by (v4; set at creation
    /// only; 1..64 characters of `[A-Za-z0-9_]`): a post whose metadata
    /// has it as 1..32 characters of `[A-Za-z0-9_-]` lands on the board
    /// and on that partition, with its own entries and ranks (another type
    /// or spelling: 422 `invalid_partition`). Default null.
    #[schema(example = "country", pattern = "^[A-Za-z0-9_]{1,64}$")]
    pub partition_by: Option<String>,
    /// Partitions one period opens at most, 1..10,000 (default 1,000): a
    /// post that would open one more is 409 `partition_limit`.
    #[schema(minimum = 1, maximum = 10_000)]
    pub max_partitions: Option<i64>,
    /// The only values taken (at most `max_partitions`; null, the
    /// default: any well-formed value).
    #[schema(example = json!(["DE", "FR", "US"]))]
    pub partition_values: Option<Vec<String>>,
    #[serde(flatten)]
    pub tournament: TournamentFields,
}

/// A board's tie-breaker (v4).
#[derive(Serialize, ToSchema)]
pub struct SubscoreRequest {
    /// 1..32 characters of `[a-z0-9_]`, distinct on the board.
    #[schema(example = "time_ms", pattern = "^[a-z0-9_]{1,32}$")]
    pub name: String,
    #[schema(example = "asc", value_type = String, pattern = "^(asc|desc)$")]
    pub order: String,
}

/// The tournament fields of a board (v3), each per period. `PATCH` may
/// change them for the periods that have not started: the period in
/// force too while its `starts_at` is ahead, else from the first period
/// starting at least 5 s later (the Board's `pending_change` until then);
/// 409 `period_started` when the period in force has begun and never ends.
#[derive(Serialize, ToSchema)]
pub struct TournamentFields {
    /// Tournaments: posts and joins are taken from this RFC 3339 time on
    /// (409 `board_closed` before); null: from creation.
    #[schema(example = "2026-12-07T18:00:00Z", format = DateTime)]
    pub starts_at: Option<String>,
    /// ... and until this time (409 `board_closed` from then on); the
    /// period in force ends here, its results final. Null: no end.
    #[schema(example = "2026-12-14T18:00:00Z", format = DateTime)]
    pub ends_at: Option<String>,
    /// Tournaments: only a period's entrants post (403 `not_joined`); default false.
    pub join_required: Option<bool>,
    /// Entrants a period takes, 1..10,000,000 (null: no limit); one more is 409 `board_full`.
    #[schema(minimum = 1, maximum = 10_000_000)]
    pub max_entrants: Option<i64>,
    /// Posts per player per period, held ones included, 1..1,000,000 (null: no
    /// limit); one more is 409 `attempts_exhausted`.
    #[schema(minimum = 1, maximum = 1_000_000)]
    pub max_attempts: Option<i64>,
}

/// `POST /api/admin/leagues`: a ladder of tiers, played in cohorts, each
/// period (`reset`) ending with moves up and down.
#[derive(Serialize, ToSchema)]
pub struct LeagueRequest {
    /// As a board id, unique among boards and leagues.
    #[schema(example = "weekly", pattern = "^[a-z0-9_-]{1,64}$")]
    pub id: String,
    #[schema(example = "Weekly league", min_length = 1, max_length = 128)]
    pub name: String,
    /// 2..20 names, lowest first, each 1..64 characters (no control characters).
    #[schema(value_type = Vec<TierName>, example = json!(["Bronze", "Silver", "Gold"]), min_items = 2, max_items = 20)]
    pub tiers: Vec<String>,
    /// Players per cohort, 2..200.
    #[schema(example = 30, minimum = 2, maximum = 200)]
    pub cohort_size: i64,
    /// How many of a cohort's best move up a tier, 0..cohort_size.
    #[schema(example = 7, minimum = 0)]
    pub promote: i64,
    /// How many of a cohort's worst move down a tier, 0..cohort_size.
    #[schema(example = 5, minimum = 0)]
    pub demote: i64,
    /// As for boards: `desc` (default) or `asc`.
    #[schema(value_type = Option<SortOrder>)]
    pub order: Option<String>,
    /// As for boards: `best` (default), `latest` or `total`.
    #[schema(value_type = Option<ScoreOperator>, example = "total")]
    pub operator: Option<String>,
    pub min_score: Option<i64>,
    pub max_score: Option<i64>,
    /// Required: when each period (round) ends.
    #[schema(example = "0 0 * * 1")]
    pub reset: String,
    #[schema(example = "Europe/Berlin")]
    pub timezone: Option<String>,
    #[schema(minimum = 0, maximum = 1000)]
    pub archive_periods: Option<i64>,
    /// Up to 20 reward bands granted in each cohort when a period closes
    /// (v4); 422 `invalid_rewards` otherwise. Default `[]`.
    #[schema(max_items = 20)]
    pub rewards: Option<Vec<crate::domain::RewardBand>>,
}

/// `PATCH /api/admin/boards/{board}`: the fields to change; a field left
/// out keeps its value, a null rule field clears it. The built-in boards
/// take the rule fields only.
#[derive(Serialize, ToSchema)]
pub struct UpdateBoardRequest {
    /// Custom boards only.
    #[schema(min_length = 1, max_length = 128)]
    pub name: Option<String>,
    #[schema(minimum = 1, maximum = 86_400_000)]
    pub min_interval_ms: Option<i64>,
    #[schema(value_type = Option<BoardWriters>, example = "server")]
    pub writers: Option<String>,
    pub hold_beyond: Option<i64>,
    #[schema(exclusive_minimum = 1, maximum = 1_000_000)]
    pub hold_jump: Option<f64>,
    /// Up to 10 custom board ids (none a league's, this board, a duplicate,
    /// or a board with feeds of its own; no feeds on a board another feeds)
    /// that every accepted or held post is also posted to, in the same
    /// transaction (v4); 422 `invalid_feeds` otherwise. `best` and `total`
    /// together feed at most 10. Default `[]`.
    #[schema(example = json!(["level-3-daily"]), max_items = 10)]
    pub feeds: Option<Vec<String>>,
    /// Custom boards only: the whole list of reward bands (v4), replacing
    /// the board's; a close grants the bands the board has when it runs.
    #[schema(max_items = 20)]
    pub rewards: Option<Vec<crate::domain::RewardBand>>,
    #[serde(flatten)]
    pub tournament: TournamentFields,
}

/// `PATCH /api/admin/leagues/{id}` (v4): a field left out keeps its value;
/// the ladder and board fields are fixed at creation (422 `invalid_<field>`).
#[derive(Serialize, ToSchema)]
pub struct UpdateLeagueRequest {
    #[schema(example = "Weekly league", min_length = 1, max_length = 128)]
    pub name: Option<String>,
    /// Reward bands granted in each cohort at a period's close (v4): the
    /// whole list, replacing the league's; 422 `invalid_rewards` otherwise.
    #[schema(max_items = 20)]
    pub rewards: Option<Vec<crate::domain::RewardBand>>,
}

/// `POST /api/admin/held/{score_id}`.
#[derive(Serialize, ToSchema)]
pub struct DecisionRequest {
    /// `accept` or `reject`.
    #[schema(value_type = Decision, example = "accept")]
    pub decision: String,
    /// Why, for the audit log (at most 500 characters).
    #[schema(max_length = 500)]
    pub note: Option<String>,
    /// Which board's post, when a post of `/api/scores` (`best`) and a
    /// custom board's post are both held with this id.
    pub board: Option<String>,
}

/// `POST /api/admin/keys`.
#[derive(Serialize, ToSchema)]
pub struct CreateKeyRequest {
    /// What the key is for, 1..128 characters (e.g. the server fleet).
    #[schema(example = "match servers eu-west", min_length = 1, max_length = 128)]
    pub name: String,
    /// `server` (default: posts scores for players), `moderator` or
    /// `viewer` (admin routes within the role); else 422 `invalid_role`.
    #[schema(value_type = Option<KeyRoleName>, example = "moderator")]
    pub role: Option<String>,
}

/// `POST /api/admin/webhooks`.
#[derive(Serialize, ToSchema)]
pub struct CreateWebhookRequest {
    /// http or https; loopback, private and link-local addresses only with
    /// `WEBHOOK_ALLOW_PRIVATE=true`.
    #[schema(example = "https://game.example.com/hooks/hiscore", max_length = 2048)]
    pub url: String,
    /// Any of `period.closed`, `period.amended`, `league.closed`, `score.held`, `reward.granted`.
    #[schema(example = json!(["period.closed", "score.held"]), min_items = 1)]
    pub events: Vec<EventName>,
}

/// `POST /api/admin/users/{id}/ban`.
#[derive(Serialize, ToSchema)]
pub struct BanRequest {
    /// Why, for the audit log.
    #[schema(min_length = 1, max_length = 500)]
    pub reason: String,
}

/// `PATCH /api/admin/users/{id}`.
#[derive(Serialize, ToSchema)]
pub struct RenameUserRequest {
    #[schema(min_length = 1, max_length = 32)]
    pub display_name: String,
}

/// `PATCH /api/me`: a display name, a password, or both.
#[derive(Serialize, ToSchema)]
pub struct ChangeMeRequest {
    #[schema(min_length = 1, max_length = 32)]
    pub display_name: Option<String>,
    /// A new password (8 to 72 bytes: 2 to 72 characters); needs `current_password`.
    #[schema(min_length = 2, max_length = 72)]
    pub password: Option<String>,
    /// The password the player logs in with now (401 when wrong).
    #[schema(min_length = 2, max_length = 72)]
    pub current_password: Option<String>,
}

/// `DELETE /api/me`.
#[derive(Serialize, ToSchema)]
pub struct EraseMeRequest {
    /// The player's password, to confirm (8 to 72 bytes: 2 to 72 characters).
    #[schema(min_length = 2, max_length = 72)]
    pub password: String,
}

/// `POST /api/admin/initialize` (the body may be empty).
#[derive(Serialize, ToSchema)]
pub struct InitializeRequest {
    /// Players to generate (default 1,000).
    #[schema(minimum = 0, maximum = 2_000_000)]
    pub users: Option<i64>,
    /// Score posts spread over them (default 10,000; needs at least one player).
    #[schema(minimum = 0, maximum = 20_000_000)]
    pub scores: Option<i64>,
    /// The same seed gives byte-identical pages (default 1); 0 to 2^63 - 1.
    #[schema(minimum = 0)]
    pub seed: Option<i64>,
}

/// `GET /healthz`.
#[derive(Serialize, ToSchema)]
pub struct Health {
    #[schema(example = "ok")]
    pub status: String,
    /// `ok`, `degraded` (serving without Redis) or `disabled`.
    pub redis: String,
}

/// `GET /livez`, `GET /readyz`.
#[derive(Serialize, ToSchema)]
pub struct Status {
    /// `ok` (live) or `ready`.
    pub status: String,
}

/// A board's order.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)] // the document's only: the handlers parse the text
pub enum SortOrder {
    Desc,
    Asc,
}

/// How a board keeps a player's posts.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)] // the document's only: the handlers parse the text
pub enum ScoreOperator {
    Best,
    Latest,
    Total,
}

/// Who may post to a board.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)] // the document's only: the handlers parse the text
pub enum BoardWriters {
    Players,
    Server,
}

/// What a key is for (v4): posting scores for players, or admin routes
/// within a role.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)] // the document's only: the handlers parse the text
pub enum KeyRoleName {
    Server,
    Moderator,
    Viewer,
}

/// A review's decision.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)] // the document's only: the handlers parse the text
pub enum Decision {
    Accept,
    Reject,
}

/// The events a webhook may take.
#[derive(Serialize, ToSchema)]
#[allow(dead_code)] // the document's only: the handlers parse the text
pub enum EventName {
    #[serde(rename = "period.closed")]
    PeriodClosed,
    #[serde(rename = "period.amended")]
    PeriodAmended,
    #[serde(rename = "league.closed")]
    LeagueClosed,
    #[serde(rename = "score.held")]
    ScoreHeld,
    #[serde(rename = "reward.granted")]
    RewardGranted,
}

/// A tier's name: 1..64 characters, no control characters.
pub struct TierName;

impl utoipa::PartialSchema for TierName {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new().schema_type(Type::String).min_length(Some(1)).max_length(Some(64)).into()
    }
}

impl ToSchema for TierName {}

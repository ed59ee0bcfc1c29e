//! The contract's JSON objects, built from store rows and ranks.
//! Password material and login names never reach `PublicUser`.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;
use utoipa::ToSchema;

use crate::boards::{BoardSpec, Period, PostRules, Tournament};
use crate::domain::{
    Board, BoardKey, BoardPeriod, CursorKeys, Hundredths, PartitionValue, PostStatus, Ranking, RewardBand, Rewards,
    Subscore, Timestamp, DEFAULT_MAX_PARTITIONS,
};
use crate::rank::{Page, UserRanks};
use crate::store::{ScoreRow, ServerKeyRow, UserRow};

/// `POST /api/admin/initialize`: what was loaded, and how long it took.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Initialized {
    pub users: i64,
    pub scores: i64,
    pub seed: u64,
    /// The wipe, the load and the warm-up, in milliseconds.
    pub elapsed_ms: u64,
}

/// The avatar number the ranking page shows (1..=10).
fn image(id: i64) -> i64 {
    id % 10 + 1
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PublicUser {
    pub id: i64,
    pub display_name: String,
    pub image: i64,
    pub best_score: i64,
    #[schema(required = true)]
    pub best_at: Option<Timestamp>,
    pub total_score: i64,
    pub play_count: i64,
    #[schema(required = true)]
    pub best_rank: Option<i64>,
    #[schema(required = true)]
    pub total_rank: Option<i64>,
    pub created_at: Timestamp,
}

impl PublicUser {
    pub fn new(user: &UserRow, ranks: UserRanks) -> Self {
        Self {
            id: user.id,
            display_name: user.display_name.clone(),
            image: image(user.id),
            best_score: user.best_score,
            best_at: user.best_at,
            total_score: user.total_score,
            play_count: user.play_count,
            best_rank: ranks.best.map(|best| best.rank),
            total_rank: ranks.total.map(|total| total.rank),
            created_at: user.created_at,
        }
    }
}

/// A batched lookup's answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserList {
    pub users: Vec<PublicUser>,
}

/// PublicUser plus `login_name`: what a player sees of themselves.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Me {
    #[serde(flatten)]
    pub user: PublicUser,
    pub login_name: String,
}

impl Me {
    pub fn new(user: &UserRow, ranks: UserRanks) -> Self {
        Self { user: PublicUser::new(user, ranks), login_name: user.login_name.clone() }
    }
}

/// Registration and login answer with the player and their new token.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionCreated {
    pub user: Me,
    pub token: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ScoreView {
    pub id: i64,
    pub score: i64,
    pub created_at: Timestamp,
    /// `accepted`, `held` (for review: counts for nothing until accepted) or `rejected`.
    #[schema(example = "accepted")]
    pub status: &'static str,
}

impl From<&ScoreRow> for ScoreView {
    fn from(row: &ScoreRow) -> Self {
        let status = PostStatus::from_stored(&row.status).as_str();
        Self { id: row.id, score: row.score, created_at: row.created_at, status }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ScoreResult {
    pub score: ScoreView,
    pub new_best: bool,
    pub user: Me,
    /// What became of the post on each board `best` and `total` feed (v4).
    pub feeds: Vec<FeedResult>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ScoreHistory {
    pub scores: Vec<ScoreView>,
    #[schema(required = true)]
    pub next_before: Option<i64>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UserRef {
    pub id: i64,
    pub display_name: String,
    pub image: i64,
}

impl UserRef {
    pub fn new(id: i64, display_name: &str) -> Self {
        Self { id, display_name: display_name.to_owned(), image: image(id) }
    }
}

/// A post's metadata: the JSON object as stored, sent as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata(pub Arc<str>);

impl Serialize for Metadata {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw = serde_json::value::RawValue::from_string(self.0.to_string()).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

/// In the OpenAPI document: any JSON object.
impl utoipa::PartialSchema for Metadata {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some("The JSON object posted with the score (at most 1 KiB)"))
            .into()
    }
}

impl utoipa::ToSchema for Metadata {}

/// A period of a board (built-ins: `{"index": 0, "start": null, "end": null}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct PeriodView {
    pub index: i64,
    #[schema(required = true)]
    pub start: Option<Timestamp>,
    /// Null while the board never resets.
    #[schema(required = true)]
    pub end: Option<Timestamp>,
}

impl PeriodView {
    pub const BUILTIN: Self = Self { index: 0, start: None, end: None };
}

impl From<Period> for PeriodView {
    fn from(period: Period) -> Self {
        Self { index: period.index, start: Some(period.start), end: period.end }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RankingEntry {
    pub rank: i64,
    /// `ceil(10000 × rank ÷ players)` hundredths: the share of the
    /// population the rank is taken in (the board, period and partition;
    /// the cohort on league answers) at least as good as this entry.
    pub top_percent: Hundredths,
    pub score: i64,
    /// The entry's subscores, on a board with them (v4; absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscores: Option<Vec<i64>>,
    /// When the entry's score was reached: `best_at` on the best board,
    /// null on the total board; on custom boards the first post that
    /// reached it (`best`) or the last post (`latest`, `total`).
    #[schema(required = true)]
    pub achieved_at: Option<Timestamp>,
    pub user: UserRef,
    /// The metadata of the post that set the score (custom boards), or null.
    #[schema(required = true)]
    pub metadata: Option<Metadata>,
}

impl RankingEntry {
    /// An entry ranked `rank` among `players`.
    pub fn new(
        board: BoardPeriod,
        (rank, players): (i64, i64),
        key: BoardKey,
        display_name: &str,
        metadata: Option<Arc<str>>,
    ) -> Self {
        Self {
            rank,
            top_percent: Hundredths::top(rank, players),
            score: key.score,
            subscores: subscores_of(board.ranking, &key.subscores),
            achieved_at: match board.board {
                Board::Total => None,
                Board::Best | Board::Custom(_) => Some(Timestamp::from_millis(key.at)),
            },
            user: UserRef::new(key.id, display_name),
            metadata: metadata.map(Metadata),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RankingPage {
    #[schema(example = "best")]
    pub board: String,
    pub period: PeriodView,
    /// The partition read (v4; null: the whole board).
    #[schema(required = true)]
    pub partition: Option<String>,
    pub entries: Vec<RankingEntry>,
    pub total_players: i64,
    #[schema(required = true)]
    pub next_offset: Option<i64>,
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

impl RankingPage {
    /// A page of the rank engine with the players' display names.
    pub fn new(
        (board_id, partition): (&str, Option<&str>),
        period: PeriodView,
        page: &Page,
        names: &HashMap<i64, Arc<str>>,
        cursor_keys: &CursorKeys,
    ) -> Self {
        let board = page.board;
        let entries = page
            .entries
            .iter()
            .map(|entry| {
                let name = names.get(&entry.key.id).map_or("", |name| name);
                RankingEntry::new(board, (entry.rank, page.total_players), entry.key, name, entry.metadata.clone())
            })
            .collect();
        Self {
            board: board_id.to_owned(),
            period,
            partition: partition.map(str::to_owned),
            entries,
            total_players: page.total_players,
            next_offset: page.next_offset,
            next_cursor: page.next_cursor.as_ref().map(|cursor| cursor.encode(cursor_keys)),
        }
    }
}

/// `GET /api/rankings/{board}/cutoffs`: where each asked percent of the
/// board's entries ends.
#[derive(Debug, Serialize, ToSchema)]
pub struct CutoffList {
    #[schema(example = "best")]
    pub board: String,
    pub period: PeriodView,
    /// The partition read (null: the whole board).
    #[schema(required = true)]
    pub partition: Option<String>,
    /// The entries of the period now.
    pub players: i64,
    /// In the order asked.
    pub cutoffs: Vec<Cutoff>,
}

/// The entry at `position` = `floor(players × percent ÷ 100)` in board
/// order: every entry at least as good has `top_percent` ≤ `percent`, every
/// worse one more. `rank`, `score` and `subscores` are null when the
/// position is 0.
#[derive(Debug, Serialize, ToSchema)]
pub struct Cutoff {
    pub percent: Hundredths,
    pub position: i64,
    #[schema(required = true)]
    pub rank: Option<i64>,
    #[schema(required = true)]
    pub score: Option<i64>,
    /// The entry's subscores on a board with them; null otherwise.
    #[schema(required = true)]
    pub subscores: Option<Vec<i64>>,
}

/// A board as `GET /api/boards` lists it.
#[derive(Debug, Serialize, ToSchema)]
pub struct BoardView {
    #[schema(example = "level-3")]
    pub id: String,
    pub name: String,
    #[schema(example = "desc")]
    pub order: &'static str,
    #[schema(example = "best")]
    pub operator: &'static str,
    /// A cron pattern (5 fields, or 6 with seconds first), or null: never resets.
    #[schema(required = true)]
    pub reset: Option<String>,
    #[schema(example = "UTC")]
    pub timezone: String,
    pub archive_periods: i64,
    pub min_score: i64,
    pub max_score: i64,
    /// Null for the built-in boards.
    #[schema(required = true)]
    pub created_at: Option<Timestamp>,
    /// The period in force.
    pub period: PeriodView,
    /// The least time in ms between two posts of one player (null: none).
    #[schema(required = true)]
    pub min_interval_ms: Option<i64>,
    /// `players` (sessions post) or `server` (only server keys post).
    #[schema(example = "players")]
    pub writers: &'static str,
    /// A post better than this in the board's order is held for review (null: none).
    #[schema(required = true)]
    pub hold_beyond: Option<i64>,
    /// A post better than the player's entry by more than this factor is
    /// held for review (null: none).
    #[schema(required = true)]
    pub hold_jump: Option<f64>,
    /// The tournament fields in force in the current period.
    #[serde(flatten)]
    pub tournament: TournamentView,
    /// Entrants of the current period (null unless `join_required`).
    #[schema(required = true)]
    pub entrants: Option<i64>,
    /// A change of the tournament fields by `PATCH` that comes into force
    /// with a later period (null: none).
    #[schema(required = true)]
    pub pending_change: Option<PendingChange>,
    /// The custom boards every accepted or held post to this board is also
    /// posted to, in the same transaction (v4).
    #[schema(example = json!(["level-3-daily", "level-3-weekly"]))]
    pub feeds: Vec<String>,
    /// Reward bands granted when a period closes (v4; `[]` on `best` and `total`).
    #[schema(value_type = Vec<RewardBand>)]
    pub rewards: Rewards,
    /// Tie-breakers after the score, each in its own order (set at
    /// creation; `[]` on boards without them and on `best`/`total`).
    pub subscores: Vec<SubscoreView>,
    /// The metadata field posts are partitioned by (v4; null: none).
    #[schema(required = true, example = "country")]
    pub partition_by: Option<String>,
    /// Partitions one period opens at most (default 1000).
    #[schema(example = 1000)]
    pub max_partitions: i64,
    /// The only partition values taken (null: any well-formed value).
    #[schema(required = true)]
    pub partition_values: Option<Vec<String>>,
}

/// A board's tie-breaker.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SubscoreView {
    /// 1..32 characters of `[a-z0-9_]`.
    #[schema(example = "time_ms")]
    pub name: String,
    #[schema(example = "asc")]
    pub order: &'static str,
}

impl SubscoreView {
    pub fn list(subscores: &[Subscore]) -> Vec<Self> {
        subscores.iter().map(|s| Self { name: s.name.clone(), order: s.order.as_str() }).collect()
    }
}

/// A key's subscores as answers show them: those of a board with them,
/// none on a board without.
pub fn subscores_of(ranking: Ranking, subscores: &[i64]) -> Option<Vec<i64>> {
    let count = ranking.subscores().len();
    (count > 0).then(|| subscores[..count].to_vec())
}

/// A board's tournament fields (v3), as in force in one period.
#[derive(Debug, Serialize, ToSchema)]
pub struct TournamentView {
    /// Only the period's entrants post (`POST /api/boards/{id}/entrants`).
    pub join_required: bool,
    /// Entrants a period takes at most (null: no limit).
    #[schema(required = true)]
    pub max_entrants: Option<i64>,
    /// Posts per player per period at most, held ones included (null: no limit).
    #[schema(required = true)]
    pub max_attempts: Option<i64>,
    /// Posts and joins are taken from this time on (null: from creation).
    #[schema(required = true)]
    pub starts_at: Option<Timestamp>,
    /// ... until this time (null: ever); the period in force ends here.
    #[schema(required = true)]
    pub ends_at: Option<Timestamp>,
}

impl From<Tournament> for TournamentView {
    fn from(fields: Tournament) -> Self {
        Self {
            join_required: fields.join_required,
            max_entrants: fields.max_entrants,
            max_attempts: fields.max_attempts,
            starts_at: fields.starts_at,
            ends_at: fields.ends_at,
        }
    }
}

/// The tournament fields from `period` on, as a `PATCH` set them.
#[derive(Debug, Serialize, ToSchema)]
pub struct PendingChange {
    /// The index of the first period they are in force in.
    pub period: i64,
    #[serde(flatten)]
    pub tournament: TournamentView,
}

impl BoardView {
    /// A custom board; `entrants`: the current period's count, if it joins.
    /// `feeds`: the ids of the boards it feeds.
    pub fn custom(spec: &BoardSpec, period: Period, entrants: Option<i64>, feeds: Vec<String>) -> Self {
        let tournament = spec.terms.at(period.index);
        let pending_change = spec
            .terms
            .change_after(period.index)
            .map(|(period, fields)| PendingChange { period, tournament: fields.into() });
        Self {
            id: spec.id.clone(),
            name: spec.name.clone(),
            order: spec.order.as_str(),
            operator: spec.operator.as_str(),
            reset: spec.reset.clone(),
            timezone: spec.timezone.clone(),
            archive_periods: spec.archive_periods,
            min_score: spec.min_score,
            max_score: spec.max_score,
            created_at: Some(spec.created_at),
            period: period.into(),
            min_interval_ms: spec.rules.min_interval_ms,
            writers: spec.rules.writers.as_str(),
            hold_beyond: spec.rules.hold_beyond,
            hold_jump: spec.rules.hold_jump,
            entrants: if tournament.join_required { Some(entrants.unwrap_or(0)) } else { None },
            tournament: tournament.into(),
            pending_change,
            feeds,
            rewards: spec.rewards.clone(),
            subscores: SubscoreView::list(&spec.subscores),
            partition_by: spec.partitioning.as_ref().map(|rule| rule.field.clone()),
            max_partitions: spec.partitioning.as_ref().map_or(DEFAULT_MAX_PARTITIONS, |rule| rule.max_partitions),
            partition_values: spec
                .partitioning
                .as_ref()
                .and_then(|rule| rule.values.as_ref())
                .map(|values| values.iter().map(|value| value.as_str().to_owned()).collect()),
        }
    }

    /// `best` or `total`; `max_score` is the configured plausibility bound.
    pub fn builtin(board: Board, max_score: i64, rules: PostRules, feeds: Vec<String>) -> Self {
        let (id, name, operator) = match board {
            Board::Total => ("total", "Total score", "total"),
            Board::Best | Board::Custom(_) => ("best", "Best score", "best"),
        };
        Self {
            id: id.to_owned(),
            name: name.to_owned(),
            order: "desc",
            operator,
            reset: None,
            timezone: "UTC".to_owned(),
            archive_periods: 0,
            min_score: 0,
            max_score,
            created_at: None,
            period: PeriodView::BUILTIN,
            min_interval_ms: rules.min_interval_ms,
            writers: rules.writers.as_str(),
            hold_beyond: rules.hold_beyond,
            hold_jump: rules.hold_jump,
            tournament: Tournament::default().into(),
            entrants: None,
            pending_change: None,
            feeds,
            rewards: Rewards::default(),
            subscores: Vec::new(),
            partition_by: None,
            max_partitions: DEFAULT_MAX_PARTITIONS,
            partition_values: None,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BoardList {
    pub boards: Vec<BoardView>,
}

/// A period in a board's list of periods.
#[derive(Debug, Serialize, ToSchema)]
pub struct PeriodEntry {
    pub index: i64,
    #[schema(required = true)]
    pub start: Option<Timestamp>,
    #[schema(required = true)]
    pub end: Option<Timestamp>,
    /// Players with an entry in the period.
    pub players: i64,
}

/// `GET /api/boards/{id}/partitions` (v4).
#[derive(Debug, Serialize, ToSchema)]
pub struct PartitionList {
    pub partitions: Vec<PartitionView>,
    /// The `after` of the next page (null: none).
    #[schema(required = true)]
    pub next_after: Option<String>,
}

/// A partition with entries in a period.
#[derive(Debug, Serialize, ToSchema)]
pub struct PartitionView {
    #[schema(example = "DE")]
    pub value: String,
    /// Its entries in the period.
    pub players: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PeriodList {
    pub periods: Vec<PeriodEntry>,
    #[schema(required = true)]
    pub next_before: Option<i64>,
}

/// A post to a custom board.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BoardScoreView {
    pub id: i64,
    pub score: i64,
    /// The post's subscores, on a board with them (v4; absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscores: Option<Vec<i64>>,
    pub created_at: Timestamp,
    #[schema(required = true)]
    pub metadata: Option<Metadata>,
    /// `accepted`, `held` (for review: counts for nothing until accepted) or `rejected`.
    #[schema(example = "accepted")]
    pub status: &'static str,
}

/// The answer to a post on a custom board (201), or to a post held for
/// review (202: `entry` as it was, null if the player had none).
#[derive(Debug, Serialize, ToSchema)]
pub struct BoardScoreResult {
    pub score: BoardScoreView,
    /// The player's entry after this post, with its rank.
    #[schema(required = true)]
    pub entry: Option<RankingEntry>,
    /// Whether the entry's score changed.
    pub improved: bool,
    /// The period the post counted in.
    pub period: PeriodView,
    /// What became of the post on each board this one feeds (v4), in the
    /// board's `feeds` order.
    pub feeds: Vec<FeedResult>,
    /// The board's partition the post landed on (v4 `partition_by`; null:
    /// none). Boxed: most posts have none.
    #[schema(required = true, value_type = Option<PartitionResult>)]
    pub partition: Option<Box<PartitionResult>>,
}

/// A post on its board's partition (v4 `partition_by`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PartitionResult {
    #[schema(example = "DE")]
    pub value: String,
    /// The player's entry in the partition after the post, ranked among
    /// the partition's entries (null: held without an entry).
    #[schema(required = true)]
    pub entry: Option<RankingEntry>,
    /// Whether the post created or changed the player's entry there.
    pub improved: bool,
}

impl PartitionResult {
    /// A partition's copy of a post, as it was taken.
    pub fn of(value: &PartitionValue, taken: BoardScoreResult) -> Self {
        Self { value: value.as_str().to_owned(), entry: taken.entry, improved: taken.improved }
    }
}

/// What became of a post on one board it fed (v4 `feeds`).
#[derive(Debug, Serialize, ToSchema)]
pub struct FeedResult {
    #[schema(example = "level-3-daily")]
    pub board: String,
    /// `accepted`, `held` or `skipped` (the fed board refused it).
    #[schema(example = "accepted")]
    pub status: &'static str,
    /// Skipped: the error code that board would have answered.
    #[schema(required = true, example = "board_closed")]
    pub reason: Option<&'static str>,
    /// The fed post's own id (null: skipped).
    #[schema(required = true)]
    pub score_id: Option<i64>,
    /// The player's entry on that board after the post (null: skipped, or
    /// held without an entry).
    #[schema(required = true)]
    pub entry: Option<RankingEntry>,
    /// Whether the post created or changed the player's entry there.
    pub improved: bool,
    /// The period it counted in (null: skipped).
    #[schema(required = true)]
    pub period: Option<PeriodView>,
    /// The fed board's partition it landed on (null: none, or skipped).
    #[schema(required = true, value_type = Option<PartitionResult>)]
    pub partition: Option<Box<PartitionResult>>,
}

impl FeedResult {
    /// A fed post its board refused with `reason`.
    pub fn skipped(board: String, reason: &'static str) -> Self {
        Self {
            board,
            status: "skipped",
            reason: Some(reason),
            score_id: None,
            entry: None,
            improved: false,
            period: None,
            partition: None,
        }
    }

    /// A fed post its board took (accepted or held), from its own answer.
    pub fn taken(board: String, result: BoardScoreResult) -> Self {
        Self {
            board,
            status: result.score.status,
            reason: None,
            score_id: Some(result.score.id),
            entry: result.entry,
            improved: result.improved,
            period: Some(result.period),
            partition: result.partition,
        }
    }
}

/// A post in a player's history on a custom board.
#[derive(Debug, Serialize, ToSchema)]
pub struct BoardHistoryItem {
    pub id: i64,
    pub score: i64,
    /// The post's subscores, on a board with them (v4; absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscores: Option<Vec<i64>>,
    pub created_at: Timestamp,
    #[schema(required = true)]
    pub metadata: Option<Metadata>,
    /// `accepted`, `held` or `rejected`.
    #[schema(example = "accepted")]
    pub status: &'static str,
    /// The period the post counted in.
    pub period: PeriodView,
    /// A fed post: the board of the post that fed it (`best` for
    /// `/api/scores`); null for a direct post.
    #[schema(required = true)]
    pub via: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BoardHistory {
    pub scores: Vec<BoardHistoryItem>,
    #[schema(required = true)]
    pub next_before: Option<i64>,
}

/// A player's current entry on one board.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserBoardEntry {
    pub board: String,
    pub period: PeriodView,
    pub rank: i64,
    /// As on a ranking entry, among the board's entries in the period.
    pub top_percent: Hundredths,
    pub score: i64,
    /// The entry's subscores, on a board with them (v4; absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscores: Option<Vec<i64>>,
    #[schema(required = true)]
    pub achieved_at: Option<Timestamp>,
    #[schema(required = true)]
    pub metadata: Option<Metadata>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct UserBoards {
    pub entries: Vec<UserBoardEntry>,
}

/// A record of the audit log.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AuditEntry {
    pub id: i64,
    pub at: Timestamp,
    /// Who: `admin` (the admin token) or `key:<id>` (an admin key).
    pub actor: String,
    /// `ban`, `unban`, `delete_score`, `rename`, `create_board`,
    /// `update_board`, `delete_board`, `create_key`, `revoke_key` or
    /// `initialize`.
    pub action: String,
    /// What: `user:{id}`, `board:{id}` or `key:{id}`, or `data` for initialize.
    pub target: String,
    /// The action's details (a reason, a score id, old and new names…).
    #[schema(value_type = Object)]
    pub detail: serde_json::Value,
}

/// `GET /api/admin/audit`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AuditLog {
    pub entries: Vec<AuditEntry>,
    /// Pass as `before` for older records; null at the end.
    #[schema(required = true)]
    pub next_before: Option<i64>,
}

/// A server key, without its value.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ServerKeyView {
    pub id: i64,
    pub name: String,
    pub created_at: Timestamp,
    /// `server` (posts scores for players), `moderator` or `viewer`.
    #[schema(example = "server")]
    pub role: String,
}

impl From<ServerKeyRow> for ServerKeyView {
    fn from(row: ServerKeyRow) -> Self {
        Self { id: row.id, name: row.name, created_at: row.created_at, role: row.role }
    }
}

/// `POST /api/admin/keys`: the key itself, shown this once.
#[derive(Serialize, ToSchema)]
pub struct ServerKeyCreated {
    pub id: i64,
    pub name: String,
    /// `Authorization: Bearer <key>` on posts; only its hash is stored.
    #[schema(example = "hsk_Xq3…")]
    pub key: String,
    pub created_at: Timestamp,
    /// `server` (posts scores for players), `moderator` or `viewer`.
    #[schema(example = "server")]
    pub role: String,
}

/// A player as an admin's search finds them.
#[derive(Debug, Serialize, ToSchema)]
pub struct FoundPlayer {
    #[serde(flatten)]
    pub me: Me,
    /// Set while the player is banned (their ranks are null then).
    #[schema(required = true)]
    pub banned_at: Option<Timestamp>,
}

/// `GET /api/admin/users?q=`.
#[derive(Debug, Serialize, ToSchema)]
pub struct FoundPlayers {
    pub users: Vec<FoundPlayer>,
}

/// `GET /api/admin/whoami`.
#[derive(Debug, Serialize, ToSchema)]
pub struct WhoAmI {
    /// As the audit log names it: `admin` (the admin token) or `key:<id>`.
    #[schema(example = "key:3")]
    pub actor: String,
    /// `admin`, `moderator` or `viewer`.
    #[schema(example = "moderator")]
    pub role: &'static str,
}

/// `GET /api/admin/keys`: the live keys, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct ServerKeyList {
    pub keys: Vec<ServerKeyView>,
}

/// A post waiting for review (`GET /api/admin/held`).
#[derive(Debug, Serialize, ToSchema)]
pub struct HeldPost {
    /// The post (`status` `held`); posts of `/api/scores` have no metadata.
    pub score: BoardScoreView,
    /// The board whose log holds it: a custom board's id, or `best` for
    /// `/api/scores` (which feeds both built-in boards).
    pub board: String,
    pub user_id: i64,
    /// `hold_beyond` or `hold_jump`.
    pub rule: String,
    /// The period the post belongs to (and counts in once accepted).
    pub period: PeriodView,
    /// The boards whose fed posts were held with it (v4): the decision is
    /// theirs too.
    pub feeds: Vec<String>,
}

/// `GET /api/admin/held`: oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct HeldList {
    pub held: Vec<HeldPost>,
    /// Pass as `after` for the next page; null at the end.
    #[schema(required = true)]
    pub next_after: Option<i64>,
}

/// A reward granted at the close of a period (v4).
#[derive(Debug, Serialize, ToSchema)]
pub struct RewardView {
    pub id: i64,
    /// The player it was granted to.
    pub user_id: i64,
    /// The board whose close granted it (absent on a league's grant).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub board: Option<String>,
    /// The league whose close granted it (absent on a board's grant).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub league: Option<String>,
    pub period: PeriodView,
    /// The player's final rank (in their cohort, for a league).
    pub rank: i64,
    /// The band's reward as the close granted it.
    #[schema(value_type = Object, example = json!({"gems": 100}))]
    pub reward: serde_json::Value,
    pub granted_at: Timestamp,
    /// Null until claimed.
    #[schema(required = true)]
    pub claimed_at: Option<Timestamp>,
    /// A league's grant: the player's tier (its index, lowest 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<i64>,
    /// A league's grant: the player's cohort (its id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cohort: Option<String>,
}

/// A list of rewards, oldest grant first.
#[derive(Debug, Serialize, ToSchema)]
pub struct RewardList {
    pub rewards: Vec<RewardView>,
    /// Pass as `after` for the next page; null at the end.
    #[schema(required = true)]
    pub next_after: Option<i64>,
}

/// `POST /api/admin/held/{score_id}`: the post as decided, and the
/// player's entry on its board and period now (null when none).
#[derive(Debug, Serialize, ToSchema)]
pub struct Decided {
    pub score: BoardScoreView,
    #[schema(value_type = Option<RankingEntry>, required = true)]
    pub entry: Option<serde_json::Value>,
}

/// `POST /api/boards/{id}/entrants`: the period joined and its entrants now.
#[derive(Debug, Serialize, ToSchema)]
pub struct Joined {
    pub period: PeriodView,
    pub entrants: i64,
}

/// `GET /api/boards/{id}/me`: the player on a board, in the period in force.
#[derive(Debug, Serialize, ToSchema)]
pub struct BoardStanding {
    pub board: String,
    pub period: PeriodView,
    /// Whether the player joined the period (always false on a board
    /// without `join_required`, where nobody joins).
    pub joined: bool,
    /// The player's posts in the period, held ones included.
    pub attempts: i64,
    /// Null without `max_attempts`.
    #[schema(required = true)]
    pub attempts_left: Option<i64>,
    #[schema(value_type = Option<RankingEntry>, required = true)]
    pub entry: Option<serde_json::Value>,
}

/// A webhook (`GET /api/admin/webhooks`), without its secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookView {
    pub id: i64,
    #[schema(example = "https://game.example.com/hooks/hiscore")]
    pub url: String,
    /// Of `period.closed`, `period.amended`, `league.closed`, `score.held`, `reward.granted`.
    pub events: Vec<String>,
    pub created_at: Timestamp,
}

/// `POST /api/admin/webhooks`: the webhook with its signing secret, shown
/// this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookCreated {
    pub id: i64,
    pub url: String,
    pub events: Vec<String>,
    /// The HMAC-SHA256 key of `Hiscore-Signature` (docs/WEBHOOKS.md).
    #[schema(example = "whsec_Xq3…")]
    pub secret: String,
    pub created_at: Timestamp,
}

/// `GET /api/admin/webhooks`: oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookList {
    pub webhooks: Vec<WebhookView>,
}

/// One event's delivery to one webhook.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryView {
    /// The body's `id` and the `Hiscore-Delivery` header: the same on
    /// every attempt (receivers deduplicate by it).
    pub id: String,
    pub event: String,
    pub created_at: Timestamp,
    /// `pending`, `delivered`, or `failed` (retries ran out).
    #[schema(example = "delivered")]
    pub status: String,
    pub attempts: i64,
    /// The HTTP status of the last attempt; null when none came back
    /// (no connection, timeout) or no attempt was made yet.
    #[schema(required = true)]
    pub last_status: Option<i64>,
    /// When it is tried next; null once delivered or failed.
    #[schema(required = true)]
    pub next_attempt_at: Option<Timestamp>,
}

/// `GET /api/admin/webhooks/{id}/deliveries`: newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryList {
    pub deliveries: Vec<DeliveryView>,
    /// `before` for the next (older) page; null on the last.
    #[schema(required = true)]
    pub next_before: Option<i64>,
}

/// A league's tier.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TierRef {
    pub index: i64,
    #[schema(example = "Silver")]
    pub name: String,
}

/// A tier in the current period: its cohorts and players so far.
#[derive(Debug, Serialize, ToSchema)]
pub struct TierStats {
    pub index: i64,
    pub name: String,
    pub cohorts: i64,
    pub players: i64,
}

/// A league (`POST /api/admin/leagues`, `GET /api/leagues/{id}`): its
/// definition, its current period and, per tier, that period's cohorts and
/// players.
#[derive(Debug, Serialize, ToSchema)]
pub struct LeagueView {
    #[schema(example = "weekly")]
    pub id: String,
    pub name: String,
    /// The tiers' names, lowest first.
    pub tiers: Vec<String>,
    pub cohort_size: i64,
    pub promote: i64,
    pub demote: i64,
    #[schema(example = "desc")]
    pub order: &'static str,
    #[schema(example = "total")]
    pub operator: &'static str,
    pub min_score: i64,
    pub max_score: i64,
    #[schema(example = "0 0 * * 1")]
    pub reset: String,
    pub timezone: String,
    pub archive_periods: i64,
    pub created_at: Timestamp,
    pub period: PeriodView,
    pub tier_stats: Vec<TierStats>,
    /// Reward bands granted in each cohort when a period closes (v4).
    #[schema(value_type = Vec<RewardBand>)]
    pub rewards: Rewards,
}

/// `GET /api/leagues`: oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct LeagueList {
    pub leagues: Vec<LeagueView>,
}

/// A cohort member's entry: ranked within the cohort, with the zone its
/// rank is in now (`promote`, `demote` or `stay`: where it would move if
/// the period ended now).
#[derive(Debug, Serialize, ToSchema)]
pub struct CohortEntry {
    #[serde(flatten)]
    pub entry: RankingEntry,
    #[schema(example = "promote")]
    pub zone: &'static str,
}

/// `GET /api/leagues/{id}/cohorts/{cohort}`: the whole cohort, in board order.
#[derive(Debug, Serialize, ToSchema)]
pub struct CohortPage {
    pub league: String,
    pub period: PeriodView,
    pub tier: TierRef,
    pub cohort: String,
    pub entries: Vec<CohortEntry>,
    pub total_players: i64,
}

/// A closed period a member was placed in.
#[derive(Debug, Serialize, ToSchema)]
pub struct LeagueHistoryItem {
    /// The period's index.
    pub period: i64,
    pub tier: TierRef,
    pub cohort: String,
    /// The rank in the cohort as its entries stand now (a ban or a deleted
    /// post after the close changes it; null while the entry is not
    /// shown).
    #[schema(required = true)]
    pub rank: Option<i64>,
    /// `up`, `down` or `stay`, as made at the close (`stay` for a player
    /// whose entry was not shown then).
    #[schema(example = "up")]
    pub movement: String,
}

/// `GET /api/leagues/{id}/members/{user_id}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct LeagueMember {
    /// The tier the player plays in this period (placed or not yet).
    pub tier: TierRef,
    pub period: PeriodView,
    /// Null while not placed this period.
    #[schema(required = true)]
    pub cohort: Option<String>,
    /// The player's entry in their cohort, with its zone.
    #[schema(required = true)]
    pub entry: Option<CohortEntry>,
    /// The last 10 closed periods the player was placed in, newest first.
    pub history: Vec<LeagueHistoryItem>,
}

/// A league post's answer (201): the board post's answer, with the rank in
/// the cohort, and where the player is placed.
#[derive(Debug, Serialize, ToSchema)]
pub struct LeaguePostResult {
    #[serde(flatten)]
    pub post: BoardScoreResult,
    pub tier: TierRef,
    pub cohort: String,
}

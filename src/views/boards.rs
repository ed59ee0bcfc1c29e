//! Boards: their definitions, periods, partitions, posts and standings.

use serde::Serialize;
use utoipa::ToSchema;

use crate::boards::{BoardSpec, Period, PostRules, Tournament};
use crate::domain::{
    Board, Hundredths, PartitionValue, Ranking, RewardBand, Rewards, Subscore, Timestamp, DEFAULT_MAX_PARTITIONS,
};

use super::{Metadata, PeriodView, RankingEntry};

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

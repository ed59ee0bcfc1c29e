//! What a request body makes of a board's definition: the fields of a
//! `POST /api/admin/boards` validated into a [`Definition`], and the
//! fields a `PATCH` changes, each over its current value (a field left
//! out keeps it, a null one clears it). The catalog stores what comes out.

use serde_json::{Map, Value};

use crate::boards::{
    parse_timezone, Feeds, PostRules, Schedule, Tournament, DEFAULT_ARCHIVE_PERIODS, DEFAULT_MAX_SCORE,
    DEFAULT_MIN_SCORE, MAX_ARCHIVE_PERIODS, MAX_FEEDS, MAX_MIN_INTERVAL_MS, SCORE_LIMIT,
};
use crate::domain::{Board, BoardId, BoardName, Operator, Order, Partitioning, Rewards, Subscore, Timestamp, Writers};
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;

/// A board definition as `POST /api/admin/boards` sends it, validated.
pub(super) struct Definition {
    pub(super) id: BoardId,
    pub(super) name: BoardName,
    pub(super) order: Order,
    pub(super) operator: Operator,
    pub(super) reset: Option<String>,
    pub(super) timezone: String,
    pub(super) archive_periods: i64,
    pub(super) min_score: i64,
    pub(super) max_score: i64,
    pub(super) rules: PostRules,
    pub(super) tournament: Tournament,
    pub(super) rewards: Rewards,
    pub(super) subscores: Vec<Subscore>,
    pub(super) partitioning: Option<Partitioning>,
}

/// The most entrants a period may take, and attempts a player may make.
const MAX_ENTRANTS: i64 = 10_000_000;
const MAX_ATTEMPTS: i64 = 1_000_000;

/// The tournament fields (v3), each per period.
pub(super) const TOURNAMENT_FIELDS: [&str; 5] =
    ["join_required", "max_entrants", "max_attempts", "starts_at", "ends_at"];

/// The tournament fields a body sets over `fields` (v3): a field left out
/// keeps its value, a null one clears it.
pub(super) fn amended_tournament(body: &Map<String, Value>, fields: Tournament) -> Result<Tournament, ApiError> {
    let join_required = match body.get("join_required") {
        None => fields.join_required,
        Some(Value::Null) => false,
        Some(Value::Bool(required)) => *required,
        Some(_) => return Err(ErrorCode::InvalidJoinRequired.into()),
    };
    let time = |field: &str, current: Option<Timestamp>, code: ErrorCode| {
        amended(body, field, current, code, |v| v.as_str().and_then(Timestamp::parse_rfc3339))
    };
    let starts_at = time("starts_at", fields.starts_at, ErrorCode::InvalidStartsAt)?;
    let ends_at = time("ends_at", fields.ends_at, ErrorCode::InvalidEndsAt)?;
    if let (Some(starts_at), Some(ends_at)) = (starts_at, ends_at) {
        if ends_at <= starts_at {
            return Err(ErrorCode::InvalidEndsAt.into());
        }
    }
    Ok(Tournament {
        starts_at,
        ends_at,
        join_required,
        max_entrants: amended(body, "max_entrants", fields.max_entrants, ErrorCode::InvalidMaxEntrants, |v| {
            v.as_i64().filter(|n| (1..=MAX_ENTRANTS).contains(n))
        })?,
        max_attempts: amended(body, "max_attempts", fields.max_attempts, ErrorCode::InvalidMaxAttempts, |v| {
            v.as_i64().filter(|n| (1..=MAX_ATTEMPTS).contains(n))
        })?,
    })
}

/// The most a `hold_jump` may be: beyond it, no entry could be jumped over.
const MAX_HOLD_JUMP: f64 = 1_000_000.0;

/// The rule fields (`min_interval_ms`, `writers`, `hold_beyond`,
/// `hold_jump`) a body sets over `rules`: a field left out keeps its
/// value, a null one clears it.
pub(super) fn amended_rules(body: &Map<String, Value>, rules: PostRules) -> Result<PostRules, ApiError> {
    let writers = match body.get("writers") {
        None => rules.writers,
        raw => Writers::parse(raw)?,
    };
    Ok(PostRules {
        min_interval_ms: amended(
            body,
            "min_interval_ms",
            rules.min_interval_ms,
            ErrorCode::InvalidMinIntervalMs,
            |v| v.as_i64().filter(|ms| (1..=MAX_MIN_INTERVAL_MS).contains(ms)),
        )?,
        writers,
        hold_beyond: amended(body, "hold_beyond", rules.hold_beyond, ErrorCode::InvalidHoldBeyond, |v| {
            v.as_i64().filter(|bound| (-SCORE_LIMIT..=SCORE_LIMIT).contains(bound))
        })?,
        hold_jump: amended(body, "hold_jump", rules.hold_jump, ErrorCode::InvalidHoldJump, |v| {
            v.as_f64().filter(|jump| *jump > 1.0 && *jump <= MAX_HOLD_JUMP)
        })?,
        feeds: rules.feeds,
    })
}

/// Who a `feeds` list belongs to.
#[derive(Clone, Copy)]
pub(super) enum Feeder {
    /// A custom board (its number; 0 for one being created).
    Custom(i64),
    Builtin(Board),
}

/// The `feeds` a body sets for `feeder` (left out: `current`): ids of
/// custom boards, none a league, the board itself, a duplicate, a board
/// with feeds of its own, or a board whose subscores are neither none nor
/// the feeder's (`subscores`: same count and orders), at most
/// [`MAX_FEEDS`]; a board that another board feeds has none (one level: a
/// fed post feeds nothing), and `best` and `total` together feed at most
/// [`MAX_FEEDS`].
pub(super) fn amended_feeds(
    state: &AppState,
    body: &Map<String, Value>,
    (feeder, subscores): (Feeder, &[Subscore]),
    current: Feeds,
) -> Result<Feeds, ApiError> {
    let Some(raw) = body.get("feeds") else { return Ok(current) };
    let invalid = |why: String| ApiError::with_message(ErrorCode::InvalidFeeds, why);
    let Some(ids) = raw.as_array() else { return Err(invalid("feeds must be a list of board ids".into())) };
    if ids.len() > MAX_FEEDS {
        return Err(invalid(format!("a board feeds at most {MAX_FEEDS} boards")));
    }
    let mut numbers = Vec::with_capacity(ids.len());
    for id in ids {
        let Some(id) = id.as_str() else { return Err(invalid("feeds must be a list of board ids".into())) };
        let target = state.boards.get(id).filter(|board| !board.spec.league);
        let Some(target) = target else { return Err(invalid(format!("`{id}` is not a custom board"))) };
        let number = target.spec.number;
        if matches!(feeder, Feeder::Custom(own) if own == number) {
            return Err(invalid("a board does not feed itself".into()));
        }
        if numbers.contains(&number) {
            return Err(invalid(format!("`{id}` is named twice")));
        }
        if !target.spec.rules.feeds.numbers().is_empty() {
            return Err(invalid(format!("`{id}` feeds boards of its own: a fed post feeds nothing further")));
        }
        let orders = |list: &[Subscore]| list.iter().map(|subscore| subscore.order).collect::<Vec<_>>();
        if !target.spec.subscores.is_empty() && orders(&target.spec.subscores) != orders(subscores) {
            return Err(invalid(format!("`{id}` ranks by other subscores than this board")));
        }
        numbers.push(number);
    }
    let feeds = Feeds::new(&numbers).ok_or_else(|| invalid(format!("a board feeds at most {MAX_FEEDS} boards")))?;
    match feeder {
        Feeder::Custom(own) if !numbers.is_empty() => {
            let fed = |rules: PostRules| rules.feeds.contains(own);
            let by_custom = state.boards.all().iter().any(|board| fed(board.spec.rules));
            if by_custom || Board::BUILTIN.iter().any(|b| fed(state.boards.builtin_rules(*b))) {
                return Err(invalid("another board feeds this one: a fed board feeds nothing".into()));
            }
        }
        Feeder::Custom(_) => {}
        Feeder::Builtin(board) => {
            let other = Board::BUILTIN.into_iter().find(|b| *b != board).unwrap_or(board);
            if feeds.union(&state.boards.builtin_rules(other).feeds).is_none() {
                return Err(invalid(format!("`best` and `total` together feed at most {MAX_FEEDS} boards")));
            }
        }
    }
    Ok(feeds)
}

/// A nullable field of a change: left out, `current`; null, cleared; else
/// what `parse` makes of it, or `code`.
fn amended<T>(
    body: &Map<String, Value>,
    field: &str,
    current: Option<T>,
    code: ErrorCode,
    parse: impl FnOnce(&Value) -> Option<T>,
) -> Result<Option<T>, ApiError> {
    match body.get(field) {
        None => Ok(current),
        Some(Value::Null) => Ok(None),
        Some(value) => parse(value).map(Some).ok_or_else(|| code.into()),
    }
}

fn integer(
    raw: Option<&Value>,
    default: i64,
    range: std::ops::RangeInclusive<i64>,
    code: ErrorCode,
) -> Result<i64, ApiError> {
    match raw {
        None | Some(Value::Null) => Ok(default),
        Some(value) => value.as_i64().filter(|n| range.contains(n)).ok_or_else(|| code.into()),
    }
}

/// The fields a board takes at creation only, each with the code `PATCH`
/// answers for it (v4: "any other field is 422 `invalid_<field>`").
const FIXED_AT_CREATION: [(&str, ErrorCode); 12] = [
    ("id", ErrorCode::InvalidId),
    ("order", ErrorCode::InvalidOrder),
    ("operator", ErrorCode::InvalidOperator),
    ("reset", ErrorCode::InvalidReset),
    ("timezone", ErrorCode::InvalidTimezone),
    ("archive_periods", ErrorCode::InvalidArchivePeriods),
    ("min_score", ErrorCode::InvalidMinScore),
    ("max_score", ErrorCode::InvalidMaxScore),
    ("subscores", ErrorCode::InvalidSubscores),
    ("partition_by", ErrorCode::InvalidPartitionBy),
    ("max_partitions", ErrorCode::InvalidMaxPartitions),
    ("partition_values", ErrorCode::InvalidPartitionValues),
];

/// 422 for a `PATCH` that names a field fixed at creation: refused, not
/// silently kept as it was.
pub(super) fn refuse_fixed_fields(body: &Map<String, Value>) -> Result<(), ApiError> {
    match FIXED_AT_CREATION.iter().find(|(field, _)| body.contains_key(*field)) {
        Some((field, code)) => {
            Err(ApiError::with_message(*code, format!("`{field}` is set at creation and does not change")))
        }
        None => Ok(()),
    }
}

pub(super) fn definition(body: &Map<String, Value>) -> Result<Definition, ApiError> {
    let id = BoardId::parse(body.get("id"))?;
    if Board::builtin(id.as_str()).is_some() {
        return Err(ApiError::with_message(ErrorCode::BoardExists, "`best` and `total` are the built-in boards"));
    }
    let name = BoardName::parse(body.get("name"))?;
    let order = Order::parse(body.get("order"))?;
    let operator = Operator::parse(body.get("operator"))?;
    if operator == Operator::Total && order == Order::Asc {
        return Err(ApiError::with_message(
            ErrorCode::InvalidOperator,
            "`total` boards rank higher sums first: `desc` only",
        ));
    }
    let timezone = match body.get("timezone") {
        None | Some(Value::Null) => "UTC".to_owned(),
        Some(Value::String(name)) => name.clone(),
        Some(_) => return Err(ErrorCode::InvalidTimezone.into()),
    };
    let tz = parse_timezone(&timezone)?;
    let reset = match body.get("reset") {
        None | Some(Value::Null) => None,
        Some(Value::String(pattern)) => {
            Schedule::parse(pattern, tz)?;
            Some(pattern.trim().to_owned())
        }
        Some(_) => return Err(ErrorCode::InvalidReset.into()),
    };
    let archive_periods = integer(
        body.get("archive_periods"),
        DEFAULT_ARCHIVE_PERIODS,
        0..=MAX_ARCHIVE_PERIODS,
        ErrorCode::InvalidArchivePeriods,
    )?;
    let min_score =
        integer(body.get("min_score"), DEFAULT_MIN_SCORE, -SCORE_LIMIT..=SCORE_LIMIT, ErrorCode::InvalidMinScore)?;
    let max_score =
        integer(body.get("max_score"), DEFAULT_MAX_SCORE, min_score..=SCORE_LIMIT, ErrorCode::InvalidMaxScore)?;
    let rules = amended_rules(body, PostRules::default())?;
    let tournament = amended_tournament(body, Tournament::default())?;
    let rewards = Rewards::parse(body.get("rewards"))?;
    let subscores = Subscore::parse_list(body.get("subscores"))?;
    if operator == Operator::Total && !subscores.is_empty() {
        return Err(ApiError::with_message(ErrorCode::InvalidSubscores, "a `total` board has no subscores"));
    }
    let partitioning =
        Partitioning::parse(body.get("partition_by"), body.get("max_partitions"), body.get("partition_values"))?;
    Ok(Definition {
        id,
        name,
        order,
        operator,
        reset,
        timezone,
        archive_periods,
        min_score,
        max_score,
        rules,
        tournament,
        rewards,
        subscores,
        partitioning,
    })
}

/// The bands a `PATCH` leaves: the body's whole list, or `current`.
pub(super) fn amended_rewards(body: &Map<String, Value>, current: &Rewards) -> Result<Rewards, ApiError> {
    match body.get("rewards") {
        None => Ok(current.clone()),
        raw => Rewards::parse(raw),
    }
}

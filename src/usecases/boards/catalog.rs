//! The catalog of custom boards: creating, renaming, deleting, listing
//! them, and the periods each keeps; a board as stored, read back into
//! its spec. (What a request's body makes of a definition: `definition`.)

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::definition::{
    amended_feeds, amended_rewards, amended_rules, amended_tournament, definition, refuse_fixed_fields, Definition,
    Feeder, TOURNAMENT_FIELDS,
};
use super::{resolve, resolve_custom, BoardRef};
use crate::boards::{BoardSpec, CustomBoard, Feeds, PartitionEntry, Period, PostRules, Terms, Tournament};
use crate::domain::{
    BandMatch, Board, BoardName, Hundredths, Operator, Order, Partitioning, RewardBand, Rewards, Timestamp, Writers,
    DEFAULT_MAX_PARTITIONS,
};
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::store::{
    BandRow, BoardRow, BuiltinRulesRow, LadderRow, NewBoard, PeriodRow, RulesRow, TermsChange, TermsRow, TournamentRow,
};
use crate::usecases::moderation::{audited, Actor, Audit};
use crate::views::{BoardList, BoardView, PeriodEntry, PeriodList};

/// How long before the period it comes into force in a change to a
/// tournament's fields is made at least: every instance reloads the
/// catalog within a second of a change, so all of them apply it from the
/// same period.
const CHANGE_NOTICE_MS: i64 = 5_000;

/// Rules as stored; `None` for a `writers` value this version does not know.
fn rules_of(row: &RulesRow) -> Option<PostRules> {
    Some(PostRules {
        min_interval_ms: row.min_interval_ms,
        writers: Writers::from_name(&row.writers)?,
        hold_beyond: row.hold_beyond,
        hold_jump: row.hold_jump,
        feeds: Feeds::new(&serde_json::from_str::<Vec<i64>>(&row.feeds).ok()?)?,
    })
}

fn row_of(rules: PostRules) -> RulesRow {
    RulesRow {
        min_interval_ms: rules.min_interval_ms,
        writers: rules.writers.as_str().to_owned(),
        hold_beyond: rules.hold_beyond,
        hold_jump: rules.hold_jump,
        feeds: serde_json::Value::from(rules.feeds.numbers()).to_string(),
    }
}

/// Reward bands as stored (`board_rewards`), for board `number`.
fn band_rows(number: i64, rewards: &Rewards) -> Vec<BandRow> {
    rewards
        .bands()
        .iter()
        .enumerate()
        .map(|(index, band)| {
            let (rank_from, rank_to, top_percent) = match band.matches {
                BandMatch::Ranks(a, b) => (Some(a), Some(b), None),
                BandMatch::TopPercent(percent) => (None, None, Some(i64::from(percent.hundredths()))),
            };
            BandRow { board: number, band: index as i64, rank_from, rank_to, top_percent, reward: band.reward.clone() }
        })
        .collect()
}

/// Reward bands from their rows (in band order); a row this version
/// cannot read is left out.
pub fn rewards_of(rows: &[BandRow]) -> Rewards {
    let band = |row: &BandRow| {
        let matches = match (row.rank_from, row.rank_to, row.top_percent) {
            (Some(a), Some(b), None) => BandMatch::Ranks(a, b),
            (None, None, Some(hundredths)) => BandMatch::TopPercent(Hundredths::from_hundredths(hundredths)?),
            _ => return None,
        };
        Some(RewardBand { matches, reward: row.reward.clone() })
    };
    Rewards::new(rows.iter().filter_map(band).collect())
}

fn tournament_of(row: &TournamentRow) -> Tournament {
    Tournament {
        join_required: row.join_required != 0,
        max_entrants: row.max_entrants,
        max_attempts: row.max_attempts,
        starts_at: row.starts_at,
        ends_at: row.ends_at,
    }
}

/// A board as stored, with the changes to its tournament's fields and its
/// reward bands.
fn spec_of(row: BoardRow, changes: &[TermsRow], rewards: Rewards) -> Result<BoardSpec, ApiError> {
    let board_id = row.id.clone();
    let corrupt = |what: &str| ApiError::internal(anyhow::anyhow!("board {board_id}: bad {what} in the catalog"));
    let order = match row.sort_order.as_str() {
        "asc" => Order::Asc,
        "desc" => Order::Desc,
        _ => return Err(corrupt("sort_order")),
    };
    let operator = Operator::parse(Some(&Value::String(row.operator.clone()))).map_err(|_| corrupt("operator"))?;
    let rules = rules_of(&row.rules).ok_or_else(|| corrupt("writers"))?;
    Ok(BoardSpec {
        number: row.number,
        id: row.id,
        name: row.name,
        order,
        operator,
        reset: row.reset,
        timezone: row.timezone,
        archive_periods: row.archive_periods,
        min_score: row.min_score,
        max_score: row.max_score,
        created_at: row.created_at,
        rules,
        terms: Terms::new(
            tournament_of(&row.tournament),
            changes.iter().map(|change| (change.from_period, tournament_of(&change.fields))).collect(),
        ),
        league: row.league != 0,
        rewards,
        subscores: serde_json::from_str(&row.subscores).map_err(|_| corrupt("subscores"))?,
        partitioning: match row.partition_by {
            Some(field) => Some(
                Partitioning::from_stored(field, row.max_partitions, row.partition_values.as_deref())
                    .ok_or_else(|| corrupt("partition_values"))?,
            ),
            None => None,
        },
        partition_of: None,
    })
}

/// The built-in boards' rules as stored (unknown rows are skipped).
fn builtin_rules_of(rows: Vec<BuiltinRulesRow>) -> HashMap<Board, PostRules> {
    rows.into_iter().filter_map(|row| Some((Board::builtin(&row.board)?, rules_of(&row.rules)?))).collect()
}

/// Loads the catalog from the database into this instance's registry
/// (at start, and when another instance changed it).
pub async fn reload_catalog(state: &AppState) -> Result<(), ApiError> {
    let rows = state.store.boards().await?;
    let known: HashMap<i64, PeriodRow> =
        state.store.latest_periods().await?.into_iter().map(|row| (row.board, row)).collect();
    let mut changes: HashMap<i64, Vec<TermsRow>> = HashMap::new();
    for change in state.store.board_terms().await? {
        changes.entry(change.board).or_default().push(change);
    }
    let mut bands: HashMap<i64, Vec<BandRow>> = HashMap::new();
    for band in state.store.board_rewards().await? {
        bands.entry(band.board).or_default().push(band);
    }
    let mut boards = Vec::with_capacity(rows.len());
    let mut partitions = Vec::new();
    for row in rows {
        let number = row.number;
        if let Some(of) = row.partition() {
            partitions.push(PartitionEntry { number, of });
            continue;
        }
        let created_at = row.created_at;
        let rewards = rewards_of(bands.get(&number).map_or(&[], Vec::as_slice));
        let spec = spec_of(row, changes.get(&number).map_or(&[], Vec::as_slice), rewards)?;
        let known = known.get(&number).map_or(Period { index: 0, start: created_at, end: None }, |row| Period {
            index: row.period,
            start: row.starts_at,
            end: row.ends_at,
        });
        match CustomBoard::new(spec, known) {
            Ok(board) => boards.push(board),
            Err(error) => tracing::error!(number, %error, "a board of the catalog cannot be loaded"),
        }
    }
    let builtin_rules = builtin_rules_of(state.store.builtin_rules().await?);
    state.boards.replace(boards, partitions, builtin_rules);
    Ok(())
}

/// Creates a custom board.
pub async fn create(state: &AppState, actor: &Actor, body: &Map<String, Value>) -> Result<BoardView, ApiError> {
    let mut definition = definition(body)?;
    let feeder = (Feeder::Custom(0), definition.subscores.as_slice());
    definition.rules.feeds = amended_feeds(state, body, feeder, Feeds::default())?;
    let board = insert(state, actor, &definition, None).await?;
    Ok(BoardView::custom(&board.spec, board.period_at(Timestamp::now()), Some(0), feed_ids(state, board.spec.rules)))
}

/// Creates a league's own board from the board fields of the league's
/// definition (`reset` required), with its ladder, in one transaction.
pub async fn create_for_league(
    state: &AppState,
    actor: &Actor,
    body: &Map<String, Value>,
    ladder: &LadderRow,
) -> Result<Arc<CustomBoard>, ApiError> {
    let definition = definition(body).map_err(|error| match error.code() {
        ErrorCode::BoardExists => ErrorCode::LeagueExists.into(),
        _ => error,
    })?;
    if definition.reset.is_none() {
        return Err(ApiError::with_message(
            ErrorCode::InvalidReset,
            "a league needs a reset: its periods are its rounds",
        ));
    }

    insert(state, actor, &definition, Some(ladder)).await.map_err(|error| match error.code() {
        ErrorCode::BoardExists => ErrorCode::LeagueExists.into(),
        _ => error,
    })
}

/// Stores a board (a league's own with its ladder) with its audit record
/// (`create_board`, or `create_league`: the view of the board, and the
/// ladder), and adds it to this instance's registry and rank engine.
async fn insert(
    state: &AppState,
    actor: &Actor,
    definition: &Definition,
    league: Option<&LadderRow>,
) -> Result<Arc<CustomBoard>, ApiError> {
    let created_at = Timestamp::now();
    let rules_row = row_of(definition.rules);
    let band_rows = band_rows(0, &definition.rewards);
    let subscores_json = serde_json::to_string(&definition.subscores).map_err(ApiError::internal)?;
    let partitioning = definition.partitioning.as_ref();
    let partition_values = partitioning.and_then(Partitioning::values_json);
    let new = NewBoard {
        id: definition.id.as_str(),
        name: definition.name.as_str(),
        sort_order: definition.order.as_str(),
        operator: definition.operator.as_str(),
        reset: definition.reset.as_deref(),
        timezone: &definition.timezone,
        archive_periods: definition.archive_periods,
        min_score: definition.min_score,
        max_score: definition.max_score,
        created_at,
        rules: &rules_row,
        join_required: definition.tournament.join_required,
        max_entrants: definition.tournament.max_entrants,
        max_attempts: definition.tournament.max_attempts,
        starts_at: definition.tournament.starts_at,
        ends_at: definition.tournament.ends_at,
        league,
        rewards: &band_rows,
        subscores: &subscores_json,
        partition_by: partitioning.map(|p| p.field.as_str()),
        max_partitions: partitioning.map_or(DEFAULT_MAX_PARTITIONS, |p| p.max_partitions),
        partition_values: partition_values.as_deref(),
    };
    let spec = BoardSpec {
        number: 0,
        id: definition.id.as_str().to_owned(),
        name: definition.name.as_str().to_owned(),
        order: definition.order,
        operator: definition.operator,
        reset: definition.reset.clone(),
        timezone: definition.timezone.clone(),
        archive_periods: definition.archive_periods,
        min_score: definition.min_score,
        max_score: definition.max_score,
        created_at,
        rules: definition.rules,
        terms: Terms::new(definition.tournament, Vec::new()),
        league: league.is_some(),
        rewards: definition.rewards.clone(),
        subscores: definition.subscores.clone(),
        partitioning: definition.partitioning.clone(),
        partition_of: None,
    };
    let first = Period { index: 0, start: created_at, end: None };
    let first_end = CustomBoard::new(spec.clone(), first)?.period_at(created_at).end;
    let mut detail = serde_json::to_value(BoardView::custom(
        &spec,
        Period { end: first_end, ..first },
        Some(0),
        feed_ids(state, spec.rules),
    ))
    .unwrap_or_default();
    let (action, target) = match league {
        Some(ladder) => {
            detail["ladder"] = serde_json::json!({"tiers": serde_json::from_str::<Value>(&ladder.tiers).unwrap_or_default(),
                "cohort_size": ladder.cohort_size, "promote": ladder.promote, "demote": ladder.demote});
            ("create_league", format!("league:{}", spec.id))
        }
        None => ("create_board", format!("board:{}", spec.id)),
    };
    let number = audited(state, actor, action, async |conn| {
        let number = state.store.insert_board(conn, &new, first_end).await?;
        Ok((number, Audit { target: target.clone(), detail: detail.clone() }))
    })
    .await?;
    let board = state.boards.insert(CustomBoard::new(BoardSpec { number, ..spec }, first)?);
    state.ranks.add_board(&board).await;
    Ok(board)
}

/// `PATCH`: a custom board's name, rules and tournament fields, or a
/// built-in board's rules (the rest of a definition is fixed at creation).
pub async fn update(
    state: &AppState,
    actor: &Actor,
    id: &str,
    body: &Map<String, Value>,
) -> Result<BoardView, ApiError> {
    let board = match resolve(state, id).await? {
        BoardRef::Builtin(board) => return update_builtin(state, actor, board, body).await,
        BoardRef::Custom(board) => board,
    };
    refuse_fixed_fields(body)?;
    let name = match body.get("name") {
        None => board.spec.name.clone(),
        raw => BoardName::parse(raw)?.as_str().to_owned(),
    };
    let mut rules = amended_rules(body, board.spec.rules)?;
    let feeder = (Feeder::Custom(board.spec.number), board.spec.subscores.as_slice());
    rules.feeds = amended_feeds(state, body, feeder, rules.feeds)?;
    let change = terms_change(&board, body, Timestamp::now())?;
    let terms = match &change {
        Some(change) => board.spec.terms.with_change(change.row.from_period, tournament_of(&change.row.fields)),
        None => board.spec.terms.clone(),
    };
    let rewards = amended_rewards(body, &board.spec.rewards)?;
    let band_rows = band_rows(board.spec.number, &rewards);
    let new_bands = body.contains_key("rewards").then_some(band_rows.as_slice());
    audited(state, actor, "update_board", async |conn| {
        if !state.store.amend_board(conn, id, &name, &row_of(rules), new_bands, change.as_ref()).await? {
            return Err(ErrorCode::BoardNotFound.into());
        }
        Ok(((), Audit { target: format!("board:{id}"), detail: Value::Object(body.clone()) }))
    })
    .await?;
    state.boards.amend(id, &name, rules, terms, rewards);
    let board = state.boards.get(id).ok_or(ErrorCode::BoardNotFound)?;
    custom_view(state, &board).await
}

/// The change a body makes to a tournament's fields, if any. A change
/// applies to the periods that have not started: the period in force
/// too while its window has not opened (nothing can have been posted or
/// joined in it); otherwise the first period that starts
/// `CHANGE_NOTICE_MS` from now or later. A period in force that has begun
/// and never ends leaves no period to change (409 `period_started`).
fn terms_change(
    board: &CustomBoard,
    body: &Map<String, Value>,
    now: Timestamp,
) -> Result<Option<TermsChange>, ApiError> {
    if !TOURNAMENT_FIELDS.iter().any(|field| body.contains_key(*field)) {
        return Ok(None);
    }
    let latest = board.spec.terms.latest();
    let fields = amended_tournament(body, latest)?;
    if fields == latest {
        return Ok(None);
    }
    let current = board.period_at(now);
    let from = if board.tournament(current.index).opens_after(now) {
        current.index
    } else {
        board
            .first_period_from(now, Timestamp::from_millis(now.millis() + CHANGE_NOTICE_MS))
            .ok_or(ErrorCode::PeriodStarted)?
    };
    // The period in force ends where its terms (the change's, if it is in
    // force already) say.
    let terms = board.spec.terms.with_change(from, fields);
    let current_end = CustomBoard::new(BoardSpec { terms, ..board.spec.clone() }, current)?.period_at(now).end;
    let row = TermsRow {
        board: board.spec.number,
        from_period: from,
        fields: TournamentRow {
            join_required: i64::from(fields.join_required),
            max_entrants: fields.max_entrants,
            max_attempts: fields.max_attempts,
            starts_at: fields.starts_at,
            ends_at: fields.ends_at,
        },
    };
    Ok(Some(TermsChange { row, current: Period { end: current_end, ..current } }))
}

/// A built-in board takes its rule fields and nothing else.
async fn update_builtin(
    state: &AppState,
    actor: &Actor,
    board: Board,
    body: &Map<String, Value>,
) -> Result<BoardView, ApiError> {
    const RULE_FIELDS: [&str; 5] = ["min_interval_ms", "writers", "hold_beyond", "hold_jump", "feeds"];
    if body.keys().any(|field| !RULE_FIELDS.contains(&field.as_str())) {
        return Err(ErrorCode::BuiltinBoard.into());
    }
    let mut rules = amended_rules(body, state.boards.builtin_rules(board))?;
    rules.feeds = amended_feeds(state, body, (Feeder::Builtin(board), &[]), rules.feeds)?;
    let id = board.to_string();
    let row = BuiltinRulesRow { board: id.clone(), rules: row_of(rules) };
    audited(state, actor, "update_board", async |conn| {
        state.store.set_builtin_rules(conn, &row).await?;
        Ok(((), Audit { target: format!("board:{id}"), detail: Value::Object(body.clone()) }))
    })
    .await?;
    state.boards.set_builtin_rules(board, rules);
    Ok(BoardView::builtin(board, state.settings.max_score, rules, feed_ids(state, rules)))
}

/// A league's `PATCH` (its name and reward bands, its own board's):
/// audited as `update_league`.
pub async fn amend_for_league(
    state: &AppState,
    actor: &Actor,
    board: &CustomBoard,
    body: &Map<String, Value>,
) -> Result<(), ApiError> {
    let id = &board.spec.id;
    let name = match body.get("name") {
        None => board.spec.name.clone(),
        raw => BoardName::parse(raw)?.as_str().to_owned(),
    };
    let rewards = amended_rewards(body, &board.spec.rewards)?;
    let band_rows = band_rows(board.spec.number, &rewards);
    let new_bands = body.contains_key("rewards").then_some(band_rows.as_slice());
    audited(state, actor, "update_league", async |conn| {
        if !state.store.amend_board(conn, id, &name, &row_of(board.spec.rules), new_bands, None).await? {
            return Err(ErrorCode::LeagueNotFound.into());
        }
        Ok(((), Audit { target: format!("league:{id}"), detail: Value::Object(body.clone()) }))
    })
    .await?;
    state.boards.amend(id, &name, board.spec.rules, board.spec.terms.clone(), rewards);
    Ok(())
}

/// Deletes a custom board with everything posted to it.
pub async fn delete(state: &AppState, actor: &Actor, id: &str) -> Result<(), ApiError> {
    let board = resolve_custom(state, id).await?;
    delete_custom(state, actor, &board).await
}

/// Deletes a custom board (a league's own too): its rows go by chunks
/// afterwards (`purges`).
pub async fn delete_custom(state: &AppState, actor: &Actor, board: &CustomBoard) -> Result<(), ApiError> {
    let (action, target) = match board.spec.league {
        true => ("delete_league", format!("league:{}", board.spec.id)),
        false => ("delete_board", format!("board:{}", board.spec.id)),
    };
    audited(state, actor, action, async |conn| {
        if !state.store.delete_board(conn, board.spec.number).await? {
            return Err(ErrorCode::BoardNotFound.into());
        }
        Ok(((), Audit { target: target.clone(), detail: serde_json::json!({}) }))
    })
    .await?;
    let partitions: Vec<i64> = state
        .boards
        .all_ranked()
        .iter()
        .filter(|partition| partition.spec.partition_of.as_ref().is_some_and(|of| of.board == board.spec.number))
        .map(|partition| partition.spec.number)
        .collect();
    state.boards.remove(&board.spec.id);
    for number in std::iter::once(board.spec.number).chain(partitions) {
        state.ranks.forget_board(number).await;
    }
    state.caches.renderings_changed();
    Ok(())
}

/// Every board, the built-ins first: one read for the entrants of every
/// tournament's current period.
pub async fn list(state: &AppState) -> Result<BoardList, ApiError> {
    let now = Timestamp::now();
    let builtins = Board::BUILTIN.iter().map(|board| builtin_view(state, *board));
    let boards: Vec<_> = state
        .boards
        .all()
        .into_iter()
        .filter(|board| !board.spec.league)
        .map(|board| (board.period_at(now), board))
        .collect();
    let joined: Vec<(i64, i64)> = boards
        .iter()
        .filter(|(period, board)| board.tournament(period.index).join_required)
        .map(|(period, board)| (board.spec.number, period.index))
        .collect();
    let entrants = state.store.entrant_counts(&joined).await?;
    let custom = boards.iter().map(|(period, board)| {
        let entrants = entrants.get(&board.spec.number).copied();
        BoardView::custom(&board.spec, *period, entrants, feed_ids(state, board.spec.rules))
    });
    Ok(BoardList { boards: builtins.chain(custom).collect() })
}

/// A custom board as the API shows it, with its current period's entrants.
async fn custom_view(state: &AppState, board: &CustomBoard) -> Result<BoardView, ApiError> {
    let period = board.period_at(Timestamp::now());
    let entrants = if board.tournament(period.index).join_required {
        state.store.entrant_counts(&[(board.spec.number, period.index)]).await?.get(&board.spec.number).copied()
    } else {
        None
    };
    Ok(BoardView::custom(&board.spec, period, entrants, feed_ids(state, board.spec.rules)))
}

fn builtin_view(state: &AppState, board: Board) -> BoardView {
    let rules = state.boards.builtin_rules(board);
    BoardView::builtin(board, state.settings.max_score, rules, feed_ids(state, rules))
}

/// The ids of the boards a board feeds (deleted ones left out).
fn feed_ids(state: &AppState, rules: PostRules) -> Vec<String> {
    state.boards.ids_of(&rules.feeds)
}

/// One board.
pub async fn get(state: &AppState, id: &str) -> Result<BoardView, ApiError> {
    Ok(match resolve(state, id).await? {
        BoardRef::Builtin(board) => builtin_view(state, board),
        BoardRef::Custom(custom) => custom_view(state, &custom).await?,
    })
}

/// A board's kept periods, newest first, the current one included.
pub async fn periods(state: &AppState, id: &str, before: Option<i64>, limit: i64) -> Result<PeriodList, ApiError> {
    let custom = match resolve(state, id).await? {
        BoardRef::Builtin(_) => {
            let mut conn = state.store.conn().await?;
            let players = state.store.builtin_players(&mut conn).await?;
            let periods = if before.is_none_or(|before| before > 0) {
                vec![PeriodEntry { index: 0, start: None, end: None, players }]
            } else {
                Vec::new()
            };
            return Ok(PeriodList { periods, next_before: None });
        }
        BoardRef::Custom(custom) => custom,
    };
    let current = custom.period_at(Timestamp::now());
    let oldest = (current.index - custom.spec.archive_periods).max(0);
    let before = before.unwrap_or(i64::MAX).min(current.index + 1);
    let rows = state.store.periods(custom.spec.number, before, limit + 1).await?;
    let mut periods: HashMap<i64, PeriodEntry> = rows
        .into_iter()
        .map(|row| {
            (
                row.period,
                PeriodEntry { index: row.period, start: Some(row.starts_at), end: row.ends_at, players: row.players },
            )
        })
        .collect();
    // Periods this instance saw begin that no post reached yet.
    for period in custom.recent_periods() {
        periods.entry(period.index).or_insert(PeriodEntry {
            index: period.index,
            start: Some(period.start),
            end: period.end,
            players: 0,
        });
    }
    let mut periods: Vec<PeriodEntry> =
        periods.into_values().filter(|p| p.index < before && p.index >= oldest).collect();
    periods.sort_by_key(|period| std::cmp::Reverse(period.index));
    let has_more = periods.len() as i64 > limit;
    periods.truncate(usize::try_from(limit).unwrap_or(0));
    let next_before = if has_more { periods.last().map(|period| period.index) } else { None };
    Ok(PeriodList { periods, next_before })
}

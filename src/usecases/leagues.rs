//! Leagues (v3): a ladder of tiers played in cohorts, on a board of the
//! league's own (its period clock, posts and entries). A player's first
//! post in a period places them (`place`); when the period closes, the
//! moves are made once, in the closing transaction (`usecases::closings`).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::boards::CustomBoard;
use crate::domain::{competition_ranks, BoardKey, Hundredths, IdempotencyKey, Ladder, Timestamp};
use crate::error::{ApiError, ErrorCode};
use crate::scoring::Posted;
use crate::state::AppState;
use crate::store::{CohortMember, LadderRow, NewPlacement, Placement};
use crate::usecases::account_changes::{in_transaction, Failure};
use crate::usecases::boards::{amend_for_league, create_for_league, delete_custom, find_custom, post_to};
use crate::usecases::closings;
use crate::usecases::moderation::Actor;
use crate::usecases::rankings::names;
use crate::usecases::scores::Author;
use crate::views::{
    CohortEntry, CohortPage, LeagueHistoryItem, LeagueList, LeagueMember, LeagueView, PeriodView, RankingEntry,
    TierRef, TierStats,
};

/// The closed periods a member's history shows.
const HISTORY: i64 = 10;

/// A league: its board and its ladder.
struct League {
    board: Arc<CustomBoard>,
    ladder: Ladder,
}

impl League {
    fn number(&self) -> i64 {
        self.board.spec.number
    }

    fn tier(&self, index: i64) -> TierRef {
        TierRef { index, name: self.ladder.tier_name(index).to_owned() }
    }
}

/// The league with this id: 404 `league_not_found` when there is none.
async fn find(state: &AppState, id: &str) -> Result<League, ApiError> {
    let board = find_custom(state, id).await?.filter(|board| board.spec.league).ok_or(ErrorCode::LeagueNotFound)?;
    let row = state.store.ladder(board.spec.number).await?.ok_or(ErrorCode::LeagueNotFound)?;
    Ok(League { board, ladder: row.ladder() })
}

/// A cohort's id (see [`crate::domain::cohort_id`]).
fn cohort_id(period: i64, placement: Placement) -> String {
    crate::domain::cohort_id(period, placement.tier, placement.cohort)
}

fn parse_cohort_id(id: &str) -> Option<(i64, Placement)> {
    let mut parts = id.split('-').map(|part| part.parse::<i64>().ok().filter(|n| *n >= 0 && !part.starts_with('+')));
    let (period, tier, cohort) = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some((period, Placement { tier, cohort }))
}

/// The board fields a league's definition takes (a board's others, its
/// rules and tournament fields, are not a league's and are ignored).
const BOARD_FIELDS: [&str; 10] =
    ["id", "name", "order", "operator", "min_score", "max_score", "reset", "timezone", "archive_periods", "rewards"];

/// `POST /api/admin/leagues`.
pub async fn create(state: &AppState, actor: &Actor, body: &Map<String, Value>) -> Result<LeagueView, ApiError> {
    let ladder = Ladder::parse(body)?;
    let row = LadderRow::of(&ladder);
    let board_fields: Map<String, Value> = body
        .iter()
        .filter(|(field, _)| BOARD_FIELDS.contains(&field.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let board = create_for_league(state, actor, &board_fields, &row).await?;
    view(state, &League { board, ladder }).await
}

/// The fields a league takes at creation only, each with the code `PATCH`
/// answers for it.
const FIXED_AT_CREATION: [(&str, ErrorCode); 12] = [
    ("id", ErrorCode::InvalidId),
    ("tiers", ErrorCode::InvalidTiers),
    ("cohort_size", ErrorCode::InvalidCohortSize),
    ("promote", ErrorCode::InvalidPromote),
    ("demote", ErrorCode::InvalidDemote),
    ("order", ErrorCode::InvalidOrder),
    ("operator", ErrorCode::InvalidOperator),
    ("min_score", ErrorCode::InvalidMinScore),
    ("max_score", ErrorCode::InvalidMaxScore),
    ("reset", ErrorCode::InvalidReset),
    ("timezone", ErrorCode::InvalidTimezone),
    ("archive_periods", ErrorCode::InvalidArchivePeriods),
];

/// `PATCH /api/admin/leagues/{id}` (v4): the name and `rewards` (the whole
/// list); a field fixed at creation is 422.
pub async fn update(
    state: &AppState,
    actor: &Actor,
    id: &str,
    body: &Map<String, Value>,
) -> Result<LeagueView, ApiError> {
    let league = find(state, id).await?;
    if let Some((field, code)) = FIXED_AT_CREATION.iter().find(|(field, _)| body.contains_key(*field)) {
        return Err(ApiError::with_message(*code, format!("`{field}` is set at creation and does not change")));
    }
    if body.contains_key("name") || body.contains_key("rewards") {
        amend_for_league(state, actor, &league.board, body).await?;
    }
    get(state, id).await
}

pub async fn get(state: &AppState, id: &str) -> Result<LeagueView, ApiError> {
    view(state, &find(state, id).await?).await
}

/// Every league, by id.
pub async fn list(state: &AppState) -> Result<LeagueList, ApiError> {
    let ladders = state.store.ladders().await?;
    let mut boards: Vec<_> = state.boards.all().into_iter().filter(|board| board.spec.league).collect();
    boards.sort_by(|a, b| a.spec.id.cmp(&b.spec.id));
    let mut leagues = Vec::with_capacity(boards.len());
    for board in boards {
        let Some(row) = ladders.get(&board.spec.number) else { continue };
        leagues.push(view(state, &League { ladder: row.ladder(), board }).await?);
    }
    Ok(LeagueList { leagues })
}

async fn view(state: &AppState, league: &League) -> Result<LeagueView, ApiError> {
    let spec = &league.board.spec;
    let period = league.board.period_at(Timestamp::now());
    let counts: HashMap<i64, (i64, i64)> = state
        .store
        .tier_counts(spec.number, period.index)
        .await?
        .into_iter()
        .map(|(tier, cohorts, players)| (tier, (cohorts, players)))
        .collect();
    let tier_stats = (0..league.ladder.tiers.len() as i64)
        .map(|index| {
            let (cohorts, players) = counts.get(&index).copied().unwrap_or_default();
            TierStats { index, name: league.ladder.tier_name(index).to_owned(), cohorts, players }
        })
        .collect();
    Ok(LeagueView {
        id: spec.id.clone(),
        name: spec.name.clone(),
        tiers: league.ladder.tiers.clone(),
        cohort_size: league.ladder.cohort_size,
        promote: league.ladder.promote,
        demote: league.ladder.demote,
        order: spec.order.as_str(),
        operator: spec.operator.as_str(),
        min_score: spec.min_score,
        max_score: spec.max_score,
        reset: spec.reset.clone().unwrap_or_default(),
        timezone: spec.timezone.clone(),
        archive_periods: spec.archive_periods,
        created_at: spec.created_at,
        period: PeriodView::from(period),
        tier_stats,
        rewards: spec.rewards.clone(),
    })
}

/// `DELETE /api/admin/leagues/{id}`: the league, its board and every row of
/// both (purged by chunks afterwards).
pub async fn delete(state: &AppState, actor: &Actor, id: &str) -> Result<(), ApiError> {
    let league = find(state, id).await?;
    delete_custom(state, actor, &league.board).await
}

/// `POST /api/leagues/{id}/scores`: posted to the league's board through
/// the score writer like any board post, then the player is placed in the
/// period the post counted in (the first post of a period places; later
/// ones find the placement). The answer is the board post's, with the
/// entry ranked in the cohort, and the tier and cohort.
pub async fn post(
    state: &AppState,
    id: &str,
    author: Author,
    body: &Map<String, Value>,
    key: Option<IdempotencyKey>,
) -> Result<Posted, ApiError> {
    let league = find(state, id).await?;
    let spec = &league.board.spec;
    let (user_id, _) = author.poster(body)?;
    let posted = post_to(state, Arc::clone(&league.board), author, body, key).await?;
    let (Posted::Created(text) | Posted::Held(text) | Posted::Replayed(text)) = &posted;
    let mut answer: Value = serde_json::from_str(text).map_err(ApiError::internal)?;
    let bounds = |field: &str| answer["period"][field].as_str().and_then(Timestamp::parse_rfc3339);
    let period = answer["period"]["index"].as_i64().ok_or_else(|| ApiError::internal(anyhow::anyhow!("no period")))?;
    let (start, end) = (bounds("start").unwrap_or(spec.created_at), bounds("end"));
    let placement = place(state, &league, period, (start, end), user_id).await?;
    if answer["entry"].is_object() {
        let members = state.store.cohort_members(league.number(), period, placement.tier, placement.cohort).await?;
        let ranked = ranked(&members);
        if let Some((_, rank, _)) = ranked.iter().find(|(member, ..)| member.user_id == user_id) {
            answer["entry"]["rank"] = json!(rank);
            answer["entry"]["top_percent"] = json!(Hundredths::top(*rank, ranked.len() as i64));
        }
    }
    answer["tier"] = serde_json::to_value(league.tier(placement.tier)).map_err(ApiError::internal)?;
    answer["cohort"] = json!(cohort_id(period, placement));
    let text = answer.to_string();
    Ok(match posted {
        Posted::Created(_) => Posted::Created(text),
        Posted::Held(_) => Posted::Held(text),
        Posted::Replayed(_) => Posted::Replayed(text),
    })
}

/// The player's place in `period`, placing them now if they are not:
/// their tier (0 for a new player), in that tier's most recently opened
/// cohort of the period if it has room, else a new one. Decided with the
/// period's row locked (the lock posts to it take), so two instances never
/// overfill a cohort. The moves of the period before are made first: a
/// player's tier for this period is what they left the last one with.
async fn place(
    state: &AppState,
    league: &League,
    period: i64,
    (start, end): (Timestamp, Option<Timestamp>),
    user_id: i64,
) -> Result<Placement, ApiError> {
    let number = league.number();
    let mut conn = state.store.conn().await?;
    if let Some(placement) = state.store.placement(&mut conn, number, period, user_id).await? {
        return Ok(placement);
    }
    drop(conn);
    if period > 0 {
        closings::close_before(state, number, period - 1).await?;
    }
    let (cohort_size, top) = (league.ladder.cohort_size, league.ladder.top_tier());
    in_transaction(state, async |conn| {
        state.store.lock_period(conn, number, period, start, end).await?;
        if let Some(placement) = state.store.placement(conn, number, period, user_id).await? {
            return Ok::<_, Failure>(placement);
        }
        let tier = state.store.member_tier(conn, number, user_id).await?.unwrap_or(0).clamp(0, top);
        let (cohort, new_cohort) = match state.store.newest_cohort(conn, number, period, tier).await? {
            Some((seq, members)) if members < cohort_size => (seq, false),
            Some((seq, _)) => (seq + 1, true),
            None => (1, true),
        };
        let placement = Placement { tier, cohort };
        let new = NewPlacement { board: number, period, user_id, placement, new_cohort, at: Timestamp::now() };
        state.store.place(conn, new).await?;
        Ok(placement)
    })
    .await
}

/// A cohort's members with shown entries, in board order, with their
/// competition rank in the cohort and their key.
fn ranked(members: &[CohortMember]) -> Vec<(&CohortMember, i64, BoardKey)> {
    let shown: Vec<(&CohortMember, BoardKey, i64)> = members
        .iter()
        .filter_map(|member| {
            let key = BoardKey::of(member.score?, member.achieved_at?.millis(), member.user_id);
            Some((member, key, member.rank_score?))
        })
        .collect();
    let ranks = competition_ranks(&shown.iter().map(|(_, _, rank_score)| *rank_score).collect::<Vec<_>>());
    shown.into_iter().zip(ranks).map(|((member, key, _), rank)| (member, rank, key)).collect()
}

/// The entries of a cohort, ranked, with their zones.
async fn cohort_entries(
    state: &AppState,
    league: &League,
    members: &[CohortMember],
    tier: i64,
) -> Result<Vec<CohortEntry>, ApiError> {
    let ranked = ranked(members);
    let ids: Vec<i64> = ranked.iter().map(|(member, ..)| member.user_id).collect();
    let names = names(state, &ids).await?;
    let players = ranked.len() as i64;
    Ok(ranked
        .into_iter()
        .map(|(member, rank, key)| {
            let name = names.get(&member.user_id).map_or("", |name| name.as_ref());
            let metadata = member.metadata.as_deref().map(Arc::from);
            CohortEntry {
                entry: RankingEntry::new(league.board.spec.period(0), (rank, players), key, name, metadata),
                zone: league.ladder.movement(tier, rank, players).zone(),
            }
        })
        .collect())
}

/// `GET /api/leagues/{id}/cohorts/{cohort}`: the whole cohort.
pub async fn cohort(state: &AppState, id: &str, cohort: &str) -> Result<CohortPage, ApiError> {
    let league = find(state, id).await?;
    let (period, placement) = parse_cohort_id(cohort).ok_or(ErrorCode::CohortNotFound)?;
    let members = state.store.cohort_members(league.number(), period, placement.tier, placement.cohort).await?;
    if members.is_empty() {
        return Err(ErrorCode::CohortNotFound.into());
    }
    let entries = cohort_entries(state, &league, &members, placement.tier).await?;
    Ok(CohortPage {
        league: league.board.spec.id.clone(),
        period: period_view(state, &league, period).await?,
        tier: league.tier(placement.tier),
        cohort: cohort_id(period, placement),
        total_players: entries.len() as i64,
        entries,
    })
}

/// A period of the league as the answers show it (its bounds as
/// recorded; the current one's from the clock).
async fn period_view(state: &AppState, league: &League, index: i64) -> Result<PeriodView, ApiError> {
    let current = league.board.period_at(Timestamp::now());
    if current.index == index {
        return Ok(PeriodView::from(current));
    }
    let recorded = state.store.periods(league.number(), index + 1, 1).await?;
    Ok(recorded.into_iter().find(|row| row.period == index).map_or(
        PeriodView { index, start: None, end: None },
        |row| PeriodView { index, start: Some(row.starts_at), end: row.ends_at },
    ))
}

/// `GET /api/leagues/{id}/members/{user_id}`: 404 `user_not_found` for a
/// player who never posted to the league.
pub async fn member(state: &AppState, id: &str, user_id: i64) -> Result<LeagueMember, ApiError> {
    let league = find(state, id).await?;
    let number = league.number();
    let period = league.board.period_at(Timestamp::now());
    // The closed periods first, the tier after: a close writes both at
    // once, so an answer whose history shows a close shows its move in
    // the tier too (read the other way round, a close committing between
    // the two reads gave the new history with the old tier).
    let placed_before = state.store.placement_history(number, user_id, HISTORY).await?;
    let mut conn = state.store.conn().await?;
    // A banned player is as unknown to others as an erased one (whose
    // places are deleted).
    if state.store.user(&mut conn, user_id).await?.is_none_or(|user| user.banned_at.is_some()) {
        return Err(ErrorCode::UserNotFound.into());
    }
    let next_tier = state.store.member_tier(&mut conn, number, user_id).await?.ok_or(ErrorCode::UserNotFound)?;
    let placement = state.store.placement(&mut conn, number, period.index, user_id).await?;
    drop(conn);
    let entry = match placement {
        Some(placed) => {
            let members = state.store.cohort_members(number, period.index, placed.tier, placed.cohort).await?;
            let entries = cohort_entries(state, &league, &members, placed.tier).await?;
            entries.into_iter().find(|entry| entry.entry.user.id == user_id)
        }
        None => None,
    };
    // Ranks as the periods' entries stand now (a ban or a deleted post
    // after the close changes them); moves as they were made.
    let mut history = Vec::new();
    for row in placed_before {
        let placed = Placement { tier: row.tier, cohort: row.cohort };
        let members = state.store.cohort_members(number, row.period, row.tier, row.cohort).await?;
        let rank = ranked(&members).into_iter().find(|(member, ..)| member.user_id == user_id).map(|(_, rank, _)| rank);
        history.push(LeagueHistoryItem {
            period: row.period,
            tier: league.tier(row.tier),
            cohort: cohort_id(row.period, placed),
            rank,
            movement: row.movement,
        });
    }
    Ok(LeagueMember {
        // Placed: the tier of the placement; not yet: the one they will be placed in.
        tier: league.tier(placement.map_or(next_tier, |placed| placed.tier)),
        period: PeriodView::from(period),
        cohort: placement.map(|placed| cohort_id(period.index, placed)),
        entry,
        history,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cohort_ids_round_trip_and_nothing_else_parses() {
        let placement = Placement { tier: 2, cohort: 7 };
        assert_eq!(parse_cohort_id(&cohort_id(13, placement)), Some((13, placement)));
        for bad in ["", "1-2", "1-2-3-4", "a-b-c", "1--2-3", "-1-2-3", "1-+2-3"] {
            assert_eq!(parse_cohort_id(bad), None, "{bad}");
        }
    }
}

//! A batch's posts to the built-in boards: the players' rows (of every
//! post of the batch, locked first), the `/api/scores` log, and the
//! aggregates on the user row.

use std::collections::HashMap;

use sqlx::AnyConnection;

use super::holds::{self, Held};
use super::{Answer, BatchError, Item, Pending, Post, Poster, Target};
use crate::boards::{HoldRule, PostRules};
use crate::domain::{Order, PostStatus, Score, Timestamp};
use crate::error::ErrorCode;
use crate::rank::RankEngine;
use crate::store::{NewHold, Store, UserRow, BUILTIN_LOG};
use crate::views::{Me, ScoreResult, ScoreView};

/// The rows of the batch's players, locked, and their totals before the
/// batch.
pub(super) struct Players {
    rows: HashMap<i64, UserRow>,
    before: HashMap<i64, (i64, i64)>,
}

impl Players {
    /// Why this player cannot post, if they cannot: gone (erased while the
    /// session was checked), their data replaced by an initialize since
    /// (the id may now name a generated player), or banned.
    pub(super) fn refusal(&self, post: &Post) -> Option<ErrorCode> {
        refusal(self.rows.get(&post.user_id), post.by)
    }

    pub(super) fn display_name(&self, id: i64) -> &str {
        self.rows.get(&id).map_or("", |row| row.display_name.as_str())
    }
}

/// Why a post by `by` cannot go to this (locked) row. A server key names
/// a player who must exist and not be banned (404 either way: a banned
/// player is unknown to others); a session must belong to the current data.
fn refusal(row: Option<&UserRow>, by: Poster) -> Option<ErrorCode> {
    match (row, by) {
        (None, Poster::Server) => Some(ErrorCode::UserNotFound),
        (Some(row), Poster::Server) if row.banned_at.is_some() => Some(ErrorCode::UserNotFound),
        (None, Poster::Player { .. }) => Some(ErrorCode::InvalidSession),
        (Some(row), Poster::Player { generation }) if row.generation != generation => Some(ErrorCode::InvalidSession),
        (Some(row), Poster::Player { .. }) if row.banned_at.is_some() => Some(ErrorCode::Banned),
        (Some(_), _) => None,
    }
}

/// The players' rows after the batch, for the rank engine and the caches.
#[derive(Default)]
pub(super) struct Changed {
    pub rows: Vec<UserRow>,
    /// Review items the batch queued.
    pub queued: u64,
}

/// Locks the rows of every player of the batch, in id order: a post to any
/// board checks its player against a ban or an erasure under this lock,
/// and every moderation takes it first too.
pub(super) async fn lock_players(
    store: &Store,
    conn: &mut AnyConnection,
    batch: &[Item<'_>],
) -> Result<Players, BatchError> {
    let mut ids: Vec<i64> = batch.iter().map(|job| job.post.user_id).collect();
    ids.sort_unstable();
    ids.dedup();
    let rows: HashMap<i64, UserRow> =
        store.users_for_update(conn, &ids).await?.into_iter().map(|row| (row.id, row)).collect();
    let before = rows.iter().map(|(id, r)| (*id, (r.total_score, r.play_count))).collect();
    Ok(Players { rows, before })
}

/// The built-in boards' rules: a post to `/api/scores` is held when
/// either board's `hold_beyond` or `hold_jump` says so (`best` judged
/// against the player's best, `total` against their total).
#[derive(Debug, Clone, Copy)]
pub(super) struct Rules {
    pub best: PostRules,
    pub total: PostRules,
}

impl Rules {
    fn holds(&self, row: &UserRow, score: i64) -> Option<HoldRule> {
        let played = row.play_count > 0;
        self.best
            .holds(Order::Desc, score, played.then_some(row.best_score))
            .or_else(|| self.total.holds(Order::Desc, score, played.then_some(row.total_score)))
    }
}

/// Appends the new posts to the log in one INSERT, applies each in order
/// (sum, max, count and the `best_at` of the first strictly greater score,
/// also for several posts of one player), renders their answers, and
/// writes every changed row in one UPDATE. A post the boards' rules hold
/// is logged as held and changes nothing (202).
#[allow(clippy::too_many_arguments)]
pub(super) async fn apply(
    store: &Store,
    ranks: &RankEngine,
    conn: &mut AnyConnection,
    batch: &[Item<'_>],
    pending: &mut [Pending],
    players: &mut Players,
    rules: Rules,
    now: Timestamp,
) -> Result<Changed, BatchError> {
    let new_posts: Vec<(usize, i64, Score)> = batch
        .iter()
        .enumerate()
        .filter(|(index, job)| matches!(job.post.target, Target::Builtin) && matches!(pending[*index], Pending::New))
        .map(|(index, job)| (index, job.post.user_id, job.post.score))
        .collect();
    if new_posts.is_empty() {
        return Ok(Changed::default());
    }
    // Which posts are held, judged in order against each player's row as
    // the batch's earlier posts leave it (the ids are not known yet).
    let mut running = players.rows.clone();
    let held: Vec<Option<HoldRule>> = new_posts
        .iter()
        .map(|(_, user_id, score)| {
            let row = running.get_mut(user_id)?;
            let rule = rules.holds(row, score.value());
            if rule.is_none() {
                count_post(row, score.value(), 0, now);
            }
            rule
        })
        .collect();
    let log: Vec<(i64, Score, PostStatus)> = new_posts
        .iter()
        .zip(&held)
        .map(|((_, user, score), rule)| {
            (*user, *score, if rule.is_some() { PostStatus::Held } else { PostStatus::Accepted })
        })
        .collect();
    let ids = store.insert_scores(conn, &log, now).await?;
    let held_posts: Vec<Held> = new_posts
        .iter()
        .zip(&held)
        .zip(&ids)
        .filter_map(|(((_, user_id, score), rule), post_id)| {
            let hold = NewHold {
                board: BUILTIN_LOG,
                post_id: *post_id,
                user_id: *user_id,
                period: 0,
                rule: rule.as_ref()?.as_str(),
            };
            Some(Held { hold, board_id: "best", score: score.value(), metadata: None })
        })
        .collect();
    let queued = holds::queue(store, conn, &held_posts, now).await?;

    let mut applied = Vec::with_capacity(new_posts.len());
    for (((index, user_id, score), score_id), rule) in new_posts.iter().zip(ids).zip(&held) {
        let Some(row) = players.rows.get_mut(user_id) else { continue };
        let status = if rule.is_some() { PostStatus::Held } else { PostStatus::Accepted };
        let new_best = rule.is_none() && {
            let new_best = count_post(row, score.value(), score_id, now);
            row.version += 1;
            new_best
        };
        // The player as this post left them (a later post of the batch may move them again).
        let view = ScoreView { id: score_id, score: score.value(), created_at: now, status: status.as_str() };
        applied.push((*index, view, new_best, row.clone()));
    }
    // Ranks count players with strictly greater scores, and a player's
    // own previous entry never counts (scores only rise), so the engine
    // can rank the new values before recording them: one call for all.
    let rows: Vec<&UserRow> = applied.iter().map(|(_, _, _, row)| row).collect();
    let user_ranks = ranks.ranks_of_on(conn, &rows).await?;
    for ((index, score, new_best, row), user_ranks) in applied.iter().zip(user_ranks) {
        let user = Me::new(row, user_ranks);
        let result = ScoreResult { score: score.clone(), new_best: *new_best, user, feeds: Vec::new() };
        let held = score.status == PostStatus::Held.as_str();
        pending[*index] = Pending::Taken { answer: Box::new(Answer::Scores(result)), held };
    }

    // One UPDATE for every player whose aggregates changed.
    let changed: Vec<UserRow> = players
        .rows
        .values()
        .filter(|row| players.before.get(&row.id).is_some_and(|(_, plays)| *plays != row.play_count))
        .cloned()
        .collect();
    let changes: Vec<(&UserRow, i64, i64)> = changed
        .iter()
        .map(|row| {
            let (total_before, plays_before) = players.before.get(&row.id).copied().unwrap_or_default();
            (row, row.total_score - total_before, row.play_count - plays_before)
        })
        .collect();
    store.set_many_aggregates(conn, &changes).await?;
    let first_scores = changes.iter().filter(|(row, _, plays_added)| row.play_count == *plays_added).count();
    if first_scores > 0 {
        store.add_board_players(conn, first_scores as i64).await?;
    }
    Ok(Changed { rows: changed, queued })
}

/// Counts one post into a player's aggregates: the sum, the count, and the
/// best with the time and id of the first post that reached it (a tie is
/// not a new best). Returns whether it set a new best. The score writer
/// and a recount after a removed post (`usecases::moderation`) both go
/// through here, so they cannot disagree.
pub(crate) fn count_post(row: &mut UserRow, score: i64, score_id: i64, at: Timestamp) -> bool {
    let new_best = row.play_count == 0 || score > row.best_score;
    if new_best {
        row.best_score = score;
        row.best_at = Some(at);
        row.best_score_id = Some(score_id);
    }
    row.total_score += score;
    row.play_count += 1;
    new_best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A post queued before an initialize must not land on the generated
    /// player who has the same id in the new data.
    #[test]
    fn a_post_of_replaced_data_is_refused() {
        let row = UserRow {
            id: 1,
            login_name: String::new(),
            display_name: String::new(),
            best_score: 0,
            best_at: None,
            best_score_id: None,
            total_score: 0,
            play_count: 0,
            created_at: Timestamp::from_millis(0),
            version: 0,
            banned_at: None,
            generation: 2,
        };
        let session = |generation| Poster::Player { generation };
        assert_eq!(refusal(Some(&row), session(2)), None);
        assert_eq!(refusal(Some(&row), session(1)), Some(ErrorCode::InvalidSession));
        assert_eq!(refusal(None, session(2)), Some(ErrorCode::InvalidSession));
        let banned = UserRow { banned_at: Some(Timestamp::from_millis(5)), ..row.clone() };
        assert_eq!(refusal(Some(&banned), session(2)), Some(ErrorCode::Banned));
        // A server key names any player of the current data, never a banned or missing one.
        assert_eq!(refusal(Some(&row), Poster::Server), None);
        assert_eq!(refusal(Some(&banned), Poster::Server), Some(ErrorCode::UserNotFound));
        assert_eq!(refusal(None, Poster::Server), Some(ErrorCode::UserNotFound));
    }
}

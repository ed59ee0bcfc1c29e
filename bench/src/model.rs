//! The bench's own model of what it wrote: each bench player's exact
//! aggregates and entries on the run's custom boards, and when each player
//! last moved (to tell which players a cursor walk must not skip).

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use super::validate::{Board, Entry};
use std::time::Instant;

use serde_json::Value;

/// How a board turns posts into an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    Best,
    Latest,
    Total,
}

/// A player's entry on a board in one period, as the bench posted it.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryModel {
    pub score: i64,
    pub achieved_at: String,
    pub metadata: Value,
}

impl EntryModel {
    /// The entry after one more post to a board of `operator`, ascending
    /// (`asc`) or not; and whether its score changed.
    pub fn after(
        previous: Option<&Self>,
        operator: Operator,
        asc: bool,
        score: i64,
        at: &str,
        metadata: &Value,
    ) -> (Self, bool) {
        let reached = |score: i64| Self { score, achieved_at: at.to_owned(), metadata: metadata.clone() };
        let Some(previous) = previous else { return (reached(score), true) };
        match operator {
            Operator::Best => {
                let better = if asc { score < previous.score } else { score > previous.score };
                if better {
                    (reached(score), true)
                } else {
                    (previous.clone(), false)
                }
            }
            Operator::Latest => (reached(score), score != previous.score),
            Operator::Total => (reached(previous.score + score), score != 0),
        }
    }
}

/// What the bench knows about one player it registered.
#[derive(Debug, Clone)]
pub struct PlayerModel {
    pub id: i64,
    pub login_name: String,
    pub password: String,
    pub token: String,
    pub best: i64,
    pub best_at: Option<String>,
    pub total: i64,
    pub count: i64,
    /// (id, score) of the newest accepted post.
    pub last_score: Option<(i64, i64)>,
    /// Every accepted post (id, score, created_at), oldest first: what a
    /// removed post is recounted from.
    pub posts: Vec<(i64, i64, String)>,
    /// A post whose outcome is unknown (5xx, timeout): exact checks stop.
    pub uncertain: bool,
    /// Entries on the run's custom boards, by (board id, period).
    pub entries: HashMap<(String, i64), EntryModel>,
    /// Custom boards where a post's outcome is unknown: no exact checks there.
    pub uncertain_boards: HashSet<String>,
}

impl PlayerModel {
    /// A player just registered: no plays yet.
    pub fn new(id: i64, login_name: String, password: String, token: String) -> Self {
        Self {
            id,
            login_name,
            password,
            token,
            best: 0,
            best_at: None,
            total: 0,
            count: 0,
            last_score: None,
            posts: Vec::new(),
            uncertain: false,
            entries: HashMap::new(),
            uncertain_boards: HashSet::new(),
        }
    }

    /// Applies an accepted post; returns whether it was a new best.
    pub fn apply(&mut self, score_id: i64, score: i64, created_at: &str) -> bool {
        let new_best = self.count == 0 || score > self.best;
        if new_best {
            self.best = score;
            self.best_at = Some(created_at.to_owned());
        }
        self.total += score;
        self.count += 1;
        self.last_score = Some((score_id, score));
        self.posts.push((score_id, score, created_at.to_owned()));
        new_best
    }

    /// Takes a post out (moderation) and recounts the aggregates from the
    /// rest, as the contract says the server does.
    pub fn remove(&mut self, score_id: i64) {
        let posts = std::mem::take(&mut self.posts);
        (self.best, self.best_at, self.total, self.count) = (0, None, 0, 0);
        for (id, score, created_at) in posts.into_iter().filter(|(id, _, _)| *id != score_id) {
            self.apply(id, score, &created_at);
        }
        self.last_score = self.posts.last().map(|(id, score, _)| (*id, *score));
    }
}

#[derive(Debug, Clone, Copy)]
struct Moves {
    first_done: Option<Instant>,
    last_start: Instant,
    last_done: Option<Instant>,
    in_flight: bool,
}

/// When each bench player's score posts started and finished.
#[derive(Default)]
pub struct Movements {
    moves: Mutex<HashMap<i64, Moves>>,
}

impl Movements {
    pub fn post_started(&self, id: i64) {
        if let Ok(mut moves) = self.moves.lock() {
            let now = Instant::now();
            let entry = moves.entry(id).or_insert(Moves {
                first_done: None,
                last_start: now,
                last_done: None,
                in_flight: false,
            });
            entry.last_start = now;
            entry.in_flight = true;
        }
    }

    /// A post's outcome is known; `on_board`: the player has a post on the
    /// board now (a post answered 503 that did not count leaves a new
    /// player off it, and no walk may then expect them).
    pub fn post_finished(&self, id: i64, on_board: bool) {
        if let Ok(mut moves) = self.moves.lock() {
            if let Some(entry) = moves.get_mut(&id) {
                let now = Instant::now();
                if on_board {
                    entry.first_done.get_or_insert(now);
                }
                entry.last_done = Some(now);
                entry.in_flight = false;
            }
        }
    }

    /// Bench players that were on the board before `since` and have not
    /// moved since: a walk that started at `since` must show each of them.
    pub fn unmoved_since(&self, since: Instant) -> Vec<i64> {
        let Ok(moves) = self.moves.lock() else { return Vec::new() };
        moves
            .iter()
            .filter(|(_, m)| {
                m.first_done.is_some_and(|t| t < since)
                    && m.last_start < since
                    && m.last_done.is_some_and(|t| t < since)
                    && !m.in_flight
            })
            .map(|(id, _)| *id)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_removed_post_is_recounted_from_the_rest() {
        let mut model = PlayerModel::new(1, "p".into(), "pw".into(), "t".into());
        model.apply(10, 50, "t1");
        model.apply(11, 80, "t2");
        model.apply(12, 80, "t3");
        model.remove(11);
        assert_eq!((model.best, model.best_at.as_deref(), model.total, model.count), (80, Some("t3"), 130, 2));
        model.remove(12);
        model.remove(10);
        assert_eq!((model.best, model.best_at, model.total, model.count, model.last_score), (0, None, 0, 0, None));
    }

    #[test]
    fn applies_posts_like_the_contract() {
        let mut model = PlayerModel::new(1, "a".into(), "p".into(), "t".into());
        assert!(model.apply(1, 0, "t1"), "the first play is a best, even at 0");
        assert!(!model.apply(2, 0, "t2"));
        assert!(model.apply(3, 5, "t3"));
        assert!(!model.apply(4, 5, "t4"));
        assert_eq!((model.best, model.best_at.as_deref(), model.total, model.count), (5, Some("t3"), 10, 4));
    }

    #[test]
    fn a_player_moving_during_a_walk_is_not_required() {
        let movements = Movements::default();
        movements.post_started(1);
        movements.post_finished(1, true);
        movements.post_started(2);
        movements.post_finished(2, true);
        std::thread::sleep(std::time::Duration::from_millis(2));
        let walk_start = Instant::now();
        movements.post_started(2); // moves during the walk
        movements.post_started(3); // first post during the walk: not on the board before
        assert_eq!(movements.unmoved_since(walk_start), vec![1]);
    }
}

/// A custom board the run created.
#[derive(Debug)]
pub struct BenchBoard {
    pub board: Board,
    pub asc: bool,
    pub operator: Operator,
    pub resets: bool,
    /// Ended periods as first read after they ended: they must not change.
    pub(super) archived: Mutex<HashMap<i64, Vec<Entry>>>,
}

impl BenchBoard {
    pub fn id(&self) -> &str {
        self.board.as_str()
    }
}

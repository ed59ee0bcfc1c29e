//! The deterministic benchmark dataset behind `POST /api/admin/initialize`.
//!
//! Pure generation, no I/O: the same spec gives the same players, scores and
//! timestamps on every machine and backend (ChaCha8 is specified to produce
//! the same stream everywhere, unlike `StdRng`).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::domain::Timestamp;

/// 2026-01-01T00:00:00.000Z: generated players join from here on.
const EPOCH: i64 = 1_767_225_600_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatasetSpec {
    pub users: i64,
    pub scores: i64,
    pub seed: u64,
}

impl DatasetSpec {
    pub const DEFAULT_USERS: i64 = 1_000;
    pub const DEFAULT_SCORES: i64 = 10_000;
    pub const DEFAULT_SEED: u64 = 1;
    pub const MAX_USERS: i64 = 2_000_000;
    pub const MAX_SCORES: i64 = 20_000_000;
}

/// A generated player with the aggregates its scores add up to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedUser {
    pub id: i64,
    pub login_name: String,
    pub display_name: String,
    pub created_at: Timestamp,
    pub best_score: i64,
    pub best_at: Option<Timestamp>,
    pub best_score_id: Option<i64>,
    pub total_score: i64,
    pub play_count: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GeneratedScore {
    pub id: i64,
    pub user_id: i64,
    pub score: i64,
    pub created_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dataset {
    pub users: Vec<GeneratedUser>,
    pub scores: Vec<GeneratedScore>,
}

const ADJECTIVES: [&str; 16] = [
    "Swift", "Brave", "Quiet", "Lucky", "Clever", "Mighty", "Sly", "Bold", "Rapid", "Calm", "Fierce", "Jolly",
    "Nimble", "Witty", "Zesty", "Stormy",
];
const ANIMALS: [&str; 16] = [
    "Otter", "Falcon", "Badger", "Lynx", "Panda", "Raven", "Tiger", "Gecko", "Wombat", "Heron", "Koala", "Moose",
    "Viper", "Bison", "Crane", "Dingo",
];

pub fn generate(spec: DatasetSpec) -> Dataset {
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    let mut users: Vec<GeneratedUser> = (1..=spec.users)
        .map(|id| {
            let adjective = ADJECTIVES[rng.gen_range(0..ADJECTIVES.len())];
            let animal = ANIMALS[rng.gen_range(0..ANIMALS.len())];
            GeneratedUser {
                id,
                login_name: format!("player{id}"),
                display_name: format!("{adjective} {animal} {id}"),
                created_at: Timestamp::from_millis(EPOCH + id * 1_000),
                best_score: 0,
                best_at: None,
                best_score_id: None,
                total_score: 0,
                play_count: 0,
            }
        })
        .collect();

    // Scores start once every player has joined and arrive 1..2 s apart.
    let mut at = EPOCH + (spec.users + 1) * 1_000;
    let mut scores = Vec::with_capacity(usize::try_from(spec.scores).unwrap_or(0));
    let last = users.len().saturating_sub(1);
    if !users.is_empty() {
        for id in 1..=spec.scores {
            // Low ids play more, and scores are skewed low with round values,
            // so the board has a long tail and plenty of ties.
            let index = ((rng.gen::<f64>().powi(2)) * users.len() as f64) as usize;
            let user = &mut users[index.min(last)];
            let score = ((rng.gen::<f64>().powi(3) * 1_000_000.0) as i64) / 10 * 10;
            at += rng.gen_range(1_000..2_000);
            let created_at = Timestamp::from_millis(at);
            if user.play_count == 0 || score > user.best_score {
                user.best_score = score;
                user.best_at = Some(created_at);
                user.best_score_id = Some(id);
            }
            user.total_score += score;
            user.play_count += 1;
            scores.push(GeneratedScore { id, user_id: user.id, score, created_at });
        }
    }
    Dataset { users, scores }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_dataset_other_seed_other_dataset() {
        let spec = DatasetSpec { users: 50, scores: 500, seed: 7 };
        assert_eq!(generate(spec), generate(spec));
        assert_ne!(generate(spec), generate(DatasetSpec { seed: 8, ..spec }));
    }

    #[test]
    fn aggregates_match_the_scores() {
        let data = generate(DatasetSpec { users: 20, scores: 300, seed: 1 });
        for user in &data.users {
            let mine: Vec<_> = data.scores.iter().filter(|s| s.user_id == user.id).collect();
            assert_eq!(user.play_count, mine.len() as i64);
            assert_eq!(user.total_score, mine.iter().map(|s| s.score).sum::<i64>());
            let best = mine.iter().map(|s| s.score).max().unwrap_or(0);
            assert_eq!(user.best_score, best);
            // best_at is the first time the best was reached.
            let first_best = mine.iter().find(|s| s.score == best);
            assert_eq!(user.best_at, first_best.map(|s| s.created_at));
            assert!(user.display_name.chars().count() <= 32);
        }
        assert!(data.scores.windows(2).all(|w| w[0].created_at < w[1].created_at));
    }

    #[test]
    fn no_users_means_no_scores() {
        let data = generate(DatasetSpec { users: 0, scores: 10, seed: 1 });
        assert!(data.users.is_empty() && data.scores.is_empty());
    }
}

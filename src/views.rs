//! The contract's JSON objects, built from store rows and ranks.
//! Password material and login names never reach `PublicUser`.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::{Board, Timestamp};
use crate::rank::{Page, UserRanks};
use crate::store::{ScoreRow, UserRow};

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
    pub best_at: Option<Timestamp>,
    pub total_score: i64,
    pub play_count: i64,
    pub best_rank: Option<i64>,
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
            best_rank: ranks.best,
            total_rank: ranks.total,
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
}

impl From<&ScoreRow> for ScoreView {
    fn from(row: &ScoreRow) -> Self {
        Self { id: row.id, score: row.score, created_at: row.created_at }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ScoreResult {
    pub score: ScoreView,
    pub new_best: bool,
    pub user: Me,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ScoreHistory {
    pub scores: Vec<ScoreView>,
    pub next_before: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct UserRef {
    pub id: i64,
    pub display_name: String,
    pub image: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RankingEntry {
    pub rank: i64,
    pub score: i64,
    /// `best_at` on the best board, null on the total board.
    pub achieved_at: Option<Timestamp>,
    pub user: UserRef,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RankingPage {
    #[schema(value_type = String, example = "best")]
    pub board: &'static str,
    pub entries: Vec<RankingEntry>,
    pub total_players: i64,
    pub next_offset: Option<i64>,
    pub next_cursor: Option<String>,
}

impl RankingPage {
    /// A page of the rank engine with the players' display names.
    pub fn new(page: Page, names: &HashMap<i64, Arc<str>>) -> Self {
        let entries = page
            .entries
            .into_iter()
            .map(|entry| RankingEntry {
                rank: entry.rank,
                score: entry.key.score,
                achieved_at: match page.board {
                    Board::Best => Some(Timestamp::from_millis(entry.key.at)),
                    Board::Total => None,
                },
                user: UserRef {
                    id: entry.key.id,
                    display_name: names.get(&entry.key.id).map(|name| name.to_string()).unwrap_or_default(),
                    image: image(entry.key.id),
                },
            })
            .collect();
        Self {
            board: page.board.as_str(),
            entries,
            total_players: page.total_players,
            next_offset: page.next_offset,
            next_cursor: page.next_cursor.map(|cursor| cursor.encode()),
        }
    }
}

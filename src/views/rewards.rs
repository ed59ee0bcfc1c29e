//! Rewards granted at the close of a period (v4).

use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::Timestamp;

use super::PeriodView;

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

//! Leagues: tiers, cohorts, members and their history.

use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::{RewardBand, Rewards, Timestamp};

use super::{BoardScoreResult, PeriodView, RankingEntry};

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

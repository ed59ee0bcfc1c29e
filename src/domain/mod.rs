//! Validated input types. Each has a `parse` constructor that is the only way
//! to build it, so a value that exists is valid everywhere it goes.
//!
//! Nothing here touches the database or HTTP beyond naming the contract's
//! error codes.

mod board;
mod credentials;
mod cursor;
mod display_name;
mod idempotency_key;
mod league;
mod page;
mod partition;
mod percent;
mod reward;
mod role;
mod score;
mod timestamp;

pub use board::{
    Board, BoardId, BoardName, BoardPeriod, Metadata, Operator, Order, PeriodSelector, Ranking, Subscore, Writers,
    MAX_SUBSCORES,
};
pub use credentials::{LoginName, Password};
pub use cursor::{derive_secret, BoardKey, Cursor, CursorKeys, Walk};
pub use display_name::DisplayName;
pub use idempotency_key::IdempotencyKey;
pub use league::{cohort_id, competition_ranks, Ladder, Movement};
pub use page::{parse_before, parse_offset, PageLimit, Radius, UserIds};
pub use partition::{PartitionOf, PartitionValue, Partitioning, DEFAULT_MAX_PARTITIONS, MAX_MAX_PARTITIONS};
pub use percent::{Hundredths, Percents};
pub use reward::{BandMatch, RewardBand, Rewards};
pub use role::{Access, KeyRole};
pub use score::{PostStatus, Score};
pub use timestamp::Timestamp;

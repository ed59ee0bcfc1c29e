//! Caches in front of the database, never the source of truth: each entry
//! can be rebuilt from the store and the rank engine at any time. In
//! process: rendered pages and display names; in Redis: user rows.

mod names;
mod pages;
mod single_flight;
mod users;

pub use names::NameCache;
pub use pages::{PageCache, PageKey};
pub use single_flight::SingleFlight;
pub use users::UserCache;

//! In-process caches in front of the database. Never the source of truth:
//! each entry can be rebuilt from the store and the rank engine at any time.

mod names;
mod pages;

pub use names::NameCache;
pub use pages::{PageCache, PageKey};

//! What the service does, one function per use case, between the HTTP
//! handlers (which parse input and shape responses) and the infrastructure
//! (store, rank engine, caches, Redis). A use case owns its transactions,
//! its rate limits and the cache invalidation it causes; handlers never
//! touch the store or Redis themselves.

mod account_changes;
pub mod accounts;
pub mod admin;
pub mod boards;
pub mod closings;
mod events;
pub mod exports;
pub mod jobs;
pub mod keys;
pub mod leagues;
pub mod live;
pub mod moderation;
pub mod operations;
pub mod players;
pub mod rankings;
pub mod reviews;
pub mod rewards;
pub mod scores;
pub mod sessions;
pub mod standings;
pub mod tournaments;
pub mod webhooks;

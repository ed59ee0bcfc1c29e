//! hiscore: a game score-ranking JSON API service.
//!
//! `main.rs` is a thin command-line front; everything lives here so that
//! the tests can use it. The layers, each calling only
//! those below it (docs/ARCHITECTURE.md walks a request through them):
//!
//! - HTTP: [`routes`] (one file per resource; extractors, the route table
//!   and the OpenAPI document), [`telemetry`] (request ids, logs, metrics),
//!   [`views`] (the contract's JSON objects).
//! - Use cases: [`usecases`], one function per thing the service does;
//!   each owns its transactions, limits and cache invalidation.
//!   `usecases::jobs` is what runs on a timer.
//! - The engines: [`scoring`] (the group-committed writer, the only way
//!   scores are written), [`rank`] (ranks and pages from three sources),
//!   [`boards`] (custom boards and their periods), [`cache`], [`limits`],
//!   [`export_slots`] (how many exports stream at once),
//!   [`auth`] (password hashing, session tokens), [`live`] (live pages'
//!   watchers and stream limits), [`webhooks`] (events, signatures, the
//!   client that delivers them).
//! - Infrastructure: [`store`] (all SQL, both dialects), [`redis`] (the
//!   client and every key).
//! - [`domain`]: validated values, no I/O; [`error`]: every error code, its
//!   status and the JSON envelope (it uses nothing else in the crate; the
//!   layers say what their failures mean to a client beside them).
//!
//! Wiring: [`startup`] builds the app from [`config`] into one [`state`]
//! and runs [`background`] tasks. [`dataset`] generates initialize's data.
//! The load generator is the workspace's other crate (`bench/`), a client
//! of the HTTP contract only.

pub mod auth;
pub mod background;
pub(crate) mod boards;
pub(crate) mod cache;
pub mod config;
pub mod dataset;
pub mod domain;
pub(crate) mod drain;
pub(crate) mod error;
pub(crate) mod export_slots;
pub(crate) mod front;
pub(crate) mod limits;
pub(crate) mod live;
pub mod rank;
pub mod redis;
pub(crate) mod request_metrics;
pub mod routes;
pub(crate) mod scoring;
pub(crate) mod shards;
pub mod startup;
pub(crate) mod state;
pub mod store;
pub mod telemetry;
pub(crate) mod usecases;
pub(crate) mod views;
pub(crate) mod webhooks;

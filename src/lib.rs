//! hiscore: a game score-ranking JSON API service.
//!
//! `main.rs` is a thin command-line front; everything lives here so that
//! the tests can use it. The layers, each calling only
//! those below it (docs/ARCHITECTURE.md walks a request through them):
//!
//! - HTTP: [`routes`] (one file per resource; extractors, the route table
//!   and the OpenAPI document), [`telemetry`] (request ids, logs, metrics),
//!   [`views`] (the contract's JSON objects), [`error`] (every error code
//!   and its status).
//! - Use cases: [`usecases`], one function per thing the service does;
//!   each owns its transactions, limits and cache invalidation.
//!   `usecases::jobs` is what runs on a timer.
//! - The engines: [`scoring`] (the group-committed writer, the only way
//!   scores are written), [`rank`] (ranks and pages from three sources),
//!   [`boards`] (custom boards and their periods), [`cache`], [`limits`],
//!   [`auth`] (password hashing, session tokens).
//! - Infrastructure: [`store`] (all SQL, both dialects), [`redis`] (the
//!   client and every key).
//! - [`domain`]: validated values, no I/O.
//!
//! Wiring: [`startup`] builds the app from [`config`] into one [`state`]
//! and runs [`background`] tasks. [`dataset`] generates initialize's data.
//! The load generator is the workspace's other crate (`bench/`), a client
//! of the HTTP contract only.

pub mod auth;
pub mod background;
pub mod boards;
pub mod cache;
pub mod config;
pub mod dataset;
pub mod domain;
pub mod error;
pub mod limits;
pub mod rank;
pub mod redis;
pub mod routes;
pub mod scoring;
pub mod startup;
pub mod state;
pub mod store;
pub mod telemetry;
pub mod usecases;
pub mod views;

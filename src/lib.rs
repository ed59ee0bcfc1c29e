//! hiscore: a game score-ranking JSON API service.
//!
//! `main.rs` is a thin command-line front; everything lives here so that
//! tests and the benchmarker can use it.

pub mod auth;
pub mod background;
pub mod bench;
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

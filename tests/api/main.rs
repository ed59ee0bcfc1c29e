//! The API test suite: every test talks HTTP to the real server on port 0,
//! on SQLite always and on MariaDB when `TEST_MYSQL_URL` is set.

// Unwrapping is how a test says "this must hold".
#![allow(clippy::unwrap_used)]

mod external;
mod helpers;

mod accounts;
mod admin;
mod bench;
mod boards;
mod browser;
mod cluster;
mod concurrency;
mod console;
mod cors;
mod crash;
mod erasure;
mod errors;
mod exports;
mod feeds;
mod fuzz;
mod galera;
mod galera_ids;
mod instances;
mod integrity;
mod leagues;
mod limits;
mod live;
mod maxima;
mod migrations;
mod moderation;
mod operations;
mod partitions;
mod percentiles;
mod pool;
mod rankings;
mod restarts;
mod rewards;
mod scoped_keys;
mod scores;
mod security;
mod slow_clients;
mod standings;
mod subscores;
mod tls;
mod tournaments;
mod users;
mod webhooks;

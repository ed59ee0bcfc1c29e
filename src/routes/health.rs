//! `/healthz` and `/metrics`.

use actix_web::{web, HttpResponse};
use serde_json::json;

use crate::error::ApiError;
use crate::state::AppState;

pub async fn healthz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    match state.store.ping().await {
        // Redis is reported, never fatal: without it the service degrades.
        Ok(()) => Ok(HttpResponse::Ok().json(json!({"status": "ok", "redis": state.ranks.shared_state().as_str()}))),
        Err(error) => {
            tracing::warn!(%error, "health check: database not answering");
            Err(ApiError::unavailable("database_unavailable", "the database is not answering"))
        }
    }
}

pub async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    let pool = state.store.pool();
    let body = state.metrics.render(pool.size(), pool.num_idle());
    HttpResponse::Ok().content_type("text/plain; version=0.0.4; charset=utf-8").body(body)
}

//! `/healthz` and `/metrics`.

use actix_web::{web, HttpResponse};
use serde_json::json;

use crate::error::ApiError;
use crate::state::AppState;

#[utoipa::path(get, path = "/healthz", tag = "operations", responses(
    (status = 200, description = "The database answers; `redis` tells the shared board's state", body = crate::routes::openapi::Health),
    (status = 503, description = "`database_unavailable`", body = crate::routes::openapi::ErrorBody),
))]
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

#[utoipa::path(get, path = "/metrics", tag = "operations", responses(
    (status = 200, description = "Prometheus text format (nginx serves it to localhost only)", content_type = "text/plain"),
))]
pub async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    let pool = state.store.pool();
    let body = state.metrics.render(pool.size(), pool.num_idle());
    HttpResponse::Ok().content_type("text/plain; version=0.0.4; charset=utf-8").body(body)
}

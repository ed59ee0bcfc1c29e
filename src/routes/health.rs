//! `/healthz`, `/livez`, `/readyz` and `/metrics`.

use actix_web::{web, HttpResponse};

use super::paths;
use crate::error::ApiError;
use crate::state::AppState;
use crate::telemetry::Metrics;
use crate::usecases::operations;

#[utoipa::path(get, path = paths::HEALTHZ, operation_id = "getHealth", summary = "Health: the database and Redis", tag = "operations", responses(
    (status = 200, description = "The database answers; `redis` tells the shared boards' state", body = crate::routes::schemas::Health),
))]
pub async fn healthz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(operations::health(&state).await?))
}

#[utoipa::path(get, path = paths::LIVEZ, operation_id = "getLiveness", summary = "Liveness: the process answers", tag = "operations", responses(
    (status = 200, description = "The process runs and answers (nothing else is checked)", body = crate::routes::schemas::Status),
))]
pub async fn livez() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({"status": "ok"}))
}

#[utoipa::path(get, path = paths::READYZ, operation_id = "getReadiness", summary = "Readiness: warmed up, database reachable, not draining", tag = "operations", responses(
    (status = 200, description = "Ready for traffic: warmed up (the server listens only after its warm-up), \
        the database answers, not draining", body = crate::routes::schemas::Status),
))]
pub async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    operations::readiness(&state).await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({"status": "ready"})))
}

#[utoipa::path(get, path = paths::METRICS, operation_id = "getMetrics", summary = "Prometheus metrics", tag = "operations", responses(
    (status = 200, description = "Prometheus text format (nginx serves it to localhost only)", content_type = "text/plain"),
))]
pub async fn metrics(state: web::Data<AppState>, metrics: web::Data<Metrics>) -> HttpResponse {
    let body = operations::metrics_text(&state, &metrics);
    HttpResponse::Ok().content_type("text/plain; version=0.0.4; charset=utf-8").body(body)
}

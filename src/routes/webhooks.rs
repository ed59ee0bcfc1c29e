//! `/api/admin/webhooks`: where events are delivered, and the delivery
//! log. Exist only when `ADMIN_TOKEN` is configured.

use actix_web::{web, HttpResponse};
use serde::Deserialize;

use super::paths;
use super::{parse_id, JsonObject};
use crate::domain::PageLimit;
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::usecases::moderation::Actor;
use crate::usecases::webhooks;

#[utoipa::path(post, path = paths::ADMIN_WEBHOOKS, operation_id = "createWebhook", summary = "Register a webhook (its secret shown only in this answer)", tag = "webhooks",
    security(("admin_token" = [])),
    request_body = crate::routes::schemas::CreateWebhookRequest,
    responses((status = 201, description = "The webhook and the secret its deliveries are signed with \
        (`Hiscore-Signature`, docs/WEBHOOKS.md)", body = crate::views::WebhookCreated)))]
pub async fn create(state: web::Data<AppState>, actor: Actor, body: JsonObject) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Created().json(webhooks::create(&state, &actor, &body).await?))
}

#[utoipa::path(get, path = paths::ADMIN_WEBHOOKS, operation_id = "listWebhooks", summary = "The webhooks, without their secrets", tag = "webhooks",
    security(("admin_token" = [])),
    responses((status = 200, description = "Oldest first", body = crate::views::WebhookList)))]
pub async fn list(state: web::Data<AppState>, _admin: Actor) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(webhooks::list(&state).await?))
}

#[utoipa::path(delete, path = paths::ADMIN_WEBHOOK, operation_id = "deleteWebhook", summary = "Delete a webhook and its deliveries", tag = "webhooks",
    security(("admin_token" = [])),
    params(("id" = i64, Path, minimum = 1, description = "The webhook's id")),
    responses((status = 204, description = "Deleted: nothing more is sent to it")))]
pub async fn delete(
    state: web::Data<AppState>,
    actor: Actor,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&path, ErrorCode::WebhookNotFound)?;
    webhooks::delete(&state, &actor, id).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeliveriesQuery {
    limit: Option<String>,
    before: Option<String>,
}

#[utoipa::path(get, path = paths::ADMIN_WEBHOOK_DELIVERIES, operation_id = "listWebhookDeliveries", summary = "A webhook's deliveries, newest first", tag = "webhooks",
    security(("admin_token" = [])),
    params(
        ("id" = i64, Path, minimum = 1, description = "The webhook's id"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "Deliveries per page (default 20)"),
        ("before" = Option<i64>, Query, minimum = 1, description = "A `next_before` from the previous page"),
    ),
    responses((status = 200, description = "Newest first", body = crate::views::DeliveryList)))]
pub async fn deliveries(
    state: web::Data<AppState>,
    _admin: Actor,
    path: web::Path<String>,
    query: web::Query<DeliveriesQuery>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&path, ErrorCode::WebhookNotFound)?;
    let limit = PageLimit::parse(query.limit.as_deref(), 20)?;
    let before = match query.before.as_deref() {
        None => None,
        Some(raw) => Some(raw.parse::<i64>().ok().filter(|before| *before > 0).ok_or(ErrorCode::InvalidBefore)?),
    };
    Ok(HttpResponse::Ok().json(webhooks::deliveries(&state, id, before, limit.value()).await?))
}

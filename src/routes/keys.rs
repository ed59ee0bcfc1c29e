//! `/api/admin/keys`: the server keys game servers post with. Exist only
//! when `ADMIN_TOKEN` is configured.

use actix_web::{web, HttpResponse};

use super::paths;
use super::{parse_id, JsonObject};
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::usecases::keys;
use crate::usecases::moderation::Actor;

#[utoipa::path(post, path = paths::ADMIN_KEYS, operation_id = "createServerKey", summary = "Make a server key (shown only in this answer)", tag = "integrity",
    security(("admin_token" = [])),
    request_body = crate::routes::schemas::CreateKeyRequest,
    responses((status = 201, description = "The key: `Authorization: Bearer <key>` on posts for any player and to \
        server-only boards; only its hash is stored", body = crate::views::ServerKeyCreated)))]
pub async fn create(state: web::Data<AppState>, actor: Actor, body: JsonObject) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Created().json(keys::create(&state, &actor, &body).await?))
}

#[utoipa::path(get, path = paths::ADMIN_KEYS, operation_id = "listServerKeys", summary = "The live server keys, without their values", tag = "integrity",
    security(("admin_token" = [])),
    responses((status = 200, description = "Oldest first", body = crate::views::ServerKeyList)))]
pub async fn list(state: web::Data<AppState>, _admin: Actor) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(keys::list(&state).await?))
}

#[utoipa::path(delete, path = paths::ADMIN_KEY, operation_id = "revokeServerKey", summary = "Revoke a server key", tag = "integrity",
    security(("admin_token" = [])),
    params(("id" = i64, Path, minimum = 1, description = "The key's id")),
    responses((status = 204, description = "Revoked: the next post with it is 401 `invalid_server_key`, on every \
        instance")))]
pub async fn revoke(
    state: web::Data<AppState>,
    actor: Actor,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&path, ErrorCode::KeyNotFound)?;
    keys::revoke(&state, &actor, id).await?;
    Ok(HttpResponse::NoContent().finish())
}

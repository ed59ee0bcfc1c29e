//! `/api/scores`: posting a score.

use actix_web::http::header::ContentType;
use actix_web::{web, HttpRequest, HttpResponse};

use super::JsonObject;
use crate::auth::AuthUser;
use crate::domain::{IdempotencyKey, Score};
use crate::error::ApiError;
use crate::scoring::{post_score as record, Posted};
use crate::state::AppState;

pub async fn post_score(
    state: web::Data<AppState>,
    auth: AuthUser,
    request: HttpRequest,
    body: JsonObject,
) -> Result<HttpResponse, ApiError> {
    let score = Score::parse(body.get("score"))?;
    let key = IdempotencyKey::from_headers(request.headers())?;
    Ok(match record(&state, auth.user_id, score, key).await? {
        Posted::Created(body) => HttpResponse::Created().content_type(ContentType::json()).body(body),
        Posted::Replayed(body) => HttpResponse::Ok()
            .content_type(ContentType::json())
            .insert_header(("Idempotent-Replayed", "true"))
            .body(body),
    })
}

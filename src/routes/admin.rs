//! `/api/admin/initialize`: wipe everything and load a generated dataset.
//! Exists only when `ADMIN_TOKEN` is configured.

use std::time::Instant;

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::dataset::{generate, DatasetSpec};
use crate::domain::Password;
use crate::error::ApiError;
use crate::state::AppState;

#[derive(Deserialize, Default)]
struct InitializeBody {
    users: Option<Value>,
    scores: Option<Value>,
    seed: Option<Value>,
}

#[utoipa::path(post, path = "/api/admin/initialize", tag = "operations",
    security(("bearer" = [])),
    request_body = crate::routes::openapi::InitializeRequest,
    responses(
        (status = 200, description = "Wiped and loaded: `{users, scores, seed, elapsed_ms}`"),
        (status = 401, description = "`admin_token_required`", body = crate::routes::openapi::ErrorBody),
        (status = 403, description = "`invalid_admin_token`", body = crate::routes::openapi::ErrorBody),
        (status = 404, description = "`not_found`: no ADMIN_TOKEN configured", body = crate::routes::openapi::ErrorBody),
        (status = 422, description = "`invalid_users`, `invalid_scores`, `invalid_seed`", body = crate::routes::openapi::ErrorBody),
    ))]
pub async fn initialize(
    state: web::Data<AppState>,
    request: HttpRequest,
    // The body is read by hand (it may be empty), so its errors are mapped
    // here: the payload extractor has no JSON error handler of its own.
    body: Result<web::Bytes, actix_web::Error>,
) -> Result<HttpResponse, ApiError> {
    let Some(expected) = state.settings.admin_token.as_deref() else {
        return Err(super::route_not_found());
    };
    authorize(&request, expected)?;
    let body = body.map_err(|error| match error.as_error::<actix_web::error::PayloadError>() {
        Some(actix_web::error::PayloadError::Overflow) => ApiError::PayloadTooLarge,
        _ => ApiError::bad_request("invalid_body", "the request body could not be read"),
    })?;
    let spec = parse_spec(&body)?;

    let started = Instant::now();
    // Nobody knows this password: generated players cannot be logged into.
    let password = Password::parse(Some(&Value::String(format!("{:032x}", rand::random::<u128>()))))?;
    let password_hash = state.passwords.hash(&password).await?;
    let data = web::block(move || generate(spec)).await.map_err(anyhow::Error::from)?;
    state.store.replace_all(&data, &password_hash).await?;
    state.names.clear();
    let warm_up = state.ranks.warm_up(true).await?;
    if let Some(redis) = &state.redis {
        // Other instances clear their caches when they see this change.
        // Sessions are wiped with the data: their cached copies must go too.
        if let Err(error) = redis.delete_matching("session:*").await {
            tracing::error!(%error, "initialize: cached sessions could not be deleted from Redis");
        }
        match redis.bump(crate::startup::DATA_GENERATION).await {
            Ok(generation) => {
                if let Some(users) = &state.users {
                    users.set_generation(generation);
                }
            }
            Err(error) => tracing::warn!(%error, "could not announce the initialize to other instances"),
        }
    }
    let elapsed_ms = started.elapsed().as_millis() as u64;
    tracing::info!(
        users = spec.users,
        scores = spec.scores,
        seed = spec.seed,
        elapsed_ms,
        warm_up_ms = warm_up.elapsed.as_millis() as u64,
        "initialized dataset"
    );
    Ok(HttpResponse::Ok().json(json!({
        "users": spec.users, "scores": spec.scores, "seed": spec.seed, "elapsed_ms": elapsed_ms,
    })))
}

/// Checks the bearer token, comparing digests in constant time.
fn authorize(request: &HttpRequest, expected: &str) -> Result<(), ApiError> {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(|| ApiError::unauthorized("admin_token_required", "send Authorization: Bearer $ADMIN_TOKEN"))?;
    let (a, b) = (Sha256::digest(presented.as_bytes()), Sha256::digest(expected.as_bytes()));
    let difference = a.iter().zip(b.iter()).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    if difference == 0 {
        Ok(())
    } else {
        Err(ApiError::forbidden("invalid_admin_token", "wrong admin token"))
    }
}

fn parse_spec(body: &[u8]) -> Result<DatasetSpec, ApiError> {
    let body: InitializeBody = if body.iter().all(u8::is_ascii_whitespace) {
        InitializeBody::default()
    } else {
        serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request("invalid_json", format!("malformed JSON: {e}")))?
    };
    let count =
        |raw: &Option<Value>, default: i64, max: i64, code: &'static str, field: &str| -> Result<i64, ApiError> {
            match raw {
                None | Some(Value::Null) => Ok(default),
                Some(value) => value
                    .as_i64()
                    .filter(|n| (0..=max).contains(n))
                    .ok_or_else(|| ApiError::validation(code, format!("{field} must be an integer from 0 to {max}"))),
            }
        };
    let users = count(&body.users, DatasetSpec::DEFAULT_USERS, DatasetSpec::MAX_USERS, "invalid_users", "users")?;
    let scores = count(&body.scores, DatasetSpec::DEFAULT_SCORES, DatasetSpec::MAX_SCORES, "invalid_scores", "scores")?;
    let seed = match &body.seed {
        None | Some(Value::Null) => DatasetSpec::DEFAULT_SEED,
        Some(value) => {
            value.as_u64().ok_or_else(|| ApiError::validation("invalid_seed", "seed must be a non-negative integer"))?
        }
    };
    if users == 0 && scores > 0 {
        return Err(ApiError::validation("invalid_scores", "scores need at least one user"));
    }
    Ok(DatasetSpec { users, scores, seed })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_defaults_and_validation() {
        assert_eq!(parse_spec(b"").unwrap(), DatasetSpec { users: 1_000, scores: 10_000, seed: 1 });
        assert_eq!(
            parse_spec(br#"{"users": 5, "scores": 0, "seed": 9}"#).unwrap(),
            DatasetSpec { users: 5, scores: 0, seed: 9 }
        );
        assert_eq!(parse_spec(br#"{"users": -1}"#).unwrap_err().code(), "invalid_users");
        assert_eq!(parse_spec(br#"{"scores": 1.5}"#).unwrap_err().code(), "invalid_scores");
        assert_eq!(parse_spec(br#"{"users": 0, "scores": 1}"#).unwrap_err().code(), "invalid_scores");
        assert_eq!(parse_spec(br#"{"seed": "x"}"#).unwrap_err().code(), "invalid_seed");
        assert_eq!(parse_spec(b"{").unwrap_err().code(), "invalid_json");
    }
}

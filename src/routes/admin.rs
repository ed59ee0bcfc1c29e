//! `/api/admin/initialize`: wipe everything and load a generated dataset
//! (recorded in the audit log: the first record of the new data); and
//! `/api/admin/whoami`: who the presented token or key is. Exist only
//! when `ADMIN_TOKEN` is configured.

use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::Value;

use super::paths;
use crate::dataset::DatasetSpec;
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::usecases::admin;
use crate::usecases::moderation::Actor;

#[utoipa::path(get, path = paths::ADMIN_WHOAMI, operation_id = "whoAmI", summary = "Who the admin token or key is", tag = "operations",
    security(("admin_token" = [])),
    responses((status = 200, description = "The actor the audit log names, and the role", body = crate::views::WhoAmI)))]
pub async fn whoami(actor: Actor) -> HttpResponse {
    HttpResponse::Ok().json(crate::views::WhoAmI { actor: actor.name, role: actor.access.as_str() })
}

#[derive(Deserialize, Default)]
struct InitializeBody {
    users: Option<Value>,
    scores: Option<Value>,
    seed: Option<Value>,
}

#[utoipa::path(post, path = paths::ADMIN_INITIALIZE, operation_id = "initializeDataset", summary = "Wipe everything and load a generated dataset", tag = "operations",
    security(("admin_token" = [])),
    request_body(content = Option<crate::routes::schemas::InitializeRequest>, description = "May be empty: every field has a default"),
    responses(
        (status = 200, description = "Wiped and loaded", body = crate::views::Initialized),
    ))]
pub async fn initialize(
    state: web::Data<AppState>,
    actor: Actor,
    // The body is read by hand (it may be empty), so its errors are mapped
    // here: the payload extractor has no JSON error handler of its own.
    body: Result<web::Bytes, actix_web::Error>,
) -> Result<HttpResponse, ApiError> {
    let body = body.map_err(|error| match error.as_error::<actix_web::error::PayloadError>() {
        Some(actix_web::error::PayloadError::Overflow) => ApiError::new(ErrorCode::PayloadTooLarge),
        _ => ApiError::with_message(ErrorCode::InvalidBody, "the request body could not be read"),
    })?;
    let spec = parse_spec(&body)?;
    let done = admin::initialize(&state, &actor, spec).await?;
    Ok(HttpResponse::Ok().json(crate::views::Initialized {
        users: spec.users,
        scores: spec.scores,
        seed: spec.seed,
        elapsed_ms: u64::try_from(done.elapsed.as_millis()).unwrap_or(u64::MAX),
    }))
}

fn parse_spec(body: &[u8]) -> Result<DatasetSpec, ApiError> {
    let body: InitializeBody = if body.iter().all(u8::is_ascii_whitespace) {
        InitializeBody::default()
    } else {
        // `null` is an empty body too (the document says the body may be absent).
        serde_json::from_slice::<Option<InitializeBody>>(body)
            .map_err(|e| ApiError::with_message(ErrorCode::InvalidJson, format!("malformed JSON: {e}")))?
            .unwrap_or_default()
    };
    let count = |raw: &Option<Value>, default: i64, max: i64, code: ErrorCode, field: &str| -> Result<i64, ApiError> {
        match raw {
            None | Some(Value::Null) => Ok(default),
            Some(value) => value
                .as_i64()
                .filter(|n| (0..=max).contains(n))
                .ok_or_else(|| ApiError::with_message(code, format!("{field} must be an integer from 0 to {max}"))),
        }
    };
    let users =
        count(&body.users, DatasetSpec::DEFAULT_USERS, DatasetSpec::MAX_USERS, ErrorCode::InvalidUsers, "users")?;
    let scores =
        count(&body.scores, DatasetSpec::DEFAULT_SCORES, DatasetSpec::MAX_SCORES, ErrorCode::InvalidScores, "scores")?;
    let seed = match &body.seed {
        None | Some(Value::Null) => DatasetSpec::DEFAULT_SEED,
        // A JSON integer every client can write (JavaScript's and the
        // OpenAPI document's int64): 0 to 2^63 - 1.
        Some(value) => value.as_i64().and_then(|seed| u64::try_from(seed).ok()).ok_or(ErrorCode::InvalidSeed)?,
    };
    if users == 0 && scores > 0 {
        return Err(ApiError::with_message(ErrorCode::InvalidScores, "scores need at least one user"));
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
        assert_eq!(parse_spec(br#"{"users": -1}"#).unwrap_err().code(), ErrorCode::InvalidUsers);
        assert_eq!(parse_spec(br#"{"scores": 1.5}"#).unwrap_err().code(), ErrorCode::InvalidScores);
        assert_eq!(parse_spec(br#"{"users": 0, "scores": 1}"#).unwrap_err().code(), ErrorCode::InvalidScores);
        assert_eq!(parse_spec(br#"{"seed": "x"}"#).unwrap_err().code(), ErrorCode::InvalidSeed);
        assert_eq!(parse_spec(b"{").unwrap_err().code(), ErrorCode::InvalidJson);
    }
}

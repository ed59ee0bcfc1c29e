//! HTTP routes, one file per resource. Handlers parse input into domain
//! types, call the store / rank engine, and shape the contract's JSON;
//! they hold no SQL and no ranking logic.

mod admin;
mod health;
mod me;
mod rankings;
mod scores;
mod sessions;
mod users;

use actix_web::error::{JsonPayloadError, PathError, QueryPayloadError};
use actix_web::{web, HttpRequest};

use crate::error::ApiError;

/// Request bodies larger than this get 413.
pub const BODY_LIMIT_BYTES: usize = 16 * 1024;

/// Registers every route and the extractor error handlers that keep even
/// malformed requests in the contract's error shape.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.app_data(json_config())
        .app_data(web::QueryConfig::default().error_handler(query_error))
        .app_data(web::PathConfig::default().error_handler(path_error))
        .app_data(web::PayloadConfig::new(BODY_LIMIT_BYTES))
        .service(resource("/healthz").route(web::get().to(health::healthz)))
        .service(resource("/metrics").route(web::get().to(health::metrics)))
        .service(
            web::scope("/api")
                .service(resource("/users").route(web::post().to(users::register)).route(web::get().to(users::batch)))
                .service(resource("/users/{id}").route(web::get().to(users::profile)))
                .service(resource("/users/{id}/scores").route(web::get().to(users::history)))
                .service(
                    resource("/sessions")
                        .route(web::post().to(sessions::login))
                        .route(web::delete().to(sessions::logout)),
                )
                .service(resource("/me").route(web::get().to(me::me)))
                .service(resource("/scores").route(web::post().to(scores::post_score)))
                .service(resource("/rankings/{board}").route(web::get().to(rankings::page)))
                .service(resource("/rankings/{board}/around/{user_id}").route(web::get().to(rankings::around)))
                .service(resource("/admin/initialize").route(web::post().to(admin::initialize)))
                .default_service(web::to(not_found)),
        );
}

/// A resource whose other methods get a JSON 405.
fn resource(path: &str) -> actix_web::Resource {
    web::resource(path).default_service(web::to(method_not_allowed))
}

fn route_not_found() -> ApiError {
    ApiError::not_found("not_found", "no such route")
}

/// The handler for every path that names nothing.
pub async fn not_found() -> Result<actix_web::HttpResponse, ApiError> {
    Err(route_not_found())
}

async fn method_not_allowed() -> Result<actix_web::HttpResponse, ApiError> {
    Err(ApiError::MethodNotAllowed)
}

fn json_config() -> web::JsonConfig {
    web::JsonConfig::default()
        .limit(BODY_LIMIT_BYTES)
        // Bodies must declare application/json (or a +json type); anything
        // else, or no Content-Type at all, is 415.
        .error_handler(json_error)
}

fn json_error(error: JsonPayloadError, _: &HttpRequest) -> actix_web::Error {
    let api_error = match &error {
        JsonPayloadError::OverflowKnownLength { .. } | JsonPayloadError::Overflow { .. } => ApiError::PayloadTooLarge,
        JsonPayloadError::ContentType => ApiError::UnsupportedMediaType,
        JsonPayloadError::Deserialize(e) if e.is_data() => {
            ApiError::bad_request("invalid_body", format!("the body must be a JSON object: {e}"))
        }
        JsonPayloadError::Deserialize(e) => ApiError::bad_request("invalid_json", format!("malformed JSON: {e}")),
        _ => ApiError::bad_request("invalid_body", "the request body could not be read"),
    };
    api_error.into()
}

fn query_error(error: QueryPayloadError, _: &HttpRequest) -> actix_web::Error {
    ApiError::bad_request("invalid_query", format!("malformed query string: {error}")).into()
}

fn path_error(_: PathError, _: &HttpRequest) -> actix_web::Error {
    ApiError::not_found("not_found", "no such resource").into()
}

/// A request body: any JSON object. Fields are read as raw values and
/// parsed by the domain types, so a wrong type is a 422 naming the field
/// rather than a generic deserialisation error, and a non-object (even `[5]`,
/// which serde would happily read as a one-field struct) is a 400.
type JsonObject = web::Json<serde_json::Map<String, serde_json::Value>>;

/// Parses a numeric id from a path segment; anything else names no resource.
fn parse_id(raw: &str, not_found: impl FnOnce() -> ApiError) -> Result<i64, ApiError> {
    raw.parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(not_found)
}

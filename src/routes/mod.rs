//! HTTP routes, one file per resource. Handlers parse input into domain
//! types, call the store / rank engine, and shape the contract's JSON;
//! they hold no SQL and no ranking logic.

mod admin;
mod health;
mod me;
pub mod openapi;
mod rankings;
mod scores;
mod sessions;
mod users;

use actix_web::error::{JsonPayloadError, PathError, QueryPayloadError};
use actix_web::{web, HttpRequest};

use crate::error::ApiError;

/// Request bodies larger than this get 413.
pub const BODY_LIMIT_BYTES: usize = 16 * 1024;

/// The route table: each path once, with its methods and handlers. It
/// generates both the registration and [`ROUTES`], the list the OpenAPI
/// document is checked against, so the two cannot drift apart.
macro_rules! routes {
    ($( $path:literal => { $( $method:ident : $handler:path ),+ $(,)? } ),+ $(,)?) => {
        /// Every (method, path) the service answers, in OpenAPI's spelling.
        pub const ROUTES: &[(&str, &str)] = &[ $( $( (stringify!($method), $path) ),+ ),+ ];

        fn register(cfg: &mut web::ServiceConfig) {
            $( cfg.service(resource($path, &[$(stringify!($method)),+]) $( .route(web::$method().to($handler)) )+ ); )+
        }
    };
}

routes! {
    "/healthz" => { get: health::healthz },
    "/metrics" => { get: health::metrics },
    "/api/openapi.json" => { get: openapi::document },
    "/api/users" => { post: users::register, get: users::batch },
    "/api/users/{id}" => { get: users::profile },
    "/api/users/{id}/scores" => { get: users::history },
    "/api/sessions" => { post: sessions::login, delete: sessions::logout },
    "/api/me" => { get: me::me },
    "/api/scores" => { post: scores::post_score },
    "/api/rankings/{board}" => { get: rankings::page },
    "/api/rankings/{board}/around/{user_id}" => { get: rankings::around },
    "/api/admin/initialize" => { post: admin::initialize },
}

/// Registers every route and the extractor error handlers that keep even
/// malformed requests in the contract's error shape. Unknown paths fall
/// through to the static files or the app's default: a JSON 404 either way.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.app_data(json_config())
        .app_data(web::QueryConfig::default().error_handler(query_error))
        .app_data(web::PathConfig::default().error_handler(path_error))
        .app_data(web::PayloadConfig::new(BODY_LIMIT_BYTES));
    register(cfg);
}

/// A resource whose other methods get a JSON 405.
fn resource(path: &str, methods: &[&str]) -> actix_web::Resource {
    let allow = methods.iter().map(|m| m.to_uppercase()).collect::<Vec<_>>().join(", ");
    web::resource(path).default_service(web::to(move || {
        let allow = allow.clone();
        async move { Err::<actix_web::HttpResponse, _>(ApiError::MethodNotAllowed { allow }) }
    }))
}

fn route_not_found() -> ApiError {
    ApiError::not_found("not_found", "no such route")
}

/// The handler for every path that names nothing.
pub async fn not_found() -> Result<actix_web::HttpResponse, ApiError> {
    Err(route_not_found())
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

/// The client's address for per-address limits: the peer, or the first
/// `X-Forwarded-For` hop when configured to trust the proxy in front.
fn client_address(request: &HttpRequest, trust_forwarded_for: bool) -> String {
    let forwarded = trust_forwarded_for
        .then(|| request.headers().get("x-forwarded-for"))
        .flatten()
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(',').next())
        .map(|first| first.trim().to_owned())
        .filter(|first| !first.is_empty());
    forwarded.or_else(|| request.peer_addr().map(|peer| peer.ip().to_string())).unwrap_or_default()
}

/// Parses a numeric id from a path segment; anything else names no resource.
fn parse_id(raw: &str, not_found: impl FnOnce() -> ApiError) -> Result<i64, ApiError> {
    raw.parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(not_found)
}

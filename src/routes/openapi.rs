//! The OpenAPI 3 document, generated from the handlers' `#[utoipa::path]`
//! annotations (success responses) and the route table (error responses,
//! from [`super::ROUTE_ERRORS`] and [`ErrorCode`]), served at
//! `/api/openapi.json`. A test checks it lists exactly [`super::ROUTES`].

use std::collections::BTreeMap;

use actix_web::HttpResponse;
use utoipa::openapi::header::Header;
use utoipa::openapi::path::Operation;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder, Schema};
use utoipa::{Modify, OpenApi};

use super::paths;
use super::schemas::*;
use crate::error::ErrorCode;
use crate::views;

/// Bearer token or `session` cookie, as the contract allows.
struct SessionAuth;

impl Modify for SessionAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let bearer = |description: &str| {
            SecurityScheme::Http(
                HttpBuilder::new().scheme(HttpAuthScheme::Bearer).description(Some(description)).build(),
            )
        };
        components.add_security_scheme("bearer", bearer("A player's session token (from registration or login)"));
        components
            .add_security_scheme("session_cookie", SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new("session"))));
        components.add_security_scheme(
            "admin_token",
            bearer("The operator's `ADMIN_TOKEN`, or an admin key (`moderator`, `viewer`) within its role"),
        );
        components.add_security_scheme(
            "server_key",
            bearer("A server key (`POST /api/admin/keys`): posts for any player, named by `user_id`"),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(title = "hiscore", description = "A game score-ranking JSON API. Errors are always `ErrorBody`."),
    paths(
        super::health::healthz,
        super::health::livez,
        super::health::readyz,
        super::health::metrics,
        document,
        reference,
        super::users::register,
        super::users::batch,
        super::users::profile,
        super::users::history,
        super::sessions::login,
        super::sessions::logout,
        super::me::me,
        super::me::change,
        super::me::erase,
        super::scores::post_score,
        super::users::user_boards,
        super::rankings::page,
        super::rankings::around,
        super::live::page,
        super::live::around,
        super::rankings::friends,
        super::rankings::cutoffs,
        super::boards::list,
        super::boards::get,
        super::boards::periods,
        super::boards::partitions,
        super::boards::post_score,
        super::boards::join,
        super::boards::standing,
        super::boards::create,
        super::boards::update,
        super::boards::delete,
        super::boards::export,
        super::me::export,
        super::rewards::mine,
        super::rewards::claim_mine,
        super::rewards::players,
        super::rewards::claim_players,
        super::rewards::board_grants,
        super::rewards::league_grants,
        super::moderation::delete_score,
        super::moderation::delete_board_score,
        super::moderation::ban,
        super::moderation::unban,
        super::moderation::rename,
        super::moderation::audit,
        super::moderation::search_users,
        super::keys::create,
        super::keys::list,
        super::keys::revoke,
        super::reviews::list,
        super::reviews::decide,
        super::leagues::create,
        super::leagues::list,
        super::leagues::get,
        super::leagues::update,
        super::leagues::delete,
        super::leagues::post_score,
        super::leagues::cohort,
        super::leagues::member,
        super::webhooks::create,
        super::webhooks::list,
        super::webhooks::delete,
        super::webhooks::deliveries,
        super::admin::initialize,
        super::admin::whoami,
    ),
    components(schemas(
        ErrorBody, ErrorDetail, Status, RegisterRequest, LoginRequest, ScoreRequest, InitializeRequest, Health,
        views::PublicUser, views::Me, views::SessionCreated, views::ScoreView, views::ScoreResult,
        views::ScoreHistory, views::UserRef, views::RankingEntry, views::RankingPage, views::CutoffList, views::Cutoff,
        views::UserList,
        views::PeriodView, views::BoardView, views::TournamentView, views::PendingChange, views::BoardList, views::PeriodEntry, views::PeriodList,
        views::PartitionList, views::PartitionView, views::PartitionResult,
        views::BoardScoreView, views::BoardScoreResult, views::FeedResult, views::BoardHistoryItem, views::BoardHistory,
        views::UserBoardEntry, views::UserBoards, views::Metadata, crate::domain::Hundredths, BoardScoreRequest, BoardRequest,
        UpdateBoardRequest, TournamentFields, CreateKeyRequest, views::ServerKeyView, views::ServerKeyCreated, views::ServerKeyList,
        views::Joined, views::BoardStanding, DecisionRequest, views::HeldPost, views::HeldList, views::Decided,
        BanRequest, RenameUserRequest, ChangeMeRequest, EraseMeRequest, views::AuditEntry,
        views::AuditLog, views::Initialized, CreateWebhookRequest, views::WebhookView, views::WebhookCreated,
        views::WebhookList, views::DeliveryView, views::DeliveryList, LeagueRequest, views::TierRef, views::TierStats,
        views::LeagueView, views::LeagueList, views::CohortEntry, views::CohortPage, views::LeagueHistoryItem,
        views::LeagueMember, views::LeaguePostResult, UpdateLeagueRequest, views::WhoAmI, views::FoundPlayer, views::FoundPlayers,
        views::RewardView, views::RewardList, crate::domain::RewardBand, SubscoreRequest, views::SubscoreView,
    )),
    modifiers(&SessionAuth, &ErrorResponses, &ResponseHeaders),
)]
pub struct ApiDoc;

/// Declares the headers the middleware and some handlers add, on the
/// responses that carry them (code generators expose declared headers only).
struct ResponseHeaders;

impl Modify for ResponseHeaders {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let text = |description: &str| {
            let mut header = Header::new(ObjectBuilder::new().schema_type(Type::String));
            header.description = Some(description.to_owned());
            header
        };
        for item in openapi.paths.paths.values_mut() {
            let operations = [&mut item.get, &mut item.post, &mut item.put, &mut item.patch, &mut item.delete];
            for operation in operations.into_iter().flatten() {
                let id = operation.operation_id.clone().unwrap_or_default();
                for (status, response) in operation.responses.responses.iter_mut() {
                    let RefOr::T(response) = response else { continue };
                    let request_id = "The request's id (the `X-Request-Id` sent, or a new one), as in the server's log";
                    response.headers.insert("X-Request-Id".to_owned(), text(request_id));
                    let success = status.starts_with('2');
                    if success && matches!(id.as_str(), "register" | "login") {
                        let cookie = "The session cookie (`session`, HttpOnly, SameSite=Lax; Secure with COOKIE_SECURE) for browser clients";
                        response.headers.insert("Set-Cookie".to_owned(), text(cookie));
                    }
                    if status == "200" && matches!(id.as_str(), "postScore" | "postBoardScore") {
                        let replayed = "`true`: a repeat of an `Idempotency-Key`; this is the first answer again";
                        response.headers.insert("Idempotent-Replayed".to_owned(), text(replayed));
                    }
                }
            }
        }
    }
}

/// Adds each route's error responses from the route table, grouped by
/// status, and makes `ErrorDetail.code` the enum of every code.
struct ErrorResponses;

impl Modify for ErrorResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for (method, path, codes) in super::ROUTE_ERRORS {
            let Some(item) = openapi.paths.paths.get_mut(*path) else { continue };
            let operation = match *method {
                "get" => item.get.as_mut(),
                "post" => item.post.as_mut(),
                "put" => item.put.as_mut(),
                "patch" => item.patch.as_mut(),
                "delete" => item.delete.as_mut(),
                _ => None,
            };
            if let Some(operation) = operation {
                let mut codes = codes.to_vec();
                codes.extend(implied_errors(method, path, operation));
                add_error_responses(operation, &codes);
            }
        }
        if let Some(components) = openapi.components.as_mut() {
            let codes: Vec<&str> = ErrorCode::ALL.iter().map(|code| code.as_str()).collect();
            let code = ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some("snake_case; each response lists the codes it can carry"))
                .enum_values(Some(codes));
            let detail = ObjectBuilder::new()
                .property("code", code)
                .property(
                    "message",
                    ObjectBuilder::new().schema_type(Type::String).description(Some("Human text, never internals")),
                )
                .required("code")
                .required("message");
            components.schemas.insert("ErrorDetail".to_owned(), RefOr::T(Schema::Object(detail.build())));
        }
    }
}

/// The errors every operation of a kind can answer, whatever its handler:
/// a path with parameters refuses an encoded separator (`invalid_path`);
/// an operation with query parameters refuses an unknown or repeated one
/// (`invalid_query`); a write a session cookie may authenticate refuses a
/// cross-site one (`cross_origin`).
fn implied_errors(method: &str, path: &str, operation: &Operation) -> Vec<ErrorCode> {
    use utoipa::openapi::path::ParameterIn;
    let mut implied = Vec::new();
    if path.contains('{') {
        implied.push(ErrorCode::InvalidPath);
    }
    let parameters = operation.parameters.iter().flatten();
    if parameters.into_iter().any(|parameter| parameter.parameter_in == ParameterIn::Query) {
        implied.push(ErrorCode::InvalidQuery);
    }
    let cookie =
        operation.security.iter().flatten().any(|requirement| {
            serde_json::to_value(requirement).is_ok_and(|value| value.get("session_cookie").is_some())
        });
    if cookie && method != "get" {
        implied.push(ErrorCode::CrossOrigin);
    }
    implied
}

fn add_error_responses(operation: &mut Operation, codes: &[ErrorCode]) {
    // Each code once, in the order given.
    let mut seen = std::collections::HashSet::new();
    let codes: Vec<ErrorCode> = codes.iter().copied().filter(|code| seen.insert(code.as_str())).collect();
    let mut by_status: BTreeMap<u16, Vec<ErrorCode>> = BTreeMap::new();
    for code in codes.iter().chain([&ErrorCode::InternalError]) {
        by_status.entry(code.status()).or_default().push(*code);
    }
    for (status, codes) in by_status {
        let names: Vec<String> = codes.iter().map(|code| format!("`{}`", code.as_str())).collect();
        let mut response = ResponseBuilder::new().description(names.join(", ")).content(
            "application/json",
            ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build(),
        );
        if status == 429 || status == 503 {
            let seconds = ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(1));
            let mut header = Header::new(seconds);
            header.description = Some("Seconds to wait before retrying".to_owned());
            response = response.header("Retry-After", header);
        }
        operation.responses.responses.insert(status.to_string(), RefOr::T(response.build()));
    }
}

#[utoipa::path(get, path = paths::OPENAPI_REFERENCE, operation_id = "getApiReference", summary = "This API as a readable page",
    tag = "operations",
    responses((status = 200, description = "The API reference as HTML, rendered from the OpenAPI document", content_type = "text/html")))]
pub async fn reference() -> HttpResponse {
    static PAGE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let page = PAGE.get_or_init(|| super::docs::render(&serde_json::to_value(ApiDoc::openapi()).unwrap_or_default()));
    HttpResponse::Ok().content_type("text/html; charset=utf-8").body(page.clone())
}

#[utoipa::path(get, path = paths::OPENAPI_DOCUMENT, operation_id = "getOpenApiDocument", summary = "This OpenAPI document", tag = "operations",
    responses((status = 200, description = "This document", content_type = "application/json")))]
pub async fn document() -> HttpResponse {
    HttpResponse::Ok().json(ApiDoc::openapi())
}

//! `/api/users`: registration, profiles, batched lookups and score history.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::Value;

use super::paths;
use super::sessions::session_started;
use super::{address_of, client_address, json_response, parse_id, JsonObject};
use crate::domain::{parse_before, Board, DisplayName, LoginName, PageLimit, Password, UserIds};
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::usecases::{accounts, boards, players};
use crate::views::{PublicUser, ScoreHistory, ScoreView, UserList};

#[utoipa::path(post, path = paths::USERS, operation_id = "register", summary = "Register a player: a session token", tag = "accounts",
    request_body = crate::routes::schemas::RegisterRequest,
    responses(
        (status = 201, description = "Registered and logged in; also sets the `session` cookie", body = crate::views::SessionCreated),
    ))]
pub async fn register(
    state: web::Data<AppState>,
    request: HttpRequest,
    body: JsonObject,
) -> Result<HttpResponse, ApiError> {
    let address = client_address(&request, state.settings.trust_forwarded_for);
    let login_name = LoginName::parse(body.get("login_name"))?;
    let password = Password::parse(body.get("password"))?;
    let display_name = match body.get("display_name") {
        None | Some(Value::Null) => None,
        Some(raw) => Some(DisplayName::parse(raw)?),
    };
    let started = accounts::register(&state, &address, login_name, password, display_name).await?;
    Ok(session_started(&state, started, StatusCode::CREATED))
}

#[utoipa::path(get, path = paths::USER, operation_id = "getUser", summary = "A player's public profile with ranks", tag = "players",
    params(("id" = i64, Path, minimum = 1, description = "User id")),
    responses((status = 200, body = crate::views::PublicUser)))]
pub async fn profile(
    state: web::Data<AppState>,
    request: HttpRequest,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&path, ErrorCode::UserNotFound)?;
    let address = address_of(&request);
    Ok(json_response(players::profile_json(&state, id, address).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchQuery {
    ids: Option<String>,
}

#[utoipa::path(get, path = paths::USERS, operation_id = "getUsers", summary = "Several players' profiles in one request", tag = "players",
    params(("ids" = String, Query, pattern = r"^[1-9][0-9]{0,17}(,[1-9][0-9]{0,17}){0,99}$", description = "1..100 comma-separated ids, e.g. `3,1,2`")),
    responses(
        (status = 200, description = "In the order asked, unknown ids left out, duplicates once", body = crate::views::UserList),
    ))]
pub async fn batch(state: web::Data<AppState>, query: web::Query<BatchQuery>) -> Result<HttpResponse, ApiError> {
    let ids = UserIds::parse(query.ids.as_deref())?;
    let users: Vec<PublicUser> = players::profiles(&state, ids.as_slice())
        .await?
        .iter()
        .map(|(user, ranks)| PublicUser::new(user, *ranks))
        .collect();
    Ok(HttpResponse::Ok().json(UserList { users }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryQuery {
    limit: Option<String>,
    before: Option<String>,
    board: Option<String>,
}

#[utoipa::path(get, path = paths::USER_SCORES, operation_id = "getUserScores", summary = "A player's posts, newest first", tag = "players",
    params(
        ("id" = i64, Path, minimum = 1, description = "User id"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "1..100, default 20"),
        ("before" = Option<i64>, Query, minimum = 1, description = "Only scores with a smaller id (from `next_before`)"),
        ("board" = Option<String>, Query, pattern = "^[a-z0-9_-]{1,64}$", description = "A custom board's id: its posts (each with `metadata` and `period`); default, `best` or `total`: the `/api/scores` log"),
    ),
    responses((status = 200, description = "Newest first: a `ScoreHistory`, or a `BoardHistory` with `board`", body = crate::views::ScoreHistory)))]
pub async fn history(
    state: web::Data<AppState>,
    path: web::Path<String>,
    query: web::Query<HistoryQuery>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&path, ErrorCode::UserNotFound)?;
    let limit = PageLimit::parse(query.limit.as_deref(), 20)?;
    let before = parse_before(query.before.as_deref())?;
    if let Some(board) = query.board.as_deref().filter(|board| Board::builtin(board).is_none()) {
        return Ok(HttpResponse::Ok().json(boards::history(&state, id, board, before, limit.value()).await?));
    }
    let history = players::history(&state, id, before, limit.value()).await?;
    let scores = history.scores.iter().map(ScoreView::from).collect();
    Ok(HttpResponse::Ok().json(ScoreHistory { scores, next_before: history.next_before }))
}

#[utoipa::path(get, path = paths::USER_BOARDS, operation_id = "getUserBoards", summary = "A player's entries on every board", tag = "players",
    params(("id" = i64, Path, minimum = 1, description = "User id")),
    responses((status = 200, description = "The player's current entries on every board, the built-ins first", body = crate::views::UserBoards)))]
pub async fn user_boards(state: web::Data<AppState>, path: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&path, ErrorCode::UserNotFound)?;
    Ok(HttpResponse::Ok().json(boards::user_boards(&state, id).await?))
}

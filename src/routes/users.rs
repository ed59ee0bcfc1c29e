//! `/api/users`: registration, profiles, batched lookups and score history.

use std::collections::HashMap;

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::Value;

use super::sessions::start_session;
use super::{client_address, parse_id, JsonObject};
use crate::domain::{parse_before, DisplayName, LoginName, PageLimit, Password, Timestamp, UserIds};
use crate::error::ApiError;
use crate::limits::Limit;
use crate::rank::UserRanks;
use crate::state::AppState;
use crate::store::{NewUser, UserRow};
use crate::views::{PublicUser, ScoreHistory, ScoreView, UserList};

#[utoipa::path(post, path = "/api/users", tag = "accounts",
    request_body = crate::routes::openapi::RegisterRequest,
    responses(
        (status = 201, description = "Registered and logged in; also sets the `session` cookie", body = crate::views::SessionCreated),
        (status = 400, description = "`invalid_json`, `invalid_body`", body = crate::routes::openapi::ErrorBody),
        (status = 409, description = "`login_name_taken`", body = crate::routes::openapi::ErrorBody),
        (status = 413, description = "`payload_too_large`", body = crate::routes::openapi::ErrorBody),
        (status = 415, description = "`unsupported_media_type`", body = crate::routes::openapi::ErrorBody),
        (status = 422, description = "`invalid_login_name`, `invalid_password`, `invalid_display_name`", body = crate::routes::openapi::ErrorBody),
        (status = 429, description = "`too_many_requests` (registrations per address), with `Retry-After`", body = crate::routes::openapi::ErrorBody),
        (status = 503, description = "`hashing_busy`, `database_unavailable`, with `Retry-After`", body = crate::routes::openapi::ErrorBody),
    ))]
pub async fn register(
    state: web::Data<AppState>,
    request: HttpRequest,
    body: JsonObject,
) -> Result<HttpResponse, ApiError> {
    let address = client_address(&request, state.settings.trust_forwarded_for);
    state.limits.check(Limit::RegistrationPerAddress, &address).await?;
    let login_name = LoginName::parse(body.get("login_name"))?;
    let password = Password::parse(body.get("password"))?;
    let display_name = match body.get("display_name") {
        None | Some(Value::Null) => DisplayName::from_login_name(&login_name),
        Some(raw) => DisplayName::parse(raw)?,
    };
    let password_hash = state.passwords.hash(&password).await?;
    let mut conn = state.store.conn().await?;
    let new_user = NewUser {
        login_name: login_name.as_str(),
        login_key: &login_name.key(),
        display_name: display_name.as_str(),
        password_hash: &password_hash,
        created_at: Timestamp::now(),
    };
    let user_id = state
        .store
        .insert_user(&mut conn, &new_user)
        .await?
        .ok_or_else(|| ApiError::conflict("login_name_taken", "that login name is taken"))?;
    drop(conn);
    start_session(&state, user_id, actix_web::http::StatusCode::CREATED).await
}

/// Users with their ranks, in one query whatever their number; unknown ids
/// are left out, order is the order asked.
pub(super) async fn load_profiles(state: &AppState, ids: &[i64]) -> Result<Vec<(UserRow, UserRanks)>, ApiError> {
    let rows = load_rows(state, ids).await?;
    let refs: Vec<&UserRow> = rows.iter().collect();
    let ranks = state.ranks.ranks_of(&refs).await?;
    let mut by_id: HashMap<i64, (UserRow, UserRanks)> =
        rows.into_iter().zip(ranks).map(|(row, ranks)| (row.id, (row, ranks))).collect();
    Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
}

/// Rows from Redis where cached (one `MGET`), the rest from the database
/// (one `IN (…)` query), which then refill Redis.
async fn load_rows(state: &AppState, ids: &[i64]) -> Result<Vec<UserRow>, ApiError> {
    let (mut rows, missing) = match &state.users {
        Some(users) => users.get_many(ids).await,
        None => (Vec::new(), ids.to_vec()),
    };
    if !missing.is_empty() {
        let mut conn = state.store.conn().await?;
        let loaded = state.store.users(&mut conn, &missing).await?;
        drop(conn);
        if let Some(users) = &state.users {
            users.put_many(&loaded).await;
        }
        rows.extend(loaded);
    }
    Ok(rows)
}

/// One user with ranks, or `None`.
pub(super) async fn load_profile(state: &AppState, id: i64) -> Result<Option<(UserRow, UserRanks)>, ApiError> {
    Ok(load_profiles(state, &[id]).await?.pop())
}

fn user_not_found() -> ApiError {
    ApiError::not_found("user_not_found", "no user with that id")
}

#[utoipa::path(get, path = "/api/users/{id}", tag = "players",
    params(("id" = i64, Path, minimum = 1, description = "User id")),
    responses(
        (status = 200, body = crate::views::PublicUser),
        (status = 404, description = "`user_not_found`", body = crate::routes::openapi::ErrorBody),
    ))]
pub async fn profile(state: web::Data<AppState>, path: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&path, user_not_found)?;
    let (user, ranks) = load_profile(&state, id).await?.ok_or_else(user_not_found)?;
    Ok(HttpResponse::Ok().json(PublicUser::new(&user, ranks)))
}

#[derive(Deserialize)]
pub struct BatchQuery {
    ids: Option<String>,
}

#[utoipa::path(get, path = "/api/users", tag = "players",
    params(("ids" = String, Query, pattern = r"^[1-9][0-9]{0,17}(,[1-9][0-9]{0,17}){0,99}$", description = "1..100 comma-separated ids, e.g. `3,1,2`")),
    responses(
        (status = 200, description = "In the order asked, unknown ids left out, duplicates once", body = crate::views::UserList),
        (status = 400, description = "`invalid_ids`, `invalid_query`", body = crate::routes::openapi::ErrorBody),
    ))]
pub async fn batch(state: web::Data<AppState>, query: web::Query<BatchQuery>) -> Result<HttpResponse, ApiError> {
    let ids = UserIds::parse(query.ids.as_deref())?;
    let users: Vec<PublicUser> = load_profiles(&state, ids.as_slice())
        .await?
        .iter()
        .map(|(user, ranks)| PublicUser::new(user, *ranks))
        .collect();
    Ok(HttpResponse::Ok().json(UserList { users }))
}

#[derive(Deserialize)]
pub struct HistoryQuery {
    limit: Option<String>,
    before: Option<String>,
}

#[utoipa::path(get, path = "/api/users/{id}/scores", tag = "players",
    params(
        ("id" = i64, Path, minimum = 1, description = "User id"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "1..100, default 20"),
        ("before" = Option<i64>, Query, minimum = 1, description = "Only scores with a smaller id (from `next_before`)"),
    ),
    responses(
        (status = 200, description = "Newest first", body = crate::views::ScoreHistory),
        (status = 400, description = "`invalid_limit`, `invalid_before`, `invalid_query`", body = crate::routes::openapi::ErrorBody),
        (status = 404, description = "`user_not_found`", body = crate::routes::openapi::ErrorBody),
    ))]
pub async fn history(
    state: web::Data<AppState>,
    path: web::Path<String>,
    query: web::Query<HistoryQuery>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_id(&path, user_not_found)?;
    let limit = PageLimit::parse(query.limit.as_deref(), 20)?;
    let before = parse_before(query.before.as_deref())?;
    let mut conn = state.store.conn().await?;
    if state.store.user(&mut conn, id).await?.is_none() {
        return Err(user_not_found());
    }
    let mut rows = state.store.score_history(&mut conn, id, before, limit.value() + 1).await?;
    let has_more = rows.len() as i64 > limit.value();
    rows.truncate(limit.value() as usize);
    let next_before = if has_more { rows.last().map(|row| row.id) } else { None };
    Ok(HttpResponse::Ok().json(ScoreHistory { scores: rows.iter().map(ScoreView::from).collect(), next_before }))
}

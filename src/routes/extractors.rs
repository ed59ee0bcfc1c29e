//! Who a request comes from, as handler arguments: a handler that takes
//! an `AuthUser` requires a live session, one that takes an `Actor` the
//! admin token, and its signature says so. The one bearer-token parser.

use std::future::Future;
use std::pin::Pin;

use actix_web::http::header;
use actix_web::{web, FromRequest, HttpRequest};

use actix_web::dev::Payload;
use futures_util::future::LocalBoxFuture;

use super::client_address;
use crate::auth::{ServerKey, SessionToken, COOKIE_NAME};
use crate::domain::KeyRole;
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::telemetry::Metrics;
use crate::usecases::keys;
use crate::usecases::moderation::Actor;
use crate::usecases::scores::Author;
use crate::usecases::sessions::{self, SessionOwner};

/// A caller with a live session. Put it in a handler's arguments to require one.
#[derive(Debug, Clone)]
pub struct AuthUser {
    pub user_id: i64,
    /// The data generation the session belongs to.
    pub generation: i64,
    /// The stored hash of the presented token (what logout deletes).
    pub token_hash: String,
}

impl FromRequest for AuthUser {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        let token = presented_token(req);
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let cross_origin = state.as_ref().is_some_and(|state| cookie_write_from_elsewhere(req, state));
        Box::pin(async move {
            let state = state.ok_or_else(|| ApiError::internal(anyhow::anyhow!("AppState missing")))?;
            if cross_origin {
                return Err(ErrorCode::CrossOrigin.into());
            }
            let token_hash = token.ok_or(ErrorCode::SessionRequired)?.hash();
            let SessionOwner { user_id, generation } =
                sessions::session_user(&state, &token_hash).await?.ok_or(ErrorCode::InvalidSession)?;
            Ok(Self { user_id, generation, token_hash })
        })
    }
}

impl AuthUser {
    pub fn owner(&self) -> SessionOwner {
        SessionOwner { user_id: self.user_id, generation: self.generation }
    }
}

/// Who posts a score: a server key (`Authorization: Bearer hsk_…`, looked
/// up in the database on every post, so a revoked key is refused at once
/// on every instance) or else a player's session, as `AuthUser`.
impl FromRequest for Author {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let metrics = req.app_data::<web::Data<Metrics>>().cloned();
        let server_key = bearer_token(req).and_then(ServerKey::from_bearer);
        let session = AuthUser::from_request(req, payload);
        Box::pin(async move {
            let state = state.ok_or_else(|| ApiError::internal(anyhow::anyhow!("AppState missing")))?;
            if let Some(key) = server_key {
                if let Some((id, role)) = keys::authenticate(&state, &key).await? {
                    // An admin key (moderator, viewer) posts nothing.
                    if role != Some(KeyRole::Server) {
                        return Err(ErrorCode::ForbiddenForRole.into());
                    }
                    if let Some(metrics) = metrics {
                        metrics.server_key_posts.with_label_values(&[&id.0.to_string()]).inc();
                    }
                    return Ok(Self::Server(id));
                }
                // A session token may begin like a key (1 in 64^4): it is
                // still a session. Anything else is a dead key.
                return session
                    .await
                    .map(|user| Self::Player(user.owner()))
                    .map_err(|_| ErrorCode::InvalidServerKey.into());
            }
            Ok(Self::Player(session.await?.owner()))
        })
    }
}

/// A game server acting for a player (v4 rewards): a live `server` key or
/// the admin token. A player's session is 403 `server_only`, an admin key
/// of another role 403 `forbidden_for_role`, anything else 401.
pub struct GameServer;

impl FromRequest for GameServer {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let token = bearer_token(req).map(str::to_owned);
        let session = AuthUser::from_request(req, payload);
        Box::pin(async move {
            let state = state.ok_or_else(|| ApiError::internal(anyhow::anyhow!("AppState missing")))?;
            if token.as_deref().is_some_and(|token| crate::usecases::admin::is_admin_token(&state, token)) {
                return Ok(Self);
            }
            if let Some(key) = token.as_deref().and_then(ServerKey::from_bearer) {
                if let Some((_, role)) = keys::authenticate(&state, &key).await? {
                    return match role {
                        Some(KeyRole::Server) => Ok(Self),
                        _ => Err(ErrorCode::ForbiddenForRole.into()),
                    };
                }
            }
            match session.await {
                Ok(_) => Err(ErrorCode::ServerOnly.into()),
                Err(_) => Err(ApiError::with_message(
                    ErrorCode::InvalidServerKey,
                    "send Authorization: Bearer <a live server key> (or the admin token)",
                )),
            }
        })
    }
}

/// The operator behind an admin request (see `usecases::admin::authorize`):
/// every `/api/admin/` handler takes one, so none runs its use case, or
/// reads its body, without the admin token or a key whose role reaches
/// the route (`routes::access`). Only the `Authorization` header counts,
/// never a cookie.
impl FromRequest for Actor {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(request: &HttpRequest, _: &mut Payload) -> Self::Future {
        let state = request.app_data::<web::Data<AppState>>().cloned();
        let token = bearer_token(request).map(str::to_owned);
        let address = state.as_ref().map(|state| client_address(request, state.settings.trust_forwarded_for));
        let needed = super::access::needed(request.method().as_str(), request.match_pattern().as_deref());
        Box::pin(async move {
            let state = state.ok_or_else(|| ApiError::internal(anyhow::anyhow!("AppState missing")))?;
            crate::usecases::admin::authorize(&state, &address.unwrap_or_default(), token.as_deref(), needed).await
        })
    }
}

/// The token of an `Authorization: Bearer <token>` header, if there is
/// one: the scheme in any case (RFC 7235), the token trimmed and not empty.
/// Players' sessions and the admin token are read alike.
fn bearer_token(req: &HttpRequest) -> Option<&str> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim_start().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Whether a write carries the session cookie from another site's page
/// (a cross-site request forgery). SameSite=Lax keeps the cookie off
/// cross-site POSTs, but not off a sibling subdomain's (same site), and a
/// write without a JSON body (joining a tournament) has no content type
/// for a form to fail on. So a write authenticated by the cookie must come
/// from this origin or one of `CORS_ALLOWED_ORIGINS`: by the browser's
/// `Sec-Fetch-Site` (`same-origin`, or `none` for the user's own action),
/// and from browsers too old to send it, by an `Origin` whose host is the
/// request's (ports aside: a proxy in front may drop the port from
/// `Host`). Clients that send the bearer token, and non-browser clients
/// (neither header), are not concerned.
fn cookie_write_from_elsewhere(req: &HttpRequest, state: &AppState) -> bool {
    let safe = matches!(*req.method(), actix_web::http::Method::GET | actix_web::http::Method::HEAD);
    if safe || bearer_token(req).is_some() || req.cookie(COOKIE_NAME).is_none() {
        return false;
    }
    let headers = req.headers();
    let text = |name| headers.get(name).and_then(|value: &header::HeaderValue| value.to_str().ok());
    let origin = text(header::ORIGIN);
    let allowed = origin.is_some_and(|origin| state.settings.cors_origins().any(|allowed| allowed == origin));
    if allowed {
        return false;
    }
    match (text(header::HeaderName::from_static("sec-fetch-site")), origin) {
        (Some(site), _) => !matches!(site, "same-origin" | "none"),
        (None, Some(origin)) => {
            let host_of = |authority: &str| match authority.rsplit_once(':') {
                Some((host, port)) if !port.ends_with(']') => host.to_owned(),
                _ => authority.to_owned(),
            };
            let origin_host = origin.split_once("://").map_or(String::new(), |(_, authority)| host_of(authority));
            !origin_host.eq_ignore_ascii_case(&host_of(text(header::HOST).unwrap_or_default()))
        }
        (None, None) => false,
    }
}

/// The bearer token if there is one, else the session cookie.
fn presented_token(req: &HttpRequest) -> Option<SessionToken> {
    match bearer_token(req) {
        Some(token) => Some(SessionToken::from_client(token)),
        None => req.cookie(COOKIE_NAME).filter(|c| !c.value().is_empty()).map(|c| SessionToken::from_client(c.value())),
    }
}

#[cfg(test)]
mod tests {
    use actix_web::http::header::AUTHORIZATION;
    use actix_web::test::TestRequest;

    use super::bearer_token;

    #[test]
    fn the_bearer_scheme_is_read_in_any_case() {
        let token_of = |value: &str| {
            let request = TestRequest::default().insert_header((AUTHORIZATION, value)).to_http_request();
            bearer_token(&request).map(str::to_owned)
        };
        for value in ["Bearer abc", "bearer abc", "BEARER abc", "Bearer  abc ", " Bearer abc"] {
            assert_eq!(token_of(value).as_deref(), Some("abc"), "{value:?}");
        }
        for value in ["Basic abc", "Bearer", "Bearer ", "Bearerabc", "abc"] {
            assert_eq!(token_of(value), None, "{value:?}");
        }
    }
}

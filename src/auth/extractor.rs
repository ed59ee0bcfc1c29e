//! The `AuthUser` extractor: a handler that takes one requires a live
//! session, and its signature says so.

use std::future::Future;
use std::pin::Pin;

use actix_web::http::header;
use actix_web::{web, FromRequest, HttpRequest};

use super::session::{SessionToken, COOKIE_NAME};
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
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
        Box::pin(async move {
            let state = state.ok_or_else(|| ApiError::internal(anyhow::anyhow!("AppState missing")))?;
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

/// The bearer token if there is one, else the session cookie.
fn presented_token(req: &HttpRequest) -> Option<SessionToken> {
    let bearer = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer ")))
        .map(str::trim)
        .filter(|token| !token.is_empty());
    match bearer {
        Some(token) => Some(SessionToken::from_client(token)),
        None => req.cookie(COOKIE_NAME).filter(|c| !c.value().is_empty()).map(|c| SessionToken::from_client(c.value())),
    }
}

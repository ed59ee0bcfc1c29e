//! The one error type every handler returns, rendered as the contract's
//! `{"error": {"code", "message"}}` envelope.
//!
//! Never put internals (SQL, driver messages, paths) into a response body:
//! 5xx causes are logged here and the client gets a generic message.

use actix_web::http::{header, StatusCode};
use actix_web::{HttpResponse, ResponseError};
use serde_json::json;

/// Seconds a client should wait before retrying after a 503.
const RETRY_AFTER_UNAVAILABLE_SECS: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: malformed body, query string or header.
    #[error("{message}")]
    BadRequest { code: &'static str, message: String },
    /// 401: missing or invalid session or credentials.
    #[error("{message}")]
    Unauthorized { code: &'static str, message: String },
    /// 403: authenticated, but not allowed.
    #[error("{message}")]
    Forbidden { code: &'static str, message: String },
    /// 404: unknown resource or route.
    #[error("{message}")]
    NotFound { code: &'static str, message: String },
    /// 405: the path exists, the method does not.
    #[error("method not allowed")]
    MethodNotAllowed {
        /// The methods the path does answer, for the `Allow` header.
        allow: String,
    },
    /// 409: conflicts with existing data.
    #[error("{message}")]
    Conflict { code: &'static str, message: String },
    /// 413: body over the configured limit.
    #[error("request body is too large")]
    PayloadTooLarge,
    /// 415: a body that is not JSON.
    #[error("request body must be JSON (Content-Type: application/json)")]
    UnsupportedMediaType,
    /// 422: a field fails validation; `code` names the field.
    #[error("{message}")]
    Validation { code: &'static str, message: String },
    /// 429: a rate limit; `Retry-After` says when to come back.
    #[error("{message}")]
    TooManyRequests { message: String, retry_after: std::time::Duration },
    /// 503: a dependency (the database) is down or saturated.
    #[error("{message}")]
    Unavailable { code: &'static str, message: String },
    /// 500: a bug or an unexpected failure; logged, never shown.
    #[error(transparent)]
    Internal(anyhow::Error),
}

impl ApiError {
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::BadRequest { code, message: message.into() }
    }
    pub fn unauthorized(code: &'static str, message: impl Into<String>) -> Self {
        Self::Unauthorized { code, message: message.into() }
    }
    pub fn forbidden(code: &'static str, message: impl Into<String>) -> Self {
        Self::Forbidden { code, message: message.into() }
    }
    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Self::NotFound { code, message: message.into() }
    }
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::Conflict { code, message: message.into() }
    }
    pub fn validation(code: &'static str, message: impl Into<String>) -> Self {
        Self::Validation { code, message: message.into() }
    }
    pub fn too_many_requests(message: impl Into<String>, retry_after: std::time::Duration) -> Self {
        Self::TooManyRequests { message: message.into(), retry_after }
    }
    pub fn unavailable(code: &'static str, message: impl Into<String>) -> Self {
        Self::Unavailable { code, message: message.into() }
    }

    /// The contract's snake_case error code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadRequest { code, .. }
            | Self::Unauthorized { code, .. }
            | Self::Forbidden { code, .. }
            | Self::NotFound { code, .. }
            | Self::Conflict { code, .. }
            | Self::Validation { code, .. }
            | Self::Unavailable { code, .. } => code,
            Self::MethodNotAllowed { .. } => "method_not_allowed",
            Self::PayloadTooLarge => "payload_too_large",
            Self::TooManyRequests { .. } => "too_many_requests",
            Self::UnsupportedMediaType => "unsupported_media_type",
            Self::Internal(_) => "internal_error",
        }
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(error: anyhow::Error) -> Self {
        Self::from_internal(error)
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(error: sqlx::Error) -> Self {
        match error {
            // Saturated pool or a database that does not answer: the client
            // may retry, nothing about it is a bug in the request.
            sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) => {
                tracing::warn!(error = %error, "database unavailable");
                Self::unavailable("database_unavailable", "the database is not answering; retry shortly")
            }
            other => Self::Internal(other.into()),
        }
    }
}

impl ApiError {
    /// Internal errors that are really a saturated resource become 503s.
    pub fn from_internal(error: anyhow::Error) -> Self {
        if error.is::<crate::auth::HashingBusy>() {
            return Self::unavailable("hashing_busy", "too many logins at once; retry shortly");
        }
        Self::Internal(error)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::BadRequest { .. } => StatusCode::BAD_REQUEST,
            Self::Unauthorized { .. } => StatusCode::UNAUTHORIZED,
            Self::Forbidden { .. } => StatusCode::FORBIDDEN,
            Self::NotFound { .. } => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Self::Conflict { .. } => StatusCode::CONFLICT,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::Validation { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            Self::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let message = match self {
            Self::Internal(cause) => {
                tracing::error!(error = format!("{cause:#}"), "internal error");
                "internal error".to_owned()
            }
            other => other.to_string(),
        };
        let mut response = HttpResponse::build(self.status_code());
        match self {
            Self::Unavailable { .. } => {
                response.insert_header((header::RETRY_AFTER, RETRY_AFTER_UNAVAILABLE_SECS.to_string()));
            }
            Self::MethodNotAllowed { allow } => {
                response.insert_header((header::ALLOW, allow.clone()));
            }
            Self::TooManyRequests { retry_after, .. } => {
                // Whole seconds, rounded up, at least 1.
                let seconds = retry_after.as_millis().div_ceil(1000).max(1);
                response.insert_header((header::RETRY_AFTER, seconds.to_string()));
            }
            _ => {}
        }
        response.json(json!({"error": {"code": self.code(), "message": message}}))
    }
}

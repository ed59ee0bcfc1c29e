//! The one error type every handler returns, rendered as the contract's
//! `{"error": {"code", "message"}}` envelope. Codes, statuses and default
//! messages live in [`ErrorCode`]. This module depends on nothing else in
//! the crate: each lower layer says what its failures mean to a client
//! beside them (the store's `From<StoreError>`, the hasher's 503).
//!
//! Never put internals (SQL, driver messages, paths) into a response body:
//! 5xx causes are logged here and the client gets a generic message.

mod code;

use std::borrow::Cow;
use std::time::Duration;

use actix_web::http::{header, StatusCode};
use actix_web::{HttpResponse, ResponseError};
use serde_json::json;

pub use self::code::ErrorCode;

/// Seconds a client should wait before retrying after a 503.
const RETRY_AFTER_UNAVAILABLE_SECS: u32 = 1;

/// Why a request was turned away to come back later (429, 503): a limit's
/// name or the error code. Carried on the response for the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rejection(pub &'static str);

/// An error answer: a code, a message for humans, and what some codes carry.
#[derive(Debug)]
pub struct ApiError {
    code: ErrorCode,
    message: Cow<'static, str>,
    detail: Detail,
}

#[derive(Debug)]
enum Detail {
    None,
    /// 429: when to come back, and which limit said so (for `/metrics`).
    RetryAfter(Duration, &'static str),
    /// 405: the methods the path does answer, for the `Allow` header.
    Allow(String),
    /// 500: the cause, for the log only.
    Internal(anyhow::Error),
}

impl ApiError {
    /// The code with its default message.
    pub fn new(code: ErrorCode) -> Self {
        Self { code, message: Cow::Borrowed(code.default_message()), detail: Detail::None }
    }

    /// The code with a message more specific than its default.
    pub fn with_message(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> Self {
        Self { code, message: message.into(), detail: Detail::None }
    }

    /// 429 from the limit named `reason` (a fixed name: it becomes a metric label).
    pub fn too_many_requests(
        message: impl Into<Cow<'static, str>>,
        retry_after: Duration,
        reason: &'static str,
    ) -> Self {
        Self {
            detail: Detail::RetryAfter(retry_after, reason),
            ..Self::with_message(ErrorCode::TooManyRequests, message)
        }
    }

    pub fn method_not_allowed(allow: String) -> Self {
        Self { detail: Detail::Allow(allow), ..Self::new(ErrorCode::MethodNotAllowed) }
    }

    /// A bug or an unexpected failure: logged with its cause, shown as
    /// `internal_error`.
    pub fn internal(error: impl Into<anyhow::Error>) -> Self {
        Self { detail: Detail::Internal(error.into()), ..Self::new(ErrorCode::InternalError) }
    }

    pub fn code(&self) -> ErrorCode {
        self.code
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// The contract's `{"error": {"code", "message"}}` body.
    pub fn envelope(&self) -> actix_web::web::Bytes {
        let body = json!({"error": {"code": self.code.as_str(), "message": self.message}});
        actix_web::web::Bytes::from(body.to_string())
    }
}

impl From<ErrorCode> for ApiError {
    fn from(code: ErrorCode) -> Self {
        Self::new(code)
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.detail {
            Detail::Internal(cause) => write!(f, "{}: {cause:#}", self.code.as_str()),
            _ => write!(f, "{}: {}", self.code.as_str(), self.message),
        }
    }
}

impl std::error::Error for ApiError {}

impl From<anyhow::Error> for ApiError {
    fn from(error: anyhow::Error) -> Self {
        Self::internal(error)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    fn error_response(&self) -> HttpResponse {
        if let Detail::Internal(cause) = &self.detail {
            tracing::error!(error = format!("{cause:#}"), "internal error");
        }
        let mut response = HttpResponse::build(self.status_code());
        match &self.detail {
            Detail::RetryAfter(wait, reason) => {
                // Whole seconds, rounded up, at least 1.
                let seconds = wait.as_millis().div_ceil(1000).max(1);
                response.insert_header((header::RETRY_AFTER, seconds.to_string()));
                response.extensions_mut().insert(Rejection(reason));
            }
            Detail::Allow(allow) => {
                response.insert_header((header::ALLOW, allow.clone()));
            }
            Detail::None | Detail::Internal(_) => {}
        }
        if self.code.status() == 503 {
            response.insert_header((header::RETRY_AFTER, RETRY_AFTER_UNAVAILABLE_SECS.to_string()));
            response.extensions_mut().insert(Rejection(self.code.as_str()));
        }
        response.content_type(actix_web::http::header::ContentType::json()).body(self.envelope())
    }
}

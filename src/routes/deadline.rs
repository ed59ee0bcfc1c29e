//! A deadline for reading a request body. Without nginx in front, a client
//! that sends headers and then stalls its body would hold a worker's
//! connection and its handler forever: the body stream fails with a
//! timeout instead, which the JSON extractor turns into 408
//! `request_timeout` (see `routes::body_error`).

use std::io;
use std::time::Duration;

use actix_web::dev::{Payload, ServiceRequest};
use actix_web::error::PayloadError;
use actix_web::{web, HttpMessage as _};
use futures_util::StreamExt as _;

use crate::state::AppState;

/// What the body stream fails with at the deadline.
pub const STALLED_BODY: &str = "the request body did not arrive in time";

/// Puts the deadline on the request's body, if it has one.
pub fn limit_body(req: &mut ServiceRequest) {
    let body = req.take_payload();
    if matches!(body, Payload::None) {
        // No body to wait for (a GET, or a request without one).
        req.set_payload(body);
        return;
    }
    let timeout = req
        .app_data::<web::Data<AppState>>()
        .map_or(Duration::from_secs(10), |state| Duration::from_millis(state.settings.body_timeout_ms));
    let deadline = tokio::time::Instant::now() + timeout;
    // Ends after the timeout's error, as a stream must after a failure.
    let timed = futures_util::stream::unfold(Some(body), move |body| async move {
        let mut body = body?;
        match tokio::time::timeout_at(deadline, body.next()).await {
            Ok(Some(chunk)) => Some((chunk, Some(body))),
            Ok(None) => None,
            Err(_) => Some((Err(PayloadError::Io(io::Error::new(io::ErrorKind::TimedOut, STALLED_BODY))), None)),
        }
    });
    req.set_payload(Payload::Stream { payload: Box::pin(timed) });
}

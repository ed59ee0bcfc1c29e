//! The one middleware every request passes through, before its route:
//! its id, span and metrics (`telemetry`), its place among the requests in
//! flight (`drain`), the refusal of a path with an encoded separator
//! (`routes::has_encoded_separator`), the deadline on its body
//! (`routes::limit_body`) and the `nosniff` header. A kept answer (a
//! ranking page, a profile) is given here, by its address, without the
//! router (`routes::kept_answer`); with Redis, the answer to a request
//! that may have written waits out other instances' page leases
//! (`redis::PageLease`). One layer, not five:
//! each `from_fn` layer costs a boxed service call and a future of its own
//! per request, which a cached page, answered in a few microseconds, paid
//! for five times (issue 43; BENCHMARKS.md, "Reads at the framework's
//! floor").

use std::panic::AssertUnwindSafe;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::middleware::Next;
use actix_web::web;
use futures_util::FutureExt as _;
use tracing::Instrument as _;

use crate::drain::Drain;
use crate::error::{ApiError, ErrorCode};
use crate::routes::{has_encoded_separator, kept_answer, limit_body};
use crate::state::AppState;
use crate::telemetry::Observation;

pub async fn front(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let observation = Observation::begin(&req);
    let drain = req.app_data::<web::Data<Drain>>().cloned();
    // GET and HEAD change nothing (and take no reference here: a read is
    // the hot path); anything else may have moved a board.
    let shared = if req.method().is_safe() {
        None
    } else {
        req.app_data::<web::Data<AppState>>().and_then(|state| state.redis.clone())
    };
    let outcome = {
        // Counted until its response is ready.
        let _in_flight = drain.as_ref().map(|drain| drain.enter());
        if has_encoded_separator(req.uri().path()) {
            Ok(Ok(req.error_response(ApiError::new(ErrorCode::InvalidPath)).map_into_boxed_body()))
        } else if let Some(kept) = kept_answer(&req) {
            Ok(Ok(req.into_response(kept)))
        } else {
            limit_body(&mut req);
            let span = observation.span().clone();
            let answered = AssertUnwindSafe(next.call(req)).catch_unwind().instrument(span).await;
            if let Some(redis) = &shared {
                redis.page_lease().settle().await;
            }
            answered.map(|result| result.map(ServiceResponse::map_into_boxed_body))
        }
    };
    let mut response = observation.finish(outcome)?;
    if let Some(drain) = &drain {
        drain.close_if_draining(&mut response);
    }
    // Browsers must not guess content types (JSON read as HTML); set here
    // so it holds without nginx too.
    let headers = response.headers_mut();
    if !headers.contains_key(header::X_CONTENT_TYPE_OPTIONS) {
        headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    }
    Ok(response)
}

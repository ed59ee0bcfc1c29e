//! The one middleware every request passes through, before its route:
//! its id, span and metrics (`telemetry`), its place among the requests in
//! flight (`drain`), the refusal of a path with an encoded separator
//! (`routes::has_encoded_separator`), the deadline on its body
//! (`routes::limit_body`) and the `nosniff` header. A kept answer (a
//! ranking page, a profile) is given here, by its address, without the
//! router (`routes::kept_answer`); with Redis, the answer to a request
//! that may have written waits out other instances' page leases
//! (`redis::PageLease`).
//!
//! One layer, not five, and written as a service rather than with
//! `from_fn`: an answer given here (a kept one, a refused path) is ready
//! when the request arrives, so it goes back as a ready future, with no
//! future of its own to build, move and poll, and without the in-flight
//! count (nothing is in flight between two awaits). A cached page,
//! answered in a few microseconds, paid for each of those (issue 43;
//! BENCHMARKS.md, "Reads at the framework's floor").

use std::future::{ready, Ready};
use std::panic::AssertUnwindSafe;
use std::rc::Rc;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{forward_ready, Service, ServiceRequest, ServiceResponse, Transform};
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::ConnectionType;
use actix_web::web;
use futures_util::future::{Either, LocalBoxFuture};
use futures_util::FutureExt as _;
use tracing::Instrument as _;

use crate::drain::Drain;
use crate::error::{ApiError, ErrorCode};
use crate::routes::{has_encoded_separator, kept_answer, limit_body};
use crate::state::AppState;
use crate::telemetry::{Metrics, Observation, RouteName};

/// The middleware, with what it counts in and what it counts against
/// (`App::wrap(Front { … })`): held by each worker's service, so a kept
/// answer reads them without a lookup or a reference count.
pub struct Front {
    pub metrics: web::Data<Metrics>,
    pub drain: web::Data<Drain>,
}

impl<S, B> Transform<S, ServiceRequest> for Front
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error> + 'static,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<BoxBody>;
    type Error = actix_web::Error;
    type Transform = FrontService<S>;
    type InitError = ();
    type Future = Ready<Result<Self::Transform, Self::InitError>>;

    fn new_transform(&self, service: S) -> Self::Future {
        ready(Ok(FrontService { routes: Rc::new(service), metrics: self.metrics.clone(), drain: self.drain.clone() }))
    }
}

pub struct FrontService<S> {
    /// The router and the routes behind it.
    routes: Rc<S>,
    metrics: web::Data<Metrics>,
    drain: web::Data<Drain>,
}

type Answer = Result<ServiceResponse<BoxBody>, actix_web::Error>;

impl<S, B> Service<ServiceRequest> for FrontService<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error> + 'static,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<BoxBody>;
    type Error = actix_web::Error;
    type Future = Either<Ready<Answer>, LocalBoxFuture<'static, Answer>>;

    forward_ready!(routes);

    fn call(&self, mut req: ServiceRequest) -> Self::Future {
        let observation = Observation::begin(&req);
        if has_encoded_separator(req.uri().path()) {
            let refused = req.error_response(ApiError::new(ErrorCode::InvalidPath)).map_into_boxed_body();
            return Either::Left(ready(self.finish(observation, Ok(Ok(refused)), None)));
        }
        if let Some((kept, route)) = kept_answer(&req) {
            let answer = Ok(Ok(req.into_response(kept)));
            return Either::Left(ready(self.finish(observation, answer, Some(route))));
        }
        // GET and HEAD change nothing (and take no reference here: a read
        // is the hot path); anything else may have moved a board.
        let shared = if req.method().is_safe() {
            None
        } else {
            req.app_data::<web::Data<AppState>>().and_then(|state| state.redis.clone())
        };
        let this = self.clone();
        Either::Right(Box::pin(async move {
            let outcome = {
                // Counted until its response is ready.
                let _in_flight = this.drain.enter();
                limit_body(&mut req);
                let span = observation.span().clone();
                let answered = AssertUnwindSafe(this.routes.call(req)).catch_unwind().instrument(span).await;
                if let Some(redis) = &shared {
                    redis.page_lease().settle().await;
                }
                answered.map(|result| result.map(ServiceResponse::map_into_boxed_body))
            };
            this.finish(observation, outcome, None)
        }))
    }
}

impl<S> FrontService<S> {
    /// Counts and names the answer (`Observation::finish`), closes its
    /// connection while the instance drains, and marks its type as not to
    /// be guessed.
    fn finish(
        &self,
        observation: Observation,
        outcome: std::thread::Result<Answer>,
        route: Option<RouteName>,
    ) -> Answer {
        let mut response = observation.finish(outcome, route, &self.metrics)?;
        // While the instance drains, a response closes its connection, so a
        // keep-alive client cannot keep the instance busy with request after
        // request.
        if self.drain.is_draining() {
            response.response_mut().head_mut().set_connection_type(ConnectionType::Close);
        }
        // Browsers must not guess content types (JSON read as HTML); set
        // here so it holds without nginx too.
        let headers = response.headers_mut();
        if !headers.contains_key(header::X_CONTENT_TYPE_OPTIONS) {
            headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
        }
        Ok(response)
    }
}

impl<S> Clone for FrontService<S> {
    fn clone(&self) -> Self {
        Self { routes: Rc::clone(&self.routes), metrics: self.metrics.clone(), drain: self.drain.clone() }
    }
}

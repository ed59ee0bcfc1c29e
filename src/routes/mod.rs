//! HTTP routes, one file per resource. A handler parses its input into
//! domain types, calls one use case (`crate::usecases`), and shapes the
//! contract's JSON; it holds no SQL, no ranking logic and no Redis.

mod access;
mod admin;
mod boards;
mod console;
mod deadline;
mod docs;
mod encoded_separators;
mod extractors;
mod health;
mod kept;
mod keys;
mod leagues;
mod live;
mod me;
mod moderation;
pub mod openapi;
mod paths;
mod rankings;
mod reviews;
mod rewards;
mod schemas;
mod scores;
mod sessions;
mod users;
mod webhooks;

use actix_web::error::{JsonPayloadError, PathError, QueryPayloadError};
use actix_web::{web, HttpRequest};

pub use self::console::{page as console_page, to_page as console_redirect, CONSOLE_POLICY};
pub use self::deadline::limit_body;
pub use self::encoded_separators::has_encoded_separator;
pub use self::kept::kept_answer;
use crate::error::{ApiError, ErrorCode};
use crate::telemetry::RouteName;

/// Request bodies larger than this get 413.
pub const BODY_LIMIT_BYTES: usize = 16 * 1024;
/// ... except a board's or league's definition, which at the contract's
/// maxima (10,000 `partition_values` of 32 characters, 20 reward bands of
/// 1 KiB each escaped as a client may) needs more: up to this (the shipped
/// nginx's `client_max_body_size` for `/api/admin/`).
pub const DEFINITION_LIMIT_BYTES: usize = 512 * 1024;
/// The routes that take a definition.
const DEFINITION_ROUTES: [&str; 4] =
    [paths::ADMIN_BOARDS, paths::ADMIN_BOARD, paths::ADMIN_LEAGUES, paths::ADMIN_LEAGUE];

/// The route table: each path once (its text is a constant of `paths.rs`,
/// which the handlers' OpenAPI attributes name too), with its methods,
/// handlers and the error codes each can answer. It generates the registration, [`ROUTES`]
/// (the list the OpenAPI document is checked against) and
/// [`ROUTE_ERRORS`] (the error responses the document lists), so the
/// three cannot drift apart.
macro_rules! routes {
    ($( $path:path => { $( $method:ident : $handler:path => [$($code:ident),* $(,)?] ),+ $(,)? } ),+ $(,)?) => {
        /// Every (method, path) the service answers, in OpenAPI's spelling.
        pub const ROUTES: &[(&str, &str)] = &[ $( $( (stringify!($method), $path) ),+ ),+ ];

        /// The error codes each route can answer with (besides `internal_error`).
        pub const ROUTE_ERRORS: &[(&str, &str, &[ErrorCode])] =
            &[ $( $( (stringify!($method), $path, &[$(ErrorCode::$code),*]) ),+ ),+ ];

        fn register(cfg: &mut web::ServiceConfig) {
            let mut groups = Groups::default();
            $( groups.add(cfg, $path, |path| resource(path, $path, &[$(stringify!($method)),+]) $( .route(web::$method().to($handler)) )+ ); )+
            groups.mount(cfg);
        }
    };
}

routes! {
    paths::HEALTHZ => { get: health::healthz => [DatabaseUnavailable] },
    paths::LIVEZ => { get: health::livez => [] },
    paths::READYZ => { get: health::readyz => [ShuttingDown, DatabaseUnavailable] },
    paths::METRICS => { get: health::metrics => [] },
    paths::OPENAPI_DOCUMENT => { get: openapi::document => [] },
    paths::OPENAPI_REFERENCE => { get: openapi::reference => [] },
    paths::USERS => {
        post: users::register => [InvalidJson, InvalidBody, PayloadTooLarge, RequestTimeout, UnsupportedMediaType, LoginNameTaken,
            InvalidLoginName, InvalidPassword, InvalidDisplayName, TooManyRequests, HashingBusy, DatabaseUnavailable],
        get: users::batch => [InvalidIds, InvalidQuery, DatabaseUnavailable],
    },
    paths::USER => { get: users::profile => [UserNotFound, DatabaseUnavailable] },
    paths::USER_SCORES => {
        get: users::history => [InvalidLimit, InvalidBefore, InvalidQuery, UserNotFound, BoardNotFound, BuiltinBoard,
            DatabaseUnavailable],
    },
    paths::USER_BOARDS => { get: users::user_boards => [UserNotFound, DatabaseUnavailable] },
    paths::USER_REWARDS => {
        get: rewards::players => [InvalidStatus, InvalidLimit, InvalidQuery, InvalidServerKey, ServerOnly, ForbiddenForRole,
            UserNotFound, DatabaseUnavailable],
    },
    paths::USER_REWARD_CLAIM => {
        post: rewards::claim_players => [InvalidServerKey, ServerOnly, ForbiddenForRole, RewardNotFound, DatabaseUnavailable],
    },
    paths::SESSIONS => {
        post: sessions::login => [InvalidJson, InvalidBody, PayloadTooLarge, RequestTimeout, UnsupportedMediaType, InvalidCredentials, Banned,
            InvalidLoginName, InvalidPassword, TooManyRequests, HashingBusy, DatabaseUnavailable],
        delete: sessions::logout => [SessionRequired, InvalidSession, Banned, DatabaseUnavailable],
    },
    paths::ME => {
        get: me::me => [SessionRequired, InvalidSession, Banned, DatabaseUnavailable],
        patch: me::change => [InvalidJson, InvalidBody, PayloadTooLarge, RequestTimeout, UnsupportedMediaType, SessionRequired,
            InvalidSession, Banned, InvalidCredentials, InvalidDisplayName, InvalidPassword, InvalidCurrentPassword,
            InvalidChange, TooManyRequests, HashingBusy, DatabaseUnavailable],
        delete: me::erase => [InvalidJson, InvalidBody, PayloadTooLarge, RequestTimeout, UnsupportedMediaType, SessionRequired,
            InvalidSession, Banned, InvalidCredentials, InvalidPassword, TooManyRequests, HashingBusy, DatabaseUnavailable],
    },
    paths::ME_EXPORT => { get: me::export => [SessionRequired, InvalidSession, Banned, TooManyRequests, DatabaseUnavailable] },
    paths::ME_REWARDS => {
        get: rewards::mine => [InvalidStatus, InvalidLimit, InvalidQuery, SessionRequired, InvalidSession, Banned, DatabaseUnavailable],
    },
    paths::ME_REWARD_CLAIM => {
        post: rewards::claim_mine => [SessionRequired, InvalidSession, Banned, RewardNotFound, DatabaseUnavailable],
    },
    paths::SCORES => {
        post: scores::post_score => [InvalidJson, InvalidBody, InvalidIdempotencyKey, SessionRequired, InvalidSession,
            InvalidServerKey, ForbiddenForRole, Banned, ServerOnly, PayloadTooLarge, RequestTimeout, UnsupportedMediaType, UserNotFound, InvalidScore, InvalidSubscores,
            InvalidMetadata, InvalidUserId, IdempotencyKeyReused, TooManyRequests, DatabaseUnavailable, WriteQueueFull, WriteFailed,
            ShuttingDown],
    },
    paths::RANKING => {
        get: rankings::page => [InvalidLimit, InvalidOffset, InvalidCursor, InvalidPeriod, InvalidQuery, BoardNotFound,
            PeriodNotFound, DatabaseUnavailable, InvalidPartition, PartitionNotFound],
    },
    paths::RANKING_AROUND => {
        get: rankings::around => [InvalidRadius, InvalidPeriod, InvalidQuery, BoardNotFound, PeriodNotFound,
            UserNotFound, UserNotOnBoard, DatabaseUnavailable, InvalidPartition, PartitionNotFound],
    },
    paths::RANKING_LIVE => {
        get: live::page => [InvalidLimit, InvalidOffset, InvalidPeriod, InvalidQuery, BoardNotFound, PeriodNotFound,
            TooManyRequests, DatabaseUnavailable, TooManyStreams, InvalidPartition, PartitionNotFound],
    },
    paths::RANKING_AROUND_LIVE => {
        get: live::around => [InvalidRadius, InvalidPeriod, InvalidQuery, BoardNotFound, PeriodNotFound, UserNotFound,
            UserNotOnBoard, TooManyRequests, DatabaseUnavailable, TooManyStreams, InvalidPartition, PartitionNotFound],
    },
    paths::RANKING_USERS => {
        get: rankings::friends => [InvalidIds, InvalidPeriod, InvalidQuery, BoardNotFound, PeriodNotFound,
            DatabaseUnavailable, InvalidPartition, PartitionNotFound],
    },
    paths::RANKING_CUTOFFS => {
        get: rankings::cutoffs => [InvalidPercents, InvalidPeriod, InvalidQuery, BoardNotFound, PeriodNotFound,
            DatabaseUnavailable, InvalidPartition, PartitionNotFound],
    },
    paths::BOARDS => { get: boards::list => [DatabaseUnavailable] },
    paths::BOARD => { get: boards::get => [BoardNotFound, DatabaseUnavailable] },
    paths::BOARD_PERIODS => {
        get: boards::periods => [InvalidLimit, InvalidBefore, InvalidQuery, BoardNotFound, DatabaseUnavailable],
    },
    paths::BOARD_PARTITIONS => {
        get: boards::partitions => [InvalidLimit, InvalidPeriod, InvalidPartition, InvalidQuery, BoardNotFound,
            PeriodNotFound, PartitionNotFound, DatabaseUnavailable],
    },
    paths::BOARD_SCORES => {
        post: boards::post_score => [InvalidJson, InvalidBody, InvalidIdempotencyKey, SessionRequired, InvalidSession,
            InvalidServerKey, ForbiddenForRole, Banned, ServerOnly, NotJoined, PayloadTooLarge, RequestTimeout, UnsupportedMediaType, BoardNotFound,
            BuiltinBoard, BoardClosed, AttemptsExhausted, UserNotFound, InvalidScore, InvalidSubscores, InvalidMetadata, InvalidUserId, IdempotencyKeyReused, TooManyRequests, DatabaseUnavailable,
            WriteQueueFull, WriteFailed, ShuttingDown, InvalidPartition, PartitionLimit],
    },
    paths::BOARD_ENTRANTS => {
        post: boards::join => [SessionRequired, InvalidSession, Banned, NotFound, BoardNotFound, BuiltinBoard, BoardClosed, BoardFull,
            JoinNotRequired, TooManyRequests, DatabaseUnavailable],
    },
    paths::BOARD_ME => {
        get: boards::standing => [SessionRequired, InvalidSession, Banned, BoardNotFound, BuiltinBoard, DatabaseUnavailable, InvalidQuery, InvalidPartition, PartitionNotFound],
    },
    paths::ADMIN_BOARDS => {
        post: boards::create => [InvalidJson, InvalidBody, PayloadTooLarge, RequestTimeout, UnsupportedMediaType, AdminTokenRequired,
            InvalidAdminToken, ForbiddenForRole, TooManyRequests, NotFound, BoardExists, InvalidId, InvalidName, InvalidOrder, InvalidOperator,
            InvalidReset, InvalidTimezone, InvalidArchivePeriods, InvalidMinScore, InvalidMaxScore, InvalidMinIntervalMs,
            InvalidWriters, InvalidHoldBeyond, InvalidHoldJump, InvalidFeeds, InvalidSubscores, InvalidPartitionBy,
            InvalidMaxPartitions, InvalidPartitionValues, InvalidRewards, InvalidJoinRequired, InvalidMaxEntrants, InvalidMaxAttempts,
            InvalidStartsAt, InvalidEndsAt, DatabaseUnavailable],
    },
    paths::ADMIN_BOARD => {
        patch: boards::update => [InvalidJson, InvalidBody, PayloadTooLarge, RequestTimeout, UnsupportedMediaType, AdminTokenRequired,
            InvalidAdminToken, ForbiddenForRole, TooManyRequests, NotFound, BoardNotFound, BuiltinBoard, InvalidName, InvalidId,
            InvalidOrder, InvalidOperator, InvalidReset, InvalidTimezone, InvalidArchivePeriods, InvalidMinScore, InvalidMaxScore,
            InvalidMinIntervalMs,
            InvalidWriters, InvalidHoldBeyond, InvalidHoldJump, InvalidFeeds, InvalidSubscores, InvalidPartitionBy,
            InvalidMaxPartitions, InvalidPartitionValues, InvalidRewards, InvalidJoinRequired, InvalidMaxEntrants, InvalidMaxAttempts,
            InvalidStartsAt, InvalidEndsAt, PeriodStarted, DatabaseUnavailable],
        delete: boards::delete => [AdminTokenRequired, InvalidAdminToken, ForbiddenForRole, TooManyRequests, NotFound, BoardNotFound, BuiltinBoard,
            DatabaseUnavailable],
    },
    paths::ADMIN_BOARD_EXPORT => {
        get: boards::export => [InvalidPeriod, InvalidFormat, InvalidQuery, AdminTokenRequired, InvalidAdminToken,
            ForbiddenForRole, TooManyRequests, NotFound, BoardNotFound, PeriodNotFound, PartitionNotFound,
            DatabaseUnavailable, InvalidPartition],
    },
    paths::ADMIN_BOARD_REWARDS => {
        get: rewards::board_grants => [InvalidPeriod, InvalidLimit, InvalidQuery, AdminTokenRequired, InvalidAdminToken,
            ForbiddenForRole, TooManyRequests, NotFound, BoardNotFound, BuiltinBoard, DatabaseUnavailable],
    },
    paths::ADMIN_SCORE => {
        delete: moderation::delete_score => [AdminTokenRequired, InvalidAdminToken, ForbiddenForRole, TooManyRequests, NotFound, ScoreNotFound,
            UserNotFound, DatabaseUnavailable],
    },
    paths::ADMIN_BOARD_SCORE => {
        delete: moderation::delete_board_score => [AdminTokenRequired, InvalidAdminToken, ForbiddenForRole, TooManyRequests, NotFound, BoardNotFound,
            BuiltinBoard, ScoreNotFound, UserNotFound, DatabaseUnavailable],
    },
    paths::ADMIN_USERS => {
        get: moderation::search_users => [InvalidQuery, InvalidLimit, AdminTokenRequired, InvalidAdminToken, ForbiddenForRole,
            TooManyRequests, NotFound, DatabaseUnavailable],
    },
    paths::ADMIN_USER => {
        patch: moderation::rename => [InvalidJson, InvalidBody, PayloadTooLarge, RequestTimeout, UnsupportedMediaType,
            AdminTokenRequired, InvalidAdminToken, ForbiddenForRole, TooManyRequests, NotFound, UserNotFound, InvalidDisplayName, DatabaseUnavailable],
    },
    paths::ADMIN_USER_BAN => {
        post: moderation::ban => [InvalidJson, InvalidBody, PayloadTooLarge, RequestTimeout, UnsupportedMediaType, AdminTokenRequired,
            InvalidAdminToken, ForbiddenForRole, TooManyRequests, NotFound, UserNotFound, AlreadyBanned, InvalidReason, DatabaseUnavailable],
        delete: moderation::unban => [AdminTokenRequired, InvalidAdminToken, ForbiddenForRole, TooManyRequests, NotFound, UserNotFound, NotBanned,
            DatabaseUnavailable],
    },
    paths::ADMIN_WHOAMI => {
        get: admin::whoami => [AdminTokenRequired, InvalidAdminToken, ForbiddenForRole, TooManyRequests, NotFound,
            DatabaseUnavailable],
    },
    paths::ADMIN_AUDIT => {
        get: moderation::audit => [InvalidLimit, InvalidBefore, InvalidQuery, AdminTokenRequired, InvalidAdminToken, ForbiddenForRole, TooManyRequests,
            NotFound, DatabaseUnavailable],
    },
    paths::ADMIN_KEYS => {
        post: keys::create => [InvalidJson, InvalidBody, PayloadTooLarge, RequestTimeout, UnsupportedMediaType, AdminTokenRequired,
            InvalidAdminToken, ForbiddenForRole, TooManyRequests, NotFound, InvalidName, InvalidRole, DatabaseUnavailable],
        get: keys::list => [AdminTokenRequired, InvalidAdminToken, ForbiddenForRole, TooManyRequests, NotFound, DatabaseUnavailable],
    },
    paths::ADMIN_KEY => {
        delete: keys::revoke => [AdminTokenRequired, InvalidAdminToken, ForbiddenForRole, TooManyRequests, NotFound, KeyNotFound,
            DatabaseUnavailable],
    },
    paths::ADMIN_HELD => {
        get: reviews::list => [InvalidLimit, InvalidQuery, AdminTokenRequired, InvalidAdminToken, ForbiddenForRole, TooManyRequests, NotFound,
            BoardNotFound, DatabaseUnavailable],
    },
    paths::ADMIN_HELD_POST => {
        post: reviews::decide => [InvalidJson, InvalidBody, PayloadTooLarge, RequestTimeout, UnsupportedMediaType,
            AdminTokenRequired, InvalidAdminToken, ForbiddenForRole, TooManyRequests, NotFound, ScoreNotFound, BoardNotFound, UserNotFound,
            InvalidDecision, AlreadyDecided, AmbiguousScore, DatabaseUnavailable, InvalidBoard],
    },
    paths::LEAGUES => { get: leagues::list => [DatabaseUnavailable] },
    paths::LEAGUE => { get: leagues::get => [InvalidPath, LeagueNotFound, DatabaseUnavailable] },
    paths::LEAGUE_SCORES => {
        post: leagues::post_score => [InvalidJson, InvalidBody, InvalidIdempotencyKey, SessionRequired, InvalidSession,
            InvalidServerKey, ForbiddenForRole, Banned, PayloadTooLarge, RequestTimeout, UnsupportedMediaType, LeagueNotFound, UserNotFound,
            InvalidScore, InvalidSubscores, InvalidMetadata, InvalidUserId, IdempotencyKeyReused, TooManyRequests, DatabaseUnavailable,
            WriteQueueFull, WriteFailed, ShuttingDown],
    },
    paths::LEAGUE_COHORT => { get: leagues::cohort => [InvalidPath, LeagueNotFound, CohortNotFound, DatabaseUnavailable] },
    paths::LEAGUE_MEMBER => { get: leagues::member => [InvalidPath, LeagueNotFound, UserNotFound, DatabaseUnavailable] },
    paths::ADMIN_LEAGUES => {
        post: leagues::create => [InvalidJson, InvalidBody, PayloadTooLarge, RequestTimeout, UnsupportedMediaType,
            AdminTokenRequired, InvalidAdminToken, ForbiddenForRole, TooManyRequests, NotFound, LeagueExists, InvalidId, InvalidName,
            InvalidTiers, InvalidCohortSize, InvalidPromote, InvalidDemote, InvalidOrder, InvalidOperator, InvalidReset,
            InvalidTimezone, InvalidArchivePeriods, InvalidMinScore, InvalidMaxScore, InvalidRewards, DatabaseUnavailable],
    },
    paths::ADMIN_LEAGUE => {
        patch: leagues::update => [InvalidJson, InvalidBody, PayloadTooLarge, RequestTimeout, UnsupportedMediaType, InvalidPath,
            AdminTokenRequired, InvalidAdminToken, ForbiddenForRole, TooManyRequests, NotFound, LeagueNotFound, InvalidName,
            InvalidId, InvalidTiers, InvalidCohortSize, InvalidPromote, InvalidDemote, InvalidOrder, InvalidOperator,
            InvalidMinScore, InvalidMaxScore, InvalidReset, InvalidTimezone, InvalidArchivePeriods, InvalidRewards,
            DatabaseUnavailable],
        delete: leagues::delete => [InvalidPath, AdminTokenRequired, InvalidAdminToken, ForbiddenForRole, TooManyRequests, NotFound, LeagueNotFound,
            DatabaseUnavailable],
    },
    paths::ADMIN_LEAGUE_REWARDS => {
        get: rewards::league_grants => [InvalidPeriod, InvalidLimit, InvalidQuery, AdminTokenRequired, InvalidAdminToken,
            ForbiddenForRole, TooManyRequests, NotFound, LeagueNotFound, DatabaseUnavailable],
    },
    paths::ADMIN_WEBHOOKS => {
        post: webhooks::create => [InvalidJson, InvalidBody, PayloadTooLarge, RequestTimeout, UnsupportedMediaType,
            AdminTokenRequired, InvalidAdminToken, ForbiddenForRole, TooManyRequests, NotFound, InvalidUrl, InvalidEvents, DatabaseUnavailable],
        get: webhooks::list => [AdminTokenRequired, InvalidAdminToken, ForbiddenForRole, TooManyRequests, NotFound, DatabaseUnavailable],
    },
    paths::ADMIN_WEBHOOK => {
        delete: webhooks::delete => [InvalidPath, AdminTokenRequired, InvalidAdminToken, ForbiddenForRole, TooManyRequests, NotFound, WebhookNotFound,
            DatabaseUnavailable],
    },
    paths::ADMIN_WEBHOOK_DELIVERIES => {
        get: webhooks::deliveries => [InvalidLimit, InvalidBefore, InvalidQuery, AdminTokenRequired, InvalidAdminToken, ForbiddenForRole,
            TooManyRequests, NotFound, WebhookNotFound, DatabaseUnavailable],
    },
    paths::ADMIN_INITIALIZE => {
        post: admin::initialize => [InvalidJson, InvalidBody, PayloadTooLarge, RequestTimeout, AdminTokenRequired, InvalidAdminToken, ForbiddenForRole, TooManyRequests,
            NotFound, InvalidUsers, InvalidScores, InvalidSeed, DatabaseUnavailable],
    },
}

/// Registers every route and the extractor error handlers that keep even
/// malformed requests in the contract's error shape. Unknown paths fall
/// through to the static files or the app's default: a JSON 404 either way.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.app_data(json_config())
        .app_data(web::QueryConfig::default().error_handler(query_error))
        .app_data(web::PathConfig::default().error_handler(path_error))
        .app_data(web::PayloadConfig::new(BODY_LIMIT_BYTES));
    register(cfg);
}

/// The static prefixes routes are grouped under. The router tries a path
/// against the patterns in registration order, and each dynamic one it
/// tries is a regular-expression match (the largest cost of a kept page,
/// in profiles). Grouped, a path is tried against its own group's routes
/// only; inside a group, the routes under a first dynamic segment (`/{board}`
/// of `/api/rankings/{board}/cutoffs`) are one scope, matched by one
/// expression, whose routes are mostly static text (`/cutoffs`), compared
/// as text. A ranking page pays for one expression, `/cutoffs` for one
/// and a few comparisons, not for every ranking route before it. Every
/// prefix with a dynamic route is a group: a dynamic route left outside
/// one would be an expression every request outside the groups before it
/// is tried against (`/api/me/rewards/{id}/claim` was, for every page).
const GROUPS: &[&str] = &["/api/rankings", "/api/users", "/api/boards", "/api/admin", "/api/leagues", "/api/me"];

/// The routes of each group, as they are registered.
#[derive(Default)]
struct Groups {
    groups: Vec<Group>,
}

/// A group's routes: those right under its prefix, and the scopes under a
/// first dynamic segment, each with its routes.
struct Group {
    prefix: &'static str,
    routes: Routes,
    scopes: Vec<(&'static str, Routes)>,
}

/// Resources in registration order, those with a static pattern apart:
/// they are registered first, as text comparisons cost less than an
/// expression (no static path of a group is also one of its patterns).
#[derive(Default)]
struct Routes {
    fixed: Vec<actix_web::Resource>,
    dynamic: Vec<actix_web::Resource>,
}

impl Routes {
    fn push(&mut self, path: &str, resource: actix_web::Resource) {
        match path.contains('{') {
            true => self.dynamic.push(resource),
            false => self.fixed.push(resource),
        }
    }

    fn into_scope(self, prefix: &str) -> actix_web::Scope {
        let resources = self.fixed.into_iter().chain(self.dynamic);
        resources.fold(web::scope(prefix), |scope, resource| scope.service(resource))
    }
}

impl Groups {
    /// Registers the route at `path`: in its group (under its first
    /// dynamic segment's scope, if the part past the group's prefix
    /// begins with one), or on its own when no group holds it.
    fn add(
        &mut self,
        cfg: &mut web::ServiceConfig,
        path: &'static str,
        route: impl FnOnce(&'static str) -> actix_web::Resource,
    ) {
        let group = GROUPS
            .iter()
            .find(|prefix| path.strip_prefix(**prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with('/')));
        let Some(&prefix) = group else {
            cfg.service(route(path));
            return;
        };
        let index = match self.groups.iter().position(|group| group.prefix == prefix) {
            Some(index) => index,
            None => {
                self.groups.push(Group { prefix, routes: Routes::default(), scopes: Vec::new() });
                self.groups.len() - 1
            }
        };
        let group = &mut self.groups[index];
        let rest = &path[prefix.len()..];
        // Where the first segment ends, if it is a dynamic one.
        let dynamic_end = rest.starts_with("/{").then(|| rest[1..].find('/').map_or(rest.len(), |end| end + 1));
        let Some(segment) = dynamic_end else {
            group.routes.push(rest, route(rest));
            return;
        };
        let (scope, tail) = rest.split_at(segment);
        let routes = match group.scopes.iter().position(|(held, _)| *held == scope) {
            Some(index) => &mut group.scopes[index].1,
            None => {
                group.scopes.push((scope, Routes::default()));
                &mut group.scopes.last_mut().expect("just pushed").1
            }
        };
        routes.push(tail, route(tail));
    }

    /// Mounts the groups: a path inside a group that names no route of it
    /// is a JSON 404 `not_found`, whatever the method.
    fn mount(self, cfg: &mut web::ServiceConfig) {
        for Group { prefix, routes, scopes } in self.groups {
            let scopes =
                scopes.into_iter().map(|(scope, routes)| routes.into_scope(scope).default_service(web::to(not_found)));
            let group = scopes.fold(routes.into_scope(prefix), |group, scope| group.service(scope));
            cfg.service(group.default_service(web::to(not_found)));
        }
    }
}

/// A resource whose other methods get a JSON 405, named `route` (its
/// full path) for the metrics: the name rides with the request, so the
/// path is matched once, by the router, not again for the label.
fn resource(path: &str, route: &'static str, methods: &[&str]) -> actix_web::Resource {
    let allow = methods.iter().map(|m| m.to_uppercase()).collect::<Vec<_>>().join(", ");
    let mut resource = web::resource(path).app_data(RouteName(route));
    if DEFINITION_ROUTES.contains(&route) {
        resource = resource.app_data(json_config().limit(DEFINITION_LIMIT_BYTES));
    }
    resource.default_service(web::to(move || {
        let allow = allow.clone();
        async move { Err::<actix_web::HttpResponse, _>(ApiError::method_not_allowed(allow)) }
    }))
}

/// A request's address (path and query): what a kept answer is found by
/// before the router (see [`kept_answer`]).
fn address_of(request: &actix_web::HttpRequest) -> Option<&str> {
    request.uri().path_and_query().map(|address| address.as_str())
}

/// A 200 with a JSON body already rendered.
fn json_response(body: web::Bytes) -> actix_web::HttpResponse {
    actix_web::HttpResponse::Ok().content_type(actix_web::http::header::ContentType::json()).body(body)
}

/// The handler for every path that names nothing.
pub async fn not_found() -> Result<actix_web::HttpResponse, ApiError> {
    Err(ErrorCode::NotFound.into())
}

/// Another method than GET or HEAD on a path that is no route: the static
/// files are read-only.
pub async fn static_method_not_allowed(request: HttpRequest) -> Result<actix_web::HttpResponse, ApiError> {
    match *request.method() {
        actix_web::http::Method::GET | actix_web::http::Method::HEAD => Err(ErrorCode::NotFound.into()),
        _ => Err(ApiError::method_not_allowed("GET, HEAD".to_owned())),
    }
}

fn json_config() -> web::JsonConfig {
    web::JsonConfig::default()
        .limit(BODY_LIMIT_BYTES)
        // Bodies must declare application/json (or a +json type); anything
        // else, or no Content-Type at all, is 415.
        .error_handler(json_error)
}

/// A body error in the contract's shape.
fn body_error(error: &JsonPayloadError) -> ApiError {
    match error {
        JsonPayloadError::OverflowKnownLength { .. } | JsonPayloadError::Overflow { .. } => {
            ErrorCode::PayloadTooLarge.into()
        }
        JsonPayloadError::ContentType => ErrorCode::UnsupportedMediaType.into(),
        JsonPayloadError::Deserialize(e) if e.is_data() => {
            ApiError::with_message(ErrorCode::InvalidBody, format!("the body must be a JSON object: {e}"))
        }
        JsonPayloadError::Deserialize(e) => {
            ApiError::with_message(ErrorCode::InvalidJson, format!("malformed JSON: {e}"))
        }
        JsonPayloadError::Payload(actix_web::error::PayloadError::Io(e))
            if e.kind() == std::io::ErrorKind::TimedOut =>
        {
            ApiError::with_message(ErrorCode::RequestTimeout, deadline::STALLED_BODY)
        }
        _ => ApiError::with_message(ErrorCode::InvalidBody, "the request body could not be read"),
    }
}

fn json_error(error: JsonPayloadError, _: &HttpRequest) -> actix_web::Error {
    body_error(&error).into()
}

fn query_error(error: QueryPayloadError, _: &HttpRequest) -> actix_web::Error {
    ApiError::with_message(ErrorCode::InvalidQuery, format!("malformed query string: {error}")).into()
}

fn path_error(_: PathError, _: &HttpRequest) -> actix_web::Error {
    ApiError::with_message(ErrorCode::NotFound, "no such resource").into()
}

/// A request body: any JSON object. Fields are read as raw values and
/// parsed by the domain types, so a wrong type is a 422 naming the field
/// rather than a generic deserialisation error, and a non-object (even `[5]`,
/// which serde would happily read as a one-field struct) is a 400.
type JsonObject = web::Json<serde_json::Map<String, serde_json::Value>>;

/// The client's address for per-address limits: the peer, or, when
/// configured to trust the proxy in front, the last `X-Forwarded-For` hop
/// (the one that proxy added: the shipped nginx sends only the address it
/// saw). Only a well-formed IP address counts, written in its canonical
/// form, so a client cannot choose arbitrary limiter keys; see
/// [`limiter_key`] for IPv6.
fn client_address(request: &HttpRequest, trust_forwarded_for: bool) -> String {
    let forwarded = trust_forwarded_for
        .then(|| request.headers().get("x-forwarded-for"))
        .flatten()
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.rsplit(',').next())
        .and_then(|last| last.trim().parse::<std::net::IpAddr>().ok());
    forwarded.or_else(|| request.peer_addr().map(|peer| peer.ip())).map(limiter_key).unwrap_or_default()
}

/// An address as the per-address limits count it: an IPv4 address (an
/// IPv4-mapped IPv6 one too) as itself, an IPv6 address by its /64, the
/// smallest network a provider hands out: one subscriber holds 2^64
/// addresses, and per address they would be unlimited.
fn limiter_key(address: std::net::IpAddr) -> String {
    use std::net::{IpAddr, Ipv6Addr};
    match address {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => format!("{}/64", Ipv6Addr::from(u128::from(v6) & !u128::from(u64::MAX))),
        },
        IpAddr::V4(v4) => v4.to_string(),
    }
}

/// Parses a numeric id from a path segment; anything else names no resource.
fn parse_id(raw: &str, not_found: ErrorCode) -> Result<i64, ApiError> {
    raw.parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(|| not_found.into())
}

#[cfg(test)]
mod tests {
    use super::{limiter_key, GROUPS, ROUTES};

    #[test]
    fn an_ipv6_client_is_counted_by_its_64() {
        let key = |text: &str| limiter_key(text.parse().unwrap());
        assert_eq!(key("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
        assert_eq!(key("2001:db8:1:2:ffff:ffff:ffff:ffff"), key("2001:db8:1:2::7"));
        assert_ne!(key("2001:db8:1:3::1"), key("2001:db8:1:2::1"));
        assert_eq!(key("::ffff:192.0.2.7"), "192.0.2.7");
        assert_eq!(key("192.0.2.7"), "192.0.2.7");
        assert_eq!(key("::1"), "::/64");
    }

    /// `Routes` registers a group's static paths before its patterns: that
    /// changes nothing only while no pattern also matches a static path.
    #[test]
    fn no_route_pattern_matches_a_static_path() {
        let matches = |pattern: &str, path: &str| {
            let (pattern, path): (Vec<&str>, Vec<&str>) = (pattern.split('/').collect(), path.split('/').collect());
            pattern.len() == path.len()
                && pattern.iter().zip(&path).all(|(want, got)| want.starts_with('{') || want == got)
        };
        let (fixed, patterns): (Vec<&str>, Vec<&str>) =
            ROUTES.iter().map(|(_, path)| *path).partition(|path| !path.contains('{'));
        assert!(!fixed.is_empty() && !patterns.is_empty());
        for path in &fixed {
            for pattern in &patterns {
                assert!(!matches(pattern, path), "{pattern} matches the static {path}");
            }
        }
        assert!(matches("/api/users/{id}", "/api/users/me"), "the check itself sees a shadowed path");
    }

    /// A pattern outside the groups is an expression tried for every
    /// request to a group registered after it (see `GROUPS`).
    #[test]
    fn every_route_pattern_is_inside_a_group() {
        let grouped = |path: &str| {
            GROUPS.iter().any(|prefix| path.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('/')))
        };
        let patterns: Vec<&str> = ROUTES.iter().map(|(_, path)| *path).filter(|path| path.contains('{')).collect();
        assert!(!patterns.is_empty());
        for pattern in patterns {
            assert!(grouped(pattern), "{pattern} is outside every group");
        }
        assert!(!grouped("/api/scores") && grouped("/api/me/rewards/{id}/claim"), "the check itself tells them apart");
    }
}

//! Every error code the API answers with, in one place: its HTTP status and
//! its default message. Handlers name a code; the envelope, the status and
//! the OpenAPI document all read them from here, so a code is spelled once.
//!
//! Nothing here knows about HTTP frameworks: statuses are plain numbers.

/// Declares the codes: `Variant = (status, "code", "default message")`.
macro_rules! error_codes {
    ($( $(#[$doc:meta])* $variant:ident = ($status:literal, $code:literal, $message:literal) ),+ $(,)?) => {
        /// A code of the contract's error envelope `{"error": {"code", "message"}}`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $( $(#[$doc])* $variant ),+
        }

        impl ErrorCode {
            /// Every code, in declaration order (the OpenAPI document lists them).
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant),+];

            /// The snake_case code clients match on.
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $code),+ }
            }

            /// The HTTP status this code is always sent with.
            pub fn status(self) -> u16 {
                match self { $(Self::$variant => $status),+ }
            }

            /// The message sent when the caller has nothing more specific to say.
            pub fn default_message(self) -> &'static str {
                match self { $(Self::$variant => $message),+ }
            }
        }
    };
}

error_codes! {
    // 400: the request itself is malformed.
    InvalidJson = (400, "invalid_json", "the body is not well-formed JSON"),
    InvalidBody = (400, "invalid_body", "the body must be a JSON object"),
    InvalidQuery = (400, "invalid_query", "malformed query string"),
    /// An encoded `/`, `\` or `.` in the path: a proxy in front may have
    /// matched the decoded path against its rules and passed on the raw
    /// one, so no such path is served.
    InvalidPath = (400, "invalid_path", "the path has an encoded slash, backslash or dot"),
    InvalidLimit = (400, "invalid_limit", "limit must be an integer from 1 to 100"),
    InvalidOffset = (400, "invalid_offset", "offset must be a non-negative integer"),
    InvalidCursor = (400, "invalid_cursor", "cursor is not one this board returned"),
    InvalidRadius = (400, "invalid_radius", "radius must be an integer from 0 to 50"),
    InvalidBefore = (400, "invalid_before", "before must be a positive integer"),
    InvalidIds = (400, "invalid_ids", "ids must be 1 to 100 comma-separated positive integers"),
    InvalidIdempotencyKey = (400, "invalid_idempotency_key",
        "Idempotency-Key must be one header of 1 to 64 visible ASCII characters"),
    InvalidPeriod = (400, "invalid_period", "period must be `current` or a period index (a non-negative integer)"),
    // 401: who is calling is unknown.
    SessionRequired = (401, "session_required",
        "log in first: send Authorization: Bearer <token> or the session cookie"),
    InvalidSession = (401, "invalid_session", "the session token is unknown, expired or logged out"),
    InvalidCredentials = (401, "invalid_credentials", "wrong login name or password"),
    InvalidServerKey = (401, "invalid_server_key", "the server key is unknown or revoked"),
    AdminTokenRequired = (401, "admin_token_required", "send Authorization: Bearer $ADMIN_TOKEN"),
    InvalidAdminToken = (401, "invalid_admin_token", "neither the admin token nor a live admin key"),
    // 403: known, but not allowed.
    ForbiddenForRole = (403, "forbidden_for_role", "this key's role does not reach this route"),
    BuiltinBoard = (403, "builtin_board",
        "the built-in boards take only rule changes (min_interval_ms, writers, hold_beyond, hold_jump, feeds) and cannot \
         be deleted; their scores are posted to /api/scores"),
    Banned = (403, "banned", "this player is banned"),
    NotJoined = (403, "not_joined", "only this period's entrants post to this board: join it first (POST …/entrants)"),
    ServerOnly = (403, "server_only", "only the game's servers post to this board, with a server key"),
    CrossOrigin = (403, "cross_origin",
        "a write with the session cookie must come from this site's own pages or an allowed origin (or send the \
         token as Authorization: Bearer)"),
    // 404: nothing there.
    NotFound = (404, "not_found", "no such route"),
    UserNotFound = (404, "user_not_found", "no user with that id"),
    BoardNotFound = (404, "board_not_found", "no board with that id"),
    UserNotOnBoard = (404, "user_not_on_board", "the player has no entry on this board in this period"),
    PartitionNotFound = (404, "partition_not_found", "this board has no partitions (`partition_by` is not set)"),
    PeriodNotFound = (404, "period_not_found", "no such period of this board (never existed, or no longer kept)"),
    ScoreNotFound = (404, "score_not_found", "no score with that id on this board"),
    KeyNotFound = (404, "key_not_found", "no server key with that id"),
    LeagueNotFound = (404, "league_not_found", "no league with that id"),
    CohortNotFound = (404, "cohort_not_found", "no such cohort of this league (never opened, or its period no longer kept)"),
    WebhookNotFound = (404, "webhook_not_found", "no webhook with that id"),
    RewardNotFound = (404, "reward_not_found", "no reward with that id for this player"),
    // 405, 408, 409, 413, 415.
    MethodNotAllowed = (405, "method_not_allowed", "method not allowed"),
    RequestTimeout = (408, "request_timeout", "the request body did not arrive in time"),
    LoginNameTaken = (409, "login_name_taken", "that login name is taken"),
    BoardExists = (409, "board_exists", "a board with that id exists"),
    LeagueExists = (409, "league_exists", "a league or a board with that id exists"),
    AlreadyBanned = (409, "already_banned", "the player is banned already"),
    NotBanned = (409, "not_banned", "the player is not banned"),
    BoardClosed = (409, "board_closed", "this board takes posts and joins only between its starts_at and ends_at"),
    BoardFull = (409, "board_full", "this period of the board has all the entrants it takes"),
    AttemptsExhausted = (409, "attempts_exhausted", "no attempts left on this board in this period"),
    PartitionLimit = (409, "partition_limit", "this period of the board has all the partitions it takes (max_partitions)"),
    PeriodStarted = (409, "period_started",
        "the period in force has begun and never ends: no period is left for a change to the tournament fields"),
    AlreadyDecided = (409, "already_decided", "this held post was accepted or rejected already"),
    AmbiguousScore = (409, "ambiguous_score",
        "a post of /api/scores and a custom board's post are held with this id: send `board` to say which"),
    PayloadTooLarge = (413, "payload_too_large", "request body is too large"),
    UnsupportedMediaType = (415, "unsupported_media_type",
        "request body must be JSON (Content-Type: application/json)"),
    // 422: a field fails validation; the code names the field.
    InvalidLoginName = (422, "invalid_login_name",
        "login_name must be 3 to 32 characters of A-Z, a-z, 0-9, '_', '.', '-'"),
    InvalidPassword = (422, "invalid_password", "password must be 8 to 72 bytes"),
    InvalidDisplayName = (422, "invalid_display_name",
        "display_name must be 1 to 32 characters without control characters"),
    InvalidScore = (422, "invalid_score", "score must be an integer from 0 to 1000000000"),
    InvalidUsers = (422, "invalid_users", "users must be an integer from 0 to 2000000"),
    InvalidScores = (422, "invalid_scores", "scores must be an integer from 0 to 20000000"),
    InvalidSeed = (422, "invalid_seed", "seed must be an integer from 0 to 9223372036854775807"),
    IdempotencyKeyReused = (422, "idempotency_key_reused",
        "this Idempotency-Key was used for another request; use a new key for a new request"),
    InvalidId = (422, "invalid_id", "id must be 1 to 64 characters of a-z, 0-9, '_', '-'"),
    InvalidName = (422, "invalid_name", "name must be 1 to 128 characters without control characters"),
    InvalidOrder = (422, "invalid_order", "order must be `desc` or `asc`"),
    InvalidOperator = (422, "invalid_operator", "operator must be `best`, `latest` or `total` (`total` only with `desc`)"),
    InvalidReset = (422, "invalid_reset",
        "reset must be null or a cron expression of 5 fields, or 6 with seconds first"),
    InvalidTimezone = (422, "invalid_timezone", "timezone must be an IANA time zone name, e.g. Europe/Paris"),
    InvalidArchivePeriods = (422, "invalid_archive_periods", "archive_periods must be an integer from 0 to 1000"),
    InvalidMinScore = (422, "invalid_min_score",
        "min_score must be an integer from -1000000000000000 to 1000000000000000"),
    InvalidMaxScore = (422, "invalid_max_score",
        "max_score must be an integer from min_score to 1000000000000000"),
    InvalidMinIntervalMs = (422, "invalid_min_interval_ms",
        "min_interval_ms must be null or an integer from 1 to 86400000 (a day)"),
    InvalidHoldBeyond = (422, "invalid_hold_beyond",
        "hold_beyond must be null or an integer from -1000000000000000 to 1000000000000000"),
    InvalidHoldJump = (422, "invalid_hold_jump", "hold_jump must be null or a number greater than 1 (at most 1000000)"),
    InvalidSubscores = (422, "invalid_subscores", "subscores: a board takes up to 2 {\"name\", \"order\"} (not on `total`); a post on such a board takes exactly that many integers 0..2^53-1, and none elsewhere"),
    InvalidPartitionBy = (422, "invalid_partition_by",
        "partition_by must be null or 1..64 characters of [A-Za-z0-9_] (the metadata field posts are partitioned by), on a custom board"),
    InvalidMaxPartitions = (422, "invalid_max_partitions",
        "max_partitions must be an integer from 1 to 10000, with partition_by"),
    InvalidPartitionValues = (422, "invalid_partition_values",
        "partition_values must be null or a list of at most max_partitions distinct values of 1..32 characters of [A-Za-z0-9_-], with partition_by"),
    InvalidPartition = (422, "invalid_partition",
        "a partition is 1..32 characters of [A-Za-z0-9_-] (one of the board's partition_values when it has them), as a string"),
    InvalidRewards = (422, "invalid_rewards",
        "rewards must be at most 20 bands, each with `ranks` [a, b] (1 <= a <= b <= 10000) or `top_percent` (0 < p <= 100, two decimals at most) and a `reward` object of at most 1 KiB"),
    InvalidStatus = (422, "invalid_status", "status must be `unclaimed` (default), `claimed` or `all`"),
    InvalidFormat = (422, "invalid_format", "format must be `csv` (default) or `ndjson`"),
    InvalidRole = (422, "invalid_role", "role must be `server` (default), `moderator` or `viewer`"),
    InvalidFeeds = (422, "invalid_feeds",
        "feeds must be a list of at most 10 custom board ids, none a league, this board, a duplicate or a board with feeds"),
    InvalidBoard = (422, "invalid_board", "board must be a board's id (a string) or null"),
    InvalidDecision = (422, "invalid_decision", "decision must be `accept` or `reject`; note, if sent, at most 500 characters"),
    InvalidStartsAt = (422, "invalid_starts_at", "starts_at must be null or an RFC 3339 time, e.g. 2026-12-07T18:00:00Z"),
    InvalidEndsAt = (422, "invalid_ends_at", "ends_at must be null or an RFC 3339 time after starts_at"),
    InvalidJoinRequired = (422, "invalid_join_required", "join_required must be true or false"),
    InvalidMaxEntrants = (422, "invalid_max_entrants", "max_entrants must be null or an integer from 1 to 10000000"),
    InvalidMaxAttempts = (422, "invalid_max_attempts", "max_attempts must be null or an integer from 1 to 1000000"),
    JoinNotRequired = (422, "join_not_required", "anyone may post to this board: there is nothing to join"),
    InvalidWriters = (422, "invalid_writers", "writers must be `players` or `server`"),
    InvalidUrl = (422, "invalid_url",
        "url must be an absolute http or https URL of at most 2048 characters whose host resolves to public \
         addresses (loopback, private and link-local ones only with WEBHOOK_ALLOW_PRIVATE=true)"),
    InvalidEvents = (422, "invalid_events",
        "events must be a non-empty list of period.closed, period.amended, league.closed, score.held, reward.granted"),
    InvalidTiers = (422, "invalid_tiers", "tiers must be a list of 2 to 20 names, lowest first, each 1 to 64 characters"),
    InvalidCohortSize = (422, "invalid_cohort_size", "cohort_size must be an integer from 2 to 200"),
    InvalidPromote = (422, "invalid_promote", "promote must be an integer from 0 to cohort_size"),
    InvalidDemote = (422, "invalid_demote", "demote must be an integer from 0 to cohort_size"),
    InvalidUserId = (422, "invalid_user_id", "a post with a server key names its player: user_id, a positive integer"),
    InvalidMetadata = (422, "invalid_metadata", "metadata must be a JSON object of at most 1 KiB"),
    InvalidReason = (422, "invalid_reason", "reason must be 1 to 500 characters without control characters"),
    InvalidCurrentPassword = (422, "invalid_current_password",
        "a new password needs current_password, the password the player logs in with now"),
    InvalidChange = (422, "invalid_change", "send display_name, password (with current_password), or both"),
    InvalidPercents = (422, "invalid_percents",
        "percents must be 1 to 10 comma-separated numbers above 0 and at most 100, with at most two decimals"),
    // 429: slow down.
    TooManyRequests = (429, "too_many_requests", "too many requests; wait a little"),
    // 500: a bug; details only in the log.
    InternalError = (500, "internal_error", "internal error"),
    // 503: a dependency is down or saturated; always with Retry-After.
    DatabaseUnavailable = (503, "database_unavailable", "the database is not answering; retry shortly"),
    HashingBusy = (503, "hashing_busy", "too many logins at once; retry shortly"),
    WriteQueueFull = (503, "write_queue_full", "too many score posts at once; retry shortly"),
    WriteFailed = (503, "write_failed",
        "the score could not be recorded; retry (with the same Idempotency-Key)"),
    ShuttingDown = (503, "shutting_down", "the service is stopping"),
    TooManyStreams = (503, "too_many_streams", "this instance holds all the live pages it can; retry shortly"),
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_are_unique_snake_case_with_a_message_and_an_error_status() {
        let mut seen = HashSet::new();
        for code in ErrorCode::ALL {
            assert!(seen.insert(code.as_str()), "{} twice", code.as_str());
            assert!(code.as_str().chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{code:?}");
            assert!((400..600).contains(&code.status()), "{code:?}");
            assert!(!code.default_message().is_empty(), "{code:?}");
        }
    }
}

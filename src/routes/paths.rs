//! Every route's path, once: the route table (`routes!` in `mod.rs`) and
//! the OpenAPI attributes of the handlers both name these.

pub const HEALTHZ: &str = "/healthz";
pub const LIVEZ: &str = "/livez";
pub const READYZ: &str = "/readyz";
pub const METRICS: &str = "/metrics";
pub const OPENAPI_DOCUMENT: &str = "/api/openapi.json";
pub const OPENAPI_REFERENCE: &str = "/api/docs";
pub const USERS: &str = "/api/users";
pub const USER: &str = "/api/users/{id}";
pub const USER_SCORES: &str = "/api/users/{id}/scores";
pub const USER_BOARDS: &str = "/api/users/{id}/boards";
pub const SESSIONS: &str = "/api/sessions";
pub const ME: &str = "/api/me";
pub const SCORES: &str = "/api/scores";
pub const RANKING: &str = "/api/rankings/{board}";
pub const RANKING_AROUND: &str = "/api/rankings/{board}/around/{user_id}";
pub const RANKING_LIVE: &str = "/api/rankings/{board}/live";
pub const RANKING_AROUND_LIVE: &str = "/api/rankings/{board}/around/{user_id}/live";
pub const RANKING_USERS: &str = "/api/rankings/{board}/users";
pub const BOARDS: &str = "/api/boards";
pub const BOARD: &str = "/api/boards/{board}";
pub const BOARD_PERIODS: &str = "/api/boards/{board}/periods";
pub const BOARD_SCORES: &str = "/api/boards/{board}/scores";
pub const ADMIN_BOARDS: &str = "/api/admin/boards";
pub const ADMIN_BOARD: &str = "/api/admin/boards/{board}";
pub const ADMIN_SCORE: &str = "/api/admin/scores/{id}";
pub const ADMIN_BOARD_SCORE: &str = "/api/admin/boards/{board}/scores/{id}";
pub const ADMIN_USER: &str = "/api/admin/users/{id}";
pub const ADMIN_USER_BAN: &str = "/api/admin/users/{id}/ban";
pub const ADMIN_AUDIT: &str = "/api/admin/audit";
pub const ADMIN_KEYS: &str = "/api/admin/keys";
pub const ADMIN_KEY: &str = "/api/admin/keys/{id}";
pub const ADMIN_HELD: &str = "/api/admin/held";
pub const ADMIN_HELD_POST: &str = "/api/admin/held/{score_id}";
pub const ADMIN_INITIALIZE: &str = "/api/admin/initialize";

//! What the admin routes answer: initialize, the audit log, keys, found
//! players, the held queue and its decisions, webhooks and deliveries.

use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::Timestamp;
use crate::store::ServerKeyRow;

use super::{BoardScoreView, Me, PeriodView, RankingEntry};

/// `POST /api/admin/initialize`: what was loaded, and how long it took.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Initialized {
    pub users: i64,
    pub scores: i64,
    pub seed: u64,
    /// The wipe, the load and the warm-up, in milliseconds.
    pub elapsed_ms: u64,
}

/// A record of the audit log.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AuditEntry {
    pub id: i64,
    pub at: Timestamp,
    /// Who: `admin` (the admin token) or `key:<id>` (an admin key).
    pub actor: String,
    /// `ban`, `unban`, `delete_score`, `rename`, `create_board`,
    /// `update_board`, `delete_board`, `create_key`, `revoke_key` or
    /// `initialize`.
    pub action: String,
    /// What: `user:{id}`, `board:{id}` or `key:{id}`, or `data` for initialize.
    pub target: String,
    /// The action's details (a reason, a score id, old and new names…).
    #[schema(value_type = Object)]
    pub detail: serde_json::Value,
}

/// `GET /api/admin/audit`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AuditLog {
    pub entries: Vec<AuditEntry>,
    /// Pass as `before` for older records; null at the end.
    #[schema(required = true)]
    pub next_before: Option<i64>,
}

/// A server key, without its value.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ServerKeyView {
    pub id: i64,
    pub name: String,
    pub created_at: Timestamp,
    /// `server` (posts scores for players), `moderator` or `viewer`.
    #[schema(example = "server")]
    pub role: String,
}

impl From<ServerKeyRow> for ServerKeyView {
    fn from(row: ServerKeyRow) -> Self {
        Self { id: row.id, name: row.name, created_at: row.created_at, role: row.role }
    }
}

/// `POST /api/admin/keys`: the key itself, shown this once.
#[derive(Serialize, ToSchema)]
pub struct ServerKeyCreated {
    pub id: i64,
    pub name: String,
    /// `Authorization: Bearer <key>` on posts; only its hash is stored.
    #[schema(example = "hsk_Xq3…")]
    pub key: String,
    pub created_at: Timestamp,
    /// `server` (posts scores for players), `moderator` or `viewer`.
    #[schema(example = "server")]
    pub role: String,
}

/// A player as an admin's search finds them.
#[derive(Debug, Serialize, ToSchema)]
pub struct FoundPlayer {
    #[serde(flatten)]
    pub me: Me,
    /// Set while the player is banned (their ranks are null then).
    #[schema(required = true)]
    pub banned_at: Option<Timestamp>,
}

/// `GET /api/admin/users?q=`.
#[derive(Debug, Serialize, ToSchema)]
pub struct FoundPlayers {
    pub users: Vec<FoundPlayer>,
}

/// `GET /api/admin/whoami`.
#[derive(Debug, Serialize, ToSchema)]
pub struct WhoAmI {
    /// As the audit log names it: `admin` (the admin token) or `key:<id>`.
    #[schema(example = "key:3")]
    pub actor: String,
    /// `admin`, `moderator` or `viewer`.
    #[schema(example = "moderator")]
    pub role: &'static str,
}

/// `GET /api/admin/keys`: the live keys, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct ServerKeyList {
    pub keys: Vec<ServerKeyView>,
}

/// A post waiting for review (`GET /api/admin/held`).
#[derive(Debug, Serialize, ToSchema)]
pub struct HeldPost {
    /// The post (`status` `held`); posts of `/api/scores` have no metadata.
    pub score: BoardScoreView,
    /// The board whose log holds it: a custom board's id, or `best` for
    /// `/api/scores` (which feeds both built-in boards).
    pub board: String,
    pub user_id: i64,
    /// `hold_beyond` or `hold_jump`.
    pub rule: String,
    /// The period the post belongs to (and counts in once accepted).
    pub period: PeriodView,
    /// The boards whose fed posts were held with it (v4): the decision is
    /// theirs too.
    pub feeds: Vec<String>,
}

/// `GET /api/admin/held`: oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct HeldList {
    pub held: Vec<HeldPost>,
    /// Pass as `after` for the next page; null at the end.
    #[schema(required = true)]
    pub next_after: Option<i64>,
}

/// `POST /api/admin/held/{score_id}`: the post as decided, and the
/// player's entry on its board and period now (null when none).
#[derive(Debug, Serialize, ToSchema)]
pub struct Decided {
    pub score: BoardScoreView,
    #[schema(value_type = Option<RankingEntry>, required = true)]
    pub entry: Option<serde_json::Value>,
}

/// A webhook (`GET /api/admin/webhooks`), without its secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookView {
    pub id: i64,
    #[schema(example = "https://game.example.com/hooks/hiscore")]
    pub url: String,
    /// Of `period.closed`, `period.amended`, `league.closed`, `score.held`, `reward.granted`.
    pub events: Vec<String>,
    pub created_at: Timestamp,
}

/// `POST /api/admin/webhooks`: the webhook with its signing secret, shown
/// this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookCreated {
    pub id: i64,
    pub url: String,
    pub events: Vec<String>,
    /// The HMAC-SHA256 key of `Hiscore-Signature` (docs/WEBHOOKS.md).
    #[schema(example = "whsec_Xq3…")]
    pub secret: String,
    pub created_at: Timestamp,
}

/// `GET /api/admin/webhooks`: oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookList {
    pub webhooks: Vec<WebhookView>,
}

/// One event's delivery to one webhook.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryView {
    /// The body's `id` and the `Hiscore-Delivery` header: the same on
    /// every attempt (receivers deduplicate by it).
    pub id: String,
    pub event: String,
    pub created_at: Timestamp,
    /// `pending`, `delivered`, or `failed` (retries ran out).
    #[schema(example = "delivered")]
    pub status: String,
    pub attempts: i64,
    /// The HTTP status of the last attempt; null when none came back
    /// (no connection, timeout) or no attempt was made yet.
    #[schema(required = true)]
    pub last_status: Option<i64>,
    /// When it is tried next; null once delivered or failed.
    #[schema(required = true)]
    pub next_attempt_at: Option<Timestamp>,
}

/// `GET /api/admin/webhooks/{id}/deliveries`: newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryList {
    pub deliveries: Vec<DeliveryView>,
    /// `before` for the next (older) page; null on the last.
    #[schema(required = true)]
    pub next_before: Option<i64>,
}

//! Operator actions behind `ADMIN_TOKEN`: checking the token, and
//! initialize (wipe everything, load a generated dataset, and make every
//! instance forget what it cached about the old data).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::auth::ServerKey;
use crate::config::Secret;
use crate::dataset::{generate, DatasetSpec};
use crate::domain::{Access, KeyRole, Password, Timestamp};
use crate::error::{ApiError, ErrorCode};
use crate::limits::Limit;
use crate::state::AppState;
use crate::store::AuditRecord;
use crate::usecases::keys::{self, KeyId};
use crate::usecases::moderation::Actor;

/// Checks who calls an admin route that needs `needed`: the admin token
/// (compared by digest in constant time), or a live key whose role
/// reaches the route (else 403 `forbidden_for_role`; a `server` key
/// reaches none). 404 when no admin token is configured (the admin routes
/// do not exist then). Any other bearer is 401, and such guesses are
/// limited per client address (429 after a few a minute). The token is
/// checked first: the right one is never refused for the wrong ones sent
/// from its address (a shared NAT, a load balancer seen as the client),
/// so nobody locks the operator out. What stops guessing is the token's
/// length (32 characters at least, checked at start) and the keys' 256
/// random bits; the limit keeps scanners slow and the logs quiet.
pub async fn authorize(
    state: &AppState,
    address: &str,
    presented: Option<&str>,
    needed: Access,
) -> Result<Actor, ApiError> {
    let Some(expected) = state.settings.admin_token.as_ref().map(Secret::expose) else {
        return Err(ErrorCode::NotFound.into());
    };
    let presented = presented.ok_or(ErrorCode::AdminTokenRequired)?;
    if same_secret(presented, expected) {
        return Ok(Actor { name: "admin".to_owned(), access: Access::Admin });
    }
    if let Some(key) = ServerKey::from_bearer(presented) {
        if let Some((KeyId(id), role)) = keys::authenticate(state, &key).await? {
            return match role.and_then(KeyRole::access) {
                Some(access) if access >= needed => Ok(Actor { name: format!("key:{id}"), access }),
                _ => Err(ErrorCode::ForbiddenForRole.into()),
            };
        }
    }
    state.limits.check(Limit::AdminPerAddress, address).await?;
    Err(ErrorCode::InvalidAdminToken.into())
}

/// Whether `presented` is the configured admin token.
pub fn is_admin_token(state: &AppState, presented: &str) -> bool {
    state.settings.admin_token.as_ref().is_some_and(|expected| same_secret(presented, expected.expose()))
}

/// Compares two secrets in constant time (their digests, so their lengths
/// do not show either).
fn same_secret(presented: &str, expected: &str) -> bool {
    let (a, b) = (Sha256::digest(presented.as_bytes()), Sha256::digest(expected.as_bytes()));
    a.iter().zip(b.iter()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// How long an initialize took (its warm-up is logged).
pub struct Initialized {
    pub elapsed: Duration,
}

/// Wipes all data and loads the dataset `spec` describes, as the next data
/// generation. The generation is raised in Redis before anything is wiped
/// (cached copies of the old data stop counting at once) and set in the
/// database in the same transaction as the new data.
pub async fn initialize(state: &AppState, actor: &Actor, spec: DatasetSpec) -> Result<Initialized, ApiError> {
    let _one_at_a_time = state.initializing.lock().await;
    let started = Instant::now();
    // Nobody knows this password: generated players cannot be logged into.
    let password = Password::parse(Some(&serde_json::Value::String(format!("{:032x}", rand::random::<u128>()))))?;
    let password_hash = state.passwords.hash(&password).await?;
    let data = actix_web::web::block(move || generate(spec)).await.map_err(ApiError::internal)?;
    let mut generation = state.store.data_generation().await? + 1;
    if let Some(redis) = &state.redis {
        match redis.raise(&redis.keys().data_generation(), generation).await {
            // Another instance may have counted further (an initialize whose
            // load failed): stay above every generation handed out.
            Ok(raised) => generation = raised.max(generation),
            Err(error) => tracing::warn!(%error, "initialize: the data generation could not be raised in Redis"),
        }
    }
    // The log is wiped with the rest: this is its first record.
    let detail = serde_json::json!({"users": spec.users, "scores": spec.scores, "seed": spec.seed}).to_string();
    let record =
        AuditRecord { at: Timestamp::now(), actor: &actor.name, action: "initialize", target: "data", detail: &detail };
    state.store.replace_all(&data, &password_hash, generation, &record).await?;
    state.boards.replace(Vec::new(), Vec::new(), HashMap::new());
    state.caches.reset(generation);
    if let Some(redis) = &state.redis {
        // Sessions and custom boards are wiped with the data: their cached
        // copies must go too.
        for pattern in [redis.keys().session_pattern(), redis.keys().custom_boards_pattern()] {
            if let Err(error) = redis.delete_matching(&pattern).await {
                tracing::error!(%error, pattern, "initialize: cached keys could not be deleted from Redis");
            }
        }
    }
    let warm_up = state.ranks.warm_up(true).await?;
    tracing::info!(
        users = spec.users,
        scores = spec.scores,
        seed = spec.seed,
        generation,
        elapsed_ms = started.elapsed().as_millis() as u64,
        warm_up_ms = warm_up.elapsed.as_millis() as u64,
        "initialized dataset"
    );
    Ok(Initialized { elapsed: started.elapsed() })
}

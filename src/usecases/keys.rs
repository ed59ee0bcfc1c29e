//! Server keys (v3 score integrity): made and revoked by an admin, used by
//! a game's servers to post for any player and to the server-only boards.

use serde_json::{json, Map, Value};

use crate::auth::ServerKey;
use crate::domain::{BoardName, KeyRole, Timestamp};
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::usecases::moderation::{audited, Actor, Audit};
use crate::views::{ServerKeyCreated, ServerKeyList, ServerKeyView};

/// A post's server key, once it was found live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyId(pub i64);

/// Makes a key of a role (`server` unless the body says `moderator` or
/// `viewer`); its value is in this answer only.
pub async fn create(state: &AppState, actor: &Actor, body: &Map<String, Value>) -> Result<ServerKeyCreated, ApiError> {
    let name = BoardName::parse(body.get("name"))?;
    let role = KeyRole::parse(body.get("role"))?.as_str();
    let key = ServerKey::generate();
    let created_at = Timestamp::now();
    let id = audited(state, actor, "create_key", async |conn| {
        let id = state.store.insert_server_key(conn, name.as_str(), role, &key.hash(), created_at).await?;
        Ok((id, Audit { target: format!("key:{id}"), detail: json!({"name": name.as_str(), "role": role}) }))
    })
    .await?;
    let (name, key, role) = (name.as_str().to_owned(), key.as_str().to_owned(), role.to_owned());
    Ok(ServerKeyCreated { id, name, key, created_at, role })
}

pub async fn list(state: &AppState) -> Result<ServerKeyList, ApiError> {
    let keys = state.store.server_keys().await?.into_iter().map(ServerKeyView::from).collect();
    Ok(ServerKeyList { keys })
}

/// Revokes a key: the next post with it is refused, on every instance
/// (each post looks its key up in the database).
pub async fn revoke(state: &AppState, actor: &Actor, id: i64) -> Result<(), ApiError> {
    audited(state, actor, "revoke_key", async |conn| {
        if !state.store.revoke_server_key(conn, id, Timestamp::now()).await? {
            return Err(ErrorCode::KeyNotFound.into());
        }
        Ok(((), Audit { target: format!("key:{id}"), detail: json!({}) }))
    })
    .await
}

/// The live key presented, if it is one, with its role (a key whose
/// stored role this version does not know reaches nothing).
pub async fn authenticate(state: &AppState, key: &ServerKey) -> Result<Option<(KeyId, Option<KeyRole>)>, ApiError> {
    Ok(state.store.server_key_by_hash(&key.hash()).await?.map(|row| (KeyId(row.id), KeyRole::from_name(&row.role))))
}

//! Queuing held posts, in the writer's transaction: the review queue's
//! rows, and a `score.held` event for the webhooks that take it (the
//! outbox: the event commits with the post, or neither does).

use serde_json::json;
use sqlx::AnyConnection;

use crate::domain::{PostStatus, Timestamp};
use crate::store::{NewHold, Store, StoreResult};
use crate::webhooks::Event;

/// A held post, with what its event tells.
pub(super) struct Held<'a> {
    pub hold: NewHold<'a>,
    /// The board the post went to (`best` for `/api/scores`, as the queue
    /// names it).
    pub board_id: &'a str,
    pub score: i64,
    pub metadata: Option<&'a str>,
}

/// Returns how many review items it queued.
pub(super) async fn queue(
    store: &Store,
    conn: &mut AnyConnection,
    held: &[Held<'_>],
    now: Timestamp,
) -> StoreResult<u64> {
    let holds: Vec<NewHold> = held.iter().map(|held| held.hold).collect();
    store.insert_holds(conn, &holds).await?;
    for held in held {
        let metadata = held.metadata.and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok());
        let data = json!({
            "board": held.board_id,
            "user_id": held.hold.user_id,
            "score": {
                "id": held.hold.post_id,
                "score": held.score,
                "created_at": now,
                "metadata": metadata,
                "status": PostStatus::Held.as_str(),
            },
            "rule": held.hold.rule,
            "period": held.hold.period,
        });
        store.enqueue_event(conn, Event::ScoreHeld.as_str(), &data.to_string(), now).await?;
    }
    Ok(held.len() as u64)
}

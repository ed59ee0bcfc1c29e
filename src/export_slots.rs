//! How many exports an instance streams at once (v4 exports): two board
//! exports, and one own-data export per player. A slot is held by the
//! stream and given back when the stream is dropped, finished or not.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Board exports running at once on one instance, at most.
pub const MAX_BOARD_EXPORTS: usize = 2;

/// The instance's export slots.
pub struct ExportSlots {
    boards: Arc<Semaphore>,
    players: Arc<Mutex<HashSet<i64>>>,
}

impl Default for ExportSlots {
    fn default() -> Self {
        Self { boards: Arc::new(Semaphore::new(MAX_BOARD_EXPORTS)), players: Arc::default() }
    }
}

/// A player's own export running: their slot until dropped.
pub struct PlayerSlot {
    players: Arc<Mutex<HashSet<i64>>>,
    user_id: i64,
}

impl Drop for PlayerSlot {
    fn drop(&mut self) {
        if let Ok(mut running) = self.players.lock() {
            running.remove(&self.user_id);
        }
    }
}

impl ExportSlots {
    /// A board export's slot, if one is free.
    pub fn board(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.boards).try_acquire_owned().ok()
    }

    /// The player's slot, unless their export runs already.
    pub fn player(&self, user_id: i64) -> Option<PlayerSlot> {
        let claimed = self.players.lock().map(|mut running| running.insert(user_id)).unwrap_or(false);
        claimed.then(|| PlayerSlot { players: Arc::clone(&self.players), user_id })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_given_back_when_dropped() {
        let slots = ExportSlots::default();
        let (first, second) = (slots.board(), slots.board());
        assert!(first.is_some() && second.is_some());
        assert!(slots.board().is_none(), "a third board export waits");
        drop(first);
        assert!(slots.board().is_some());
        let mine = slots.player(7);
        assert!(mine.is_some() && slots.player(7).is_none() && slots.player(8).is_some());
        drop(mine);
        assert!(slots.player(7).is_some());
    }
}

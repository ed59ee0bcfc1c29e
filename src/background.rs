//! The owner of every background task (the score writer's helpers, the
//! janitor, the Redis monitor and recovery): tasks are spawned through it,
//! and `stop` aborts them all when the server stops, so none runs on
//! against a stopped server (tests start and stop many in one process).

use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::task::AbortHandle;

#[derive(Clone, Default)]
pub struct Background {
    tasks: Arc<Mutex<Tasks>>,
}

#[derive(Default)]
struct Tasks {
    handles: Vec<AbortHandle>,
    stopped: bool,
}

impl Background {
    /// Runs `task` until it ends or `stop` is called. After `stop`, new
    /// tasks are not started at all.
    pub fn spawn(&self, task: impl Future<Output = ()> + 'static) {
        let Ok(mut tasks) = self.tasks.lock() else { return };
        if tasks.stopped {
            return;
        }
        tasks.handles.retain(|handle| !handle.is_finished());
        tasks.handles.push(actix_web::rt::spawn(task).abort_handle());
    }

    /// Aborts every task (idempotent).
    pub fn stop(&self) {
        if let Ok(mut tasks) = self.tasks.lock() {
            tasks.stopped = true;
            for handle in tasks.handles.drain(..) {
                handle.abort();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    #[actix_web::test]
    async fn stop_aborts_running_tasks_and_refuses_new_ones() {
        let background = Background::default();
        let finished = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&finished);
        background.spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            flag.store(true, Ordering::SeqCst);
        });
        background.stop();
        let flag = Arc::clone(&finished);
        background.spawn(async move { flag.store(true, Ordering::SeqCst) });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!finished.load(Ordering::SeqCst));
    }
}

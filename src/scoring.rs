//! Posting a score, group-committed.
//!
//! Handlers hand their posts to one writer task per instance through a
//! bounded queue. The writer takes whatever is queued (up to a batch size,
//! waiting at most a short delay for more) and commits it as one
//! transaction: lock the players' rows (in id order, so batches of several
//! instances cannot deadlock), claim idempotency keys, append to the log,
//! apply each post in order in memory, write each player's new aggregates
//! once, and store every keyed response. One commit (one fsync) serves the
//! whole batch. A request gets its 201 only after that commit, so nothing
//! acknowledged can be lost; a failed batch fails only its own requests,
//! and the writer goes on with the next. A full queue answers 503 with
//! Retry-After instead of growing without bound.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::background::Background;
use crate::cache::Caches;
use crate::domain::{IdempotencyKey, Score, Timestamp};
use crate::error::{ApiError, ErrorCode};
use crate::rank::RankEngine;
use crate::store::{Store, StoreError, UserRow};
use crate::views::{Me, ScoreResult, ScoreView};

/// The answer to a post, as the JSON body the client gets.
#[derive(Debug, Clone)]
pub enum Posted {
    /// A new score: 201.
    Created(String),
    /// A repeated `Idempotency-Key`: the first response's body again, 200.
    Replayed(String),
}

/// How batches are formed.
#[derive(Debug, Clone, Copy)]
pub struct BatchPolicy {
    /// Posts per transaction at most.
    pub max_posts: usize,
    /// How long the writer waits for more posts once it has one.
    pub max_delay: Duration,
    /// Posts waiting at most; beyond, 503.
    pub queue: usize,
}

struct Job {
    user_id: i64,
    score: Score,
    key: Option<IdempotencyKey>,
    reply: oneshot::Sender<Result<Posted, ApiError>>,
}

/// The handle handlers post through.
#[derive(Clone)]
pub struct ScoreWriter {
    queue: mpsc::Sender<Job>,
}

/// What the writer needs: the database, and what it updates after commit.
struct Writer {
    store: Store,
    ranks: RankEngine,
    caches: Arc<Caches>,
    policy: BatchPolicy,
}

/// Why a batch failed as a whole.
#[derive(Debug, thiserror::Error)]
enum BatchError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("rendering an answer: {0}")]
    Render(#[from] serde_json::Error),
}

impl ScoreWriter {
    /// Starts the writer task on `background`.
    pub fn start(
        store: Store,
        ranks: RankEngine,
        caches: Arc<Caches>,
        policy: BatchPolicy,
        background: &Background,
    ) -> Self {
        let (queue, jobs) = mpsc::channel(policy.queue.max(1));
        let writer = Writer { store, ranks, caches, policy };
        background.spawn(writer.run(jobs));
        Self { queue }
    }

    pub async fn post(&self, user_id: i64, score: Score, key: Option<IdempotencyKey>) -> Result<Posted, ApiError> {
        let (reply, answer) = oneshot::channel();
        self.queue.try_send(Job { user_id, score, key, reply }).map_err(|error| match error {
            mpsc::error::TrySendError::Full(_) => ErrorCode::WriteQueueFull,
            mpsc::error::TrySendError::Closed(_) => ErrorCode::ShuttingDown,
        })?;
        answer.await.map_err(|_| ErrorCode::ShuttingDown)?
    }
}

/// What became of one job inside a batch, before the commit.
enum Pending {
    Created {
        body: String,
    },
    /// The same key earlier in this batch: its answer.
    ReplayOf(usize),
    /// The key was used before this batch: the stored answer, read after commit.
    ReplayStored,
    Failed(ApiError),
}

impl Writer {
    async fn run(self, mut jobs: mpsc::Receiver<Job>) {
        while let Some(first) = jobs.recv().await {
            let mut batch = vec![first];
            let deadline = tokio::time::Instant::now() + self.policy.max_delay;
            while batch.len() < self.policy.max_posts {
                match jobs.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(mpsc::error::TryRecvError::Disconnected) => break,
                    Err(mpsc::error::TryRecvError::Empty) => match tokio::time::timeout_at(deadline, jobs.recv()).await
                    {
                        Ok(Some(job)) => batch.push(job),
                        _ => break,
                    },
                }
            }
            self.commit_batch(batch).await;
        }
    }

    async fn commit_batch(&self, batch: Vec<Job>) {
        let now = Timestamp::now();
        match self.write(&batch, now).await {
            Ok((pending, final_rows)) => {
                self.ranks.record(&final_rows).await;
                if let Some(users) = &self.caches.users {
                    // Before answering, so that players read their posts back from any instance.
                    users.put_many(&final_rows).await;
                }
                let answers = self.answers(&batch, pending).await;
                for (job, answer) in batch.into_iter().zip(answers) {
                    let _ = job.reply.send(answer);
                }
            }
            Err(error) => {
                tracing::error!(error = %error, posts = batch.len(), "score batch failed; its posts were not recorded");
                for job in batch {
                    let _ = job.reply.send(Err(ErrorCode::WriteFailed.into()));
                }
            }
        }
    }

    /// The transaction. Returns what each job became and the players' rows
    /// after the batch.
    async fn write(&self, batch: &[Job], now: Timestamp) -> Result<(Vec<Pending>, Vec<UserRow>), BatchError> {
        let store = &self.store;
        let mut tx = store.begin_write().await?;
        let mut ids: Vec<i64> = batch.iter().map(|job| job.user_id).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut rows: HashMap<i64, UserRow> =
            store.users_for_update(&mut tx, &ids).await?.into_iter().map(|row| (row.id, row)).collect();
        let before: HashMap<i64, (i64, i64)> =
            rows.iter().map(|(id, r)| (*id, (r.total_score, r.play_count))).collect();

        // Pass 1: replays and key claims, in order; what remains are new posts.
        let mut claimed: HashMap<(i64, &str), usize> = HashMap::new();
        let mut pending: Vec<Option<Pending>> = Vec::with_capacity(batch.len());
        let mut new_posts: Vec<(usize, i64, Score)> = Vec::new();
        for (index, job) in batch.iter().enumerate() {
            if !rows.contains_key(&job.user_id) {
                pending.push(Some(Pending::Failed(ErrorCode::InvalidSession.into())));
                continue;
            }
            if let Some(key) = &job.key {
                if let Some(first) = claimed.get(&(job.user_id, key.as_str())) {
                    pending.push(Some(Pending::ReplayOf(*first)));
                    continue;
                }
                if !store.claim_idempotency_key(&mut tx, job.user_id, key, now).await? {
                    pending.push(Some(Pending::ReplayStored));
                    continue;
                }
                claimed.insert((job.user_id, key.as_str()), index);
            }
            pending.push(None);
            new_posts.push((index, job.user_id, job.score));
        }

        // Pass 2: one multi-row INSERT, then each post applied in order.
        let log: Vec<(i64, Score)> = new_posts.iter().map(|(_, user, score)| (*user, *score)).collect();
        let ids = store.insert_scores(&mut tx, &log, now).await?;
        let mut applied = Vec::with_capacity(new_posts.len());
        for ((index, user_id, score), score_id) in new_posts.iter().zip(ids) {
            let Some(row) = rows.get_mut(user_id) else { continue };
            let new_best = row.play_count == 0 || score.value() > row.best_score;
            if new_best {
                row.best_score = score.value();
                row.best_at = Some(now);
                row.best_score_id = Some(score_id);
            }
            row.total_score += score.value();
            row.play_count += 1;
            // The player as this post left them (a later post of the batch may move them again).
            applied.push((
                *index,
                ScoreView { id: score_id, score: score.value(), created_at: now },
                new_best,
                row.clone(),
            ));
        }
        // Ranks count players with strictly greater scores, and a player's
        // own previous entry never counts (scores only rise), so the engine
        // can rank the new values before recording them: one call for all.
        let players: Vec<&UserRow> = applied.iter().map(|(_, _, _, row)| row).collect();
        let ranks = self.ranks.ranks_of(&players).await?;
        for ((index, score, new_best, row), ranks) in applied.iter().zip(ranks) {
            let result = ScoreResult { score: score.clone(), new_best: *new_best, user: Me::new(row, ranks) };
            let body = serde_json::to_string(&result)?;
            if let Some(key) = &batch[*index].key {
                store.save_idempotent_response(&mut tx, row.id, key, 201, &body).await?;
            }
            pending[*index] = Some(Pending::Created { body });
        }
        let pending: Vec<Pending> = pending
            .into_iter()
            .map(|p| {
                p.unwrap_or_else(|| Pending::Failed(ApiError::internal(anyhow::anyhow!("a post without an outcome"))))
            })
            .collect();

        // One UPDATE for every player whose aggregates changed.
        let changed: Vec<UserRow> = rows
            .into_values()
            .filter(|row| before.get(&row.id).is_some_and(|(_, plays)| *plays != row.play_count))
            .collect();
        let changes: Vec<(&UserRow, i64, i64)> = changed
            .iter()
            .map(|row| {
                let (total_before, plays_before) = before.get(&row.id).copied().unwrap_or_default();
                (row, row.total_score - total_before, row.play_count - plays_before)
            })
            .collect();
        store.set_many_aggregates(&mut tx, &changes).await?;
        let first_scores = changes.iter().filter(|(row, _, plays_added)| row.play_count == *plays_added).count();
        if first_scores > 0 {
            store.add_board_players(&mut tx, first_scores as i64).await?;
        }
        tx.commit().await.map_err(StoreError::from)?;
        Ok((pending, changed))
    }

    /// Each job's answer, once the batch has committed.
    async fn answers(&self, batch: &[Job], pending: Vec<Pending>) -> Vec<Result<Posted, ApiError>> {
        let bodies: Vec<Option<String>> =
            pending.iter().map(|p| if let Pending::Created { body } = p { Some(body.clone()) } else { None }).collect();
        let mut answers = Vec::with_capacity(batch.len());
        for (job, outcome) in batch.iter().zip(pending) {
            answers.push(match outcome {
                Pending::Created { body } => Ok(Posted::Created(body)),
                Pending::ReplayOf(first) => match bodies.get(first).cloned().flatten() {
                    Some(body) => Ok(Posted::Replayed(body)),
                    None => Err(ApiError::internal(anyhow::anyhow!("a replay without its first answer"))),
                },
                Pending::ReplayStored => match &job.key {
                    Some(key) => self.stored_answer(job.user_id, key).await,
                    None => Err(ApiError::internal(anyhow::anyhow!("a stored replay without a key"))),
                },
                Pending::Failed(error) => Err(error),
            });
        }
        answers
    }

    async fn stored_answer(&self, user_id: i64, key: &IdempotencyKey) -> Result<Posted, ApiError> {
        match self.store.idempotent_response(user_id, key).await? {
            Some(body) => Ok(Posted::Replayed(body)),
            // Claimed, yet gone: purged between the claim and this read.
            None => Err(ErrorCode::IdempotencyKeyReused.into()),
        }
    }
}

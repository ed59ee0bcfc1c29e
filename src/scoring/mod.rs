//! Posting a score, group-committed: to the built-in boards
//! (`/api/scores`) and to custom boards alike.
//!
//! Handlers hand their posts to one writer task per instance through a
//! bounded queue. The writer takes whatever is queued (up to a batch size,
//! waiting at most a short delay for more) and commits it as one
//! transaction: lock what the posts change (players' rows in id order,
//! custom boards against deletion, entries per board and period in player
//! order, so batches of several instances cannot deadlock), claim
//! idempotency keys, append to the logs, apply each post in order in
//! memory, write each changed row once, and store every keyed response.
//! One commit (one fsync) serves the whole batch. A request gets its 201
//! only after that commit, so nothing acknowledged can be lost; a failed
//! batch fails only its own requests, and the writer goes on with the
//! next. A full queue answers 503 with Retry-After instead of growing
//! without bound.

mod builtin;
mod custom;
mod holds;
mod pace;

pub(crate) use builtin::count_post;
pub(crate) use custom::{entry_change, next_entry, Points};

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, oneshot};

use crate::background::Background;
use crate::boards::{CustomBoard, Registry};
use crate::cache::Caches;
use crate::domain::{Board, IdempotencyKey, Metadata, PartitionValue, Score, Timestamp, Writers};
use crate::error::{ApiError, ErrorCode};
use crate::rank::RankEngine;
use crate::store::{retry_conflicts, MaybeConflict, Store, StoreError};
use crate::views::{BoardScoreResult, FeedResult, PartitionResult, ScoreResult};

/// The answer to a post, as the JSON body the client gets.
#[derive(Debug, Clone)]
pub enum Posted {
    /// A new score: 201.
    Created(String),
    /// A new score held for review (a board's `hold_beyond`, `hold_jump`): 202.
    Held(String),
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
    /// A deliberate bug for the bench's tests (never in production).
    pub planted_fault: Option<crate::config::PlantedFault>,
}

/// Where a post goes.
#[derive(Clone)]
pub enum Target {
    /// The built-in boards (`/api/scores`).
    Builtin,
    /// A custom board.
    Custom { board: Arc<CustomBoard> },
}

/// Who hands a post over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Poster {
    /// The player, with a session of this data generation.
    Player { generation: i64 },
    /// A game server, with a server key, for the player the post names.
    Server,
}

/// A post as a handler hands it over.
pub struct Post {
    pub user_id: i64,
    pub by: Poster,
    pub score: Score,
    /// As many as the board has (v4 `subscores`; a board without them has
    /// none, and a fed board without them drops the original's).
    pub subscores: Vec<i64>,
    pub target: Target,
    /// Kept by custom boards (the built-ins keep none; the boards they feed do).
    pub metadata: Option<Metadata>,
    /// The partition of its board the metadata names (v4 `partition_by`).
    pub partition: Option<PartitionValue>,
    pub key: Option<IdempotencyKey>,
    /// The least time since the player's previous post to the board, in
    /// ms (its `min_interval_ms`; for `/api/scores`, the longer of the
    /// built-in boards'), checked by the writer under the player's lock.
    pub min_interval_ms: Option<i64>,
}

/// What was answered to a post's `Idempotency-Key` before, if it was used:
/// the first answer again when this post is the same one (keys stored
/// before fingerprints existed count as the same), 422
/// `idempotency_key_reused` when it is another. Read without the writer,
/// so a replay never waits in its queue.
pub async fn replayed(store: &Store, post: &Post) -> Result<Option<Result<Posted, ApiError>>, ApiError> {
    let Some(key) = &post.key else { return Ok(None) };
    stored_answer(store, post.user_id, key, &post.fingerprint()).await
}

async fn stored_answer(
    store: &Store,
    user_id: i64,
    key: &IdempotencyKey,
    fingerprint: &str,
) -> Result<Option<Result<Posted, ApiError>>, ApiError> {
    Ok(store.idempotent_response(user_id, key).await?.map(|stored| {
        if stored.fingerprint.as_deref().is_none_or(|f| f == fingerprint) {
            Ok(Posted::Replayed(stored.body.0))
        } else {
            Err(ErrorCode::IdempotencyKeyReused.into())
        }
    }))
}

impl Post {
    /// What an `Idempotency-Key` is bound to: the board and the body. A
    /// repeat with another fingerprint is refused, not replayed.
    fn fingerprint(&self) -> String {
        let mut hasher = Sha256::new();
        match &self.target {
            Target::Builtin => {
                hasher.update(b"scores\n");
                // (Bodies without metadata keep the fingerprint they had before v4.)
                if let Some(metadata) = &self.metadata {
                    hasher.update(metadata.as_str());
                    hasher.update(b"\n");
                }
            }
            Target::Custom { board } => {
                hasher.update(format!("board {}\n", board.spec.number));
                hasher.update(self.metadata.as_ref().map_or("", |m| m.as_str()));
                hasher.update(b"\n");
            }
        }
        hasher.update(self.score.value().to_string());
        // (Posts without subscores keep the fingerprint they had before them.)
        for subscore in &self.subscores {
            hasher.update(format!(",{subscore}"));
        }
        hasher.finalize()[..16].iter().map(|byte| format!("{byte:02x}")).collect()
    }
}

struct Job {
    post: Post,
    fingerprint: String,
    reply: oneshot::Sender<Result<Posted, ApiError>>,
}

/// A post made with another one: fed by it (v4 `feeds`; the origin is a
/// job) or its copy on its board's partition (v4 `partition_by`; the
/// origin is a job or a fed post). `origin` is the item's index.
struct FedPost {
    origin: usize,
    post: Post,
}

impl FedPost {
    fn item(&self, partition: bool) -> Item<'_> {
        Item { post: &self.post, fingerprint: "", fed_by: Some(self.origin), partition }
    }
}

/// One post a batch writes: a job's, a fed one, or one to a partition.
/// Each comes after the post it is made with (jobs, fed posts, then the
/// partitions' posts), so that the original is decided first.
struct Item<'a> {
    post: &'a Post,
    fingerprint: &'a str,
    /// A post made with another: the index of that one.
    fed_by: Option<usize>,
    /// A partition's copy of the post at `fed_by`: judged once, on its
    /// board, and answered in that post's `partition`.
    partition: bool,
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
    /// Where the built-in boards' hold rules are read.
    boards: Arc<Registry>,
    policy: BatchPolicy,
    background: Background,
    metrics: WriterMetrics,
}

/// What the writer counts for `/metrics`.
#[derive(Clone)]
pub struct WriterMetrics {
    /// Posts per committed batch.
    pub batch_sizes: prometheus::Histogram,
    /// Batches rolled back by a conflict and run again.
    pub conflicts: prometheus::IntCounter,
    /// Posts held for review (`held`).
    pub reviews: prometheus::IntCounterVec,
}

/// Why a batch failed as a whole.
#[derive(Debug, thiserror::Error)]
enum BatchError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("rendering an answer: {0}")]
    Render(#[from] serde_json::Error),
}

impl MaybeConflict for BatchError {
    fn is_conflict(&self) -> bool {
        matches!(self, Self::Store(error) if error.is_conflict())
    }
}

impl From<sqlx::Error> for BatchError {
    fn from(error: sqlx::Error) -> Self {
        Self::Store(error.into())
    }
}

impl ScoreWriter {
    /// Starts the writer task on `background`.
    pub fn start(
        store: Store,
        ranks: RankEngine,
        caches: Arc<Caches>,
        boards: Arc<Registry>,
        policy: BatchPolicy,
        background: &Background,
        metrics: WriterMetrics,
    ) -> Self {
        let (queue, jobs) = mpsc::channel(policy.queue.max(1));
        let writer = Writer { store, ranks, caches, boards, policy, background: background.clone(), metrics };
        background.spawn(writer.run(jobs));
        Self { queue }
    }

    /// Posts waiting for the writer.
    pub fn queued(&self) -> usize {
        self.queue.max_capacity() - self.queue.capacity()
    }

    pub async fn post(&self, post: Post) -> Result<Posted, ApiError> {
        let (reply, answer) = oneshot::channel();
        let fingerprint = post.fingerprint();
        self.queue.try_send(Job { post, fingerprint, reply }).map_err(|error| match error {
            mpsc::error::TrySendError::Full(_) => ErrorCode::WriteQueueFull,
            mpsc::error::TrySendError::Closed(_) => ErrorCode::ShuttingDown,
        })?;
        answer.await.map_err(|_| ErrorCode::ShuttingDown)?
    }
}

/// How long a failed batch's players are looked up again, at most.
const RECONCILE_ATTEMPTS: usize = 600;
const RECONCILE_PAUSE: Duration = Duration::from_millis(100);

/// A batch that failed may have committed all the same: the database can
/// go away between committing and answering. Once the database answers
/// again, its players' rows and current entries are read and recorded, so
/// the rank engine and the caches never miss a committed post (versions
/// keep an older state from replacing a newer one; a batch that did not
/// commit records what was there before, which changes nothing).
fn reconcile(
    store: Store,
    ranks: RankEngine,
    caches: Arc<Caches>,
    posts: &[&Post],
) -> impl std::future::Future<Output = ()> {
    let mut players: Vec<i64> = posts.iter().map(|post| post.user_id).collect();
    players.sort_unstable();
    players.dedup();
    let mut boards: HashMap<i64, (Arc<CustomBoard>, Vec<i64>)> = HashMap::new();
    for post in posts {
        if let Target::Custom { board } = &post.target {
            boards.entry(board.spec.number).or_insert_with(|| (Arc::clone(board), Vec::new())).1.push(post.user_id);
        }
    }
    async move {
        for _ in 0..RECONCILE_ATTEMPTS {
            tokio::time::sleep(RECONCILE_PAUSE).await;
            let Ok(mut conn) = store.conn().await else { continue };
            let Ok(rows) = store.users(&mut conn, &players).await else { continue };
            let now = Timestamp::now();
            let mut entries = Vec::new();
            let mut complete = true;
            for (board, ids) in boards.values() {
                let period = board.period_at(now);
                match store.period_entries_of(&mut conn, board.spec.number, period.index, ids).await {
                    Ok(found) => entries.extend(found.into_iter().map(|entry| {
                        let listed = rows.iter().any(|row| row.id == entry.user_id && row.banned_at.is_none());
                        (custom::entry_change(board, &entry, listed), period.end)
                    })),
                    Err(_) => complete = false,
                }
            }
            if !complete {
                continue;
            }
            drop(conn);
            ranks.record(&rows).await;
            ranks.record_entries(&entries).await;
            caches.users.put_many(&rows).await;
            tracing::info!(players = players.len(), "a failed score batch's players were recorded again");
            return;
        }
        tracing::error!(players = players.len(), "a failed score batch's players could not be read again");
    }
}

/// A post's answer before it is rendered: the results of the posts it
/// fed join it first.
enum Answer {
    Scores(ScoreResult),
    Board(BoardScoreResult),
}

impl Answer {
    fn feeds(&mut self) -> &mut Vec<FeedResult> {
        match self {
            Self::Scores(result) => &mut result.feeds,
            Self::Board(result) => &mut result.feeds,
        }
    }

    fn render(&self) -> serde_json::Result<String> {
        match self {
            Self::Scores(result) => serde_json::to_string(result),
            Self::Board(result) => serde_json::to_string(result),
        }
    }
}

/// What became of one post inside a batch, before the commit.
enum Pending {
    /// Not decided yet: a new post for the built-in or custom pass.
    New,
    /// Accepted (201) or held for review (202), not rendered yet (boxed:
    /// an answer is many times the size of the other states).
    Taken {
        answer: Box<Answer>,
        held: bool,
    },
    Created {
        body: String,
    },
    /// Held for review (a board's `hold_beyond`, `hold_jump`): its answer (202).
    Held {
        body: String,
    },
    /// The same key earlier in this batch: its answer.
    ReplayOf(usize),
    /// The key was used before this batch: the stored answer, read after commit.
    ReplayStored,
    Failed(ApiError),
}

impl Pending {
    /// Whether the post was held for review (its fed posts are held with it).
    fn is_held(&self) -> bool {
        matches!(self, Self::Taken { held: true, .. } | Self::Held { .. })
    }
}

/// What a committed batch changed, for the rank engine and the caches.
#[derive(Default)]
struct Committed {
    builtin: builtin::Changed,
    custom: custom::Changed,
}

/// What a fed board refuses that a direct post's handler checks before
/// the writer: its writers, its score range and its partitions' values.
fn fed_refusal(post: &Post) -> Option<ErrorCode> {
    let Target::Custom { board } = &post.target else { return None };
    if board.spec.rules.writers == Writers::Server && matches!(post.by, Poster::Player { .. }) {
        return Some(ErrorCode::ServerOnly);
    }
    let score = post.score.value();
    if score < board.spec.min_score || score > board.spec.max_score {
        return Some(ErrorCode::InvalidScore);
    }
    board.spec.partitioning.as_ref().and_then(|rule| rule.partition_of(post.metadata.as_ref()).err())
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
            self.metrics.batch_sizes.observe(batch.len() as f64);
            self.commit_batch(batch).await;
        }
    }

    /// The posts the batch's posts feed, each original's in its board's
    /// `feeds` order (deleted boards left out).
    fn fed_posts(&self, batch: &[Job]) -> Vec<FedPost> {
        let mut fed = Vec::new();
        for (origin, job) in batch.iter().enumerate() {
            let feeds = match &job.post.target {
                Target::Builtin => self.boards.builtin_feeds(),
                Target::Custom { board } => board.spec.rules.feeds,
            };
            for board in feeds.numbers().iter().filter_map(|number| self.boards.by_number(*number)) {
                // Feeds join boards with the same subscores or none.
                let subscores = if board.spec.subscores.is_empty() { Vec::new() } else { job.post.subscores.clone() };
                let partition = board.spec.partitioning.as_ref().and_then(|rule| {
                    // (A value the fed board refuses skips it: `fed_refusal`.)
                    rule.partition_of(job.post.metadata.as_ref()).ok().flatten()
                });
                let post = Post {
                    user_id: job.post.user_id,
                    by: job.post.by,
                    score: job.post.score,
                    subscores,
                    metadata: job.post.metadata.clone(),
                    partition,
                    min_interval_ms: board.spec.rules.min_interval_ms,
                    target: Target::Custom { board },
                    key: None,
                };
                fed.push(FedPost { origin, post });
            }
        }
        fed
    }

    /// The partitions' copies of the batch's posts (`posts`: the jobs',
    /// then the fed ones), each partition opened first if it is new:
    /// `None` when it cannot be (the database is away), which fails the
    /// batch as any write would. A partition whose board was deleted
    /// meanwhile is left out (the post fails with its board), and so is a
    /// new one while the board's period has all the partitions it takes
    /// (the post is refused, 409 `partition_limit`): a refused post opens
    /// no partition that would stay empty.
    async fn partition_posts(&self, posts: &[&Post]) -> Option<Vec<FedPost>> {
        let mut copies = Vec::new();
        for (origin, post) in posts.iter().enumerate() {
            let (Target::Custom { board }, Some(value)) = (&post.target, &post.partition) else { continue };
            let partition = match self.boards.partition(board.spec.number, value) {
                Some(partition) => partition,
                None => match self.open_partition(board, value).await {
                    Ok(Some(partition)) => partition,
                    Ok(None) => continue,
                    Err(error) => {
                        tracing::error!(%error, board = %board.spec.id, "opening a partition failed");
                        return None;
                    }
                },
            };
            let copy = Post {
                user_id: post.user_id,
                by: post.by,
                score: post.score,
                subscores: post.subscores.clone(),
                metadata: post.metadata.clone(),
                partition: None,
                min_interval_ms: None,
                target: Target::Custom { board: partition },
                key: None,
            };
            copies.push(FedPost { origin, post: copy });
        }
        Some(copies)
    }

    /// Opens a board's partition in a transaction of its own (a batch
    /// that then fails leaves it open, empty, as a later post would open
    /// it) and registers it; `None` when the board is gone or its period
    /// has all the partitions it takes. The instance that opens it builds it in the
    /// rank engine before the commit, so no post to it is recorded before.
    async fn open_partition(
        &self,
        board: &CustomBoard,
        value: &PartitionValue,
    ) -> Result<Option<Arc<CustomBoard>>, StoreError> {
        // Opened already (on another instance), or full: nothing to open.
        if let Some(number) = self.store.partition_number(board.spec.number, value).await? {
            return Ok(Some(self.boards.insert(board.partition(number, value.clone()))));
        }
        let most = board.spec.partitioning.as_ref().map_or(i64::MAX, |rule| rule.max_partitions);
        let period = board.period_at(Timestamp::now()).index;
        if self.store.partitions_with_entries_now(board.spec.number, period).await? >= most {
            return Ok(None);
        }
        let mut tx = self.store.begin_write().await?;
        let Some((number, opened)) = self.store.open_partition(&mut tx, board.spec.number, value).await? else {
            return Ok(None);
        };
        let partition = self.boards.insert(board.partition(number, value.clone()));
        if opened {
            self.ranks.add_board(&partition).await;
        }
        tx.commit().await?;
        Ok(Some(partition))
    }

    async fn commit_batch(&self, batch: Vec<Job>) {
        let fed = self.fed_posts(&batch);
        let posts: Vec<&Post> = batch.iter().map(|job| &job.post).chain(fed.iter().map(|fed| &fed.post)).collect();
        let Some(copies) = self.partition_posts(&posts).await else {
            for job in batch {
                let _ = job.reply.send(Err(ErrorCode::WriteFailed.into()));
            }
            return;
        };
        let now = Timestamp::now();
        let items: Vec<Item> = batch
            .iter()
            .map(|job| Item { post: &job.post, fingerprint: &job.fingerprint, fed_by: None, partition: false })
            .chain(fed.iter().map(|fed| fed.item(false)))
            .chain(copies.iter().map(|copy| copy.item(true)))
            .collect();
        // A batch that lost to another transaction runs again whole, its
        // keys claimed again or found claimed.
        let outcome = retry_conflicts(
            async || self.write(&items, now).await,
            |error| {
                tracing::warn!(%error, posts = items.len(), "score batch conflicted; retrying it");
                self.metrics.conflicts.inc();
            },
        )
        .await;
        match outcome {
            Ok((mut pending, committed)) => {
                let queued = committed.builtin.queued + committed.custom.queued;
                self.metrics.reviews.with_label_values(&["held"]).inc_by(queued);
                self.ranks.record(&committed.builtin.rows).await;
                self.ranks.record_entries(&committed.custom.changes).await;
                // Before answering, so that players read their posts back from any instance.
                self.caches.users.put_many(&committed.builtin.rows).await;
                pending.truncate(batch.len());
                let answers = self.answers(&batch, pending).await;
                for (job, answer) in batch.into_iter().zip(answers) {
                    let _ = job.reply.send(answer);
                }
            }
            Err(error) => {
                tracing::error!(error = %error, posts = batch.len(), "score batch failed; its posts were not recorded");
                let posts: Vec<&Post> = items.iter().map(|item| item.post).collect();
                self.background.spawn(reconcile(
                    self.store.clone(),
                    self.ranks.clone(),
                    Arc::clone(&self.caches),
                    &posts,
                ));
                for job in batch {
                    let _ = job.reply.send(Err(ErrorCode::WriteFailed.into()));
                }
            }
        }
    }

    /// The transaction. Returns what each item became and what changed.
    async fn write(&self, batch: &[Item<'_>], now: Timestamp) -> Result<(Vec<Pending>, Committed), BatchError> {
        let store = &self.store;
        let mut tx = store.begin_score_batch().await?;
        let mut pending: Vec<Pending> = batch.iter().map(|_| Pending::New).collect();

        // Lock what the posts change, in an order every batch shares:
        // players' rows, then boards, then entries.
        let mut players = builtin::lock_players(store, &mut tx, batch).await?;
        let mut custom = custom::lock(store, &mut tx, batch, &players, now, self.policy.planted_fault).await?;
        let mut pace = pace::Pace::read(store, &mut tx, batch).await?;
        for (index, item) in batch.iter().enumerate() {
            let board_gone = match &item.post.target {
                Target::Builtin => None,
                Target::Custom { board } => custom.refusal(board.spec.number),
            };
            let gone = board_gone.or_else(|| players.refusal(item.post));
            if let Some(code) = gone {
                pending[index] = Pending::Failed(code.into());
            }
        }

        // Replays and key claims, in order; what stays `New` is posted.
        let mut claimed: HashMap<(i64, &str), (usize, &str)> = HashMap::new();
        for (index, item) in batch.iter().enumerate() {
            let Some(key) = &item.post.key else { continue };
            if !matches!(pending[index], Pending::New) {
                continue;
            }
            let user = item.post.user_id;
            if let Some((first, fingerprint)) = claimed.get(&(user, key.as_str())) {
                pending[index] = if *fingerprint == item.fingerprint {
                    Pending::ReplayOf(*first)
                } else {
                    Pending::Failed(ErrorCode::IdempotencyKeyReused.into())
                };
                continue;
            }
            if store.claim_idempotency_key(&mut tx, user, key, item.fingerprint, now).await? {
                claimed.insert((user, key.as_str()), (index, item.fingerprint));
            } else {
                pending[index] = Pending::ReplayStored;
            }
        }

        // The boards' minimum intervals, tournaments' entrants and attempts
        // and partitions' limits, in the batch's order, after the replays:
        // a replay is not a new post. A fed post is made only with its
        // original, and passes its own board's rules; a partition's copy
        // is made with its post, which passed them for it.
        let copies: HashMap<usize, usize> = batch
            .iter()
            .enumerate()
            .filter(|(_, item)| item.partition)
            .filter_map(|(index, item)| Some((item.fed_by?, index)))
            .collect();
        for (index, item) in batch.iter().enumerate() {
            if !matches!(pending[index], Pending::New) {
                continue;
            }
            if let Some(origin) = item.fed_by {
                if !matches!(pending[origin], Pending::New) {
                    pending[index] = Pending::Failed(ErrorCode::WriteFailed.into());
                    continue;
                }
            }
            if item.partition {
                continue;
            }
            let taken = match item.fed_by.and_then(|_| fed_refusal(item.post)) {
                Some(code) => Err(code.into()),
                None => pace
                    .check(item.post, now)
                    .and_then(|()| custom.check_entry(item.post, now).map_err(ApiError::from))
                    .and_then(|()| match copies.get(&index) {
                        Some(copy) => custom.take_partition(item.post, batch[*copy].post).map_err(ApiError::from),
                        // A partition left unopened: its board's period was full.
                        None if item.post.partition.is_some() => Err(ErrorCode::PartitionLimit.into()),
                        None => Ok(()),
                    }),
            };
            match taken {
                Ok(()) => {
                    pace.record(item.post, now);
                    custom.record_attempt(item.post);
                }
                Err(refusal) => {
                    if let Some(key) = &item.post.key {
                        store.release_idempotency_key(&mut tx, item.post.user_id, key).await?;
                    }
                    pending[index] = Pending::Failed(refusal);
                }
            }
        }

        let rules = builtin::Rules {
            best: self.boards.builtin_rules(Board::Best),
            total: self.boards.builtin_rules(Board::Total),
        };
        let builtin =
            builtin::apply(store, &self.ranks, &mut tx, batch, &mut pending, &mut players, rules, now).await?;
        let custom = custom.apply(store, &self.ranks, &mut tx, batch, &mut pending, now).await?;
        render(batch, &mut pending)?;

        for (index, item) in batch.iter().enumerate() {
            let (status, body) = match &pending[index] {
                Pending::Created { body } => (201, body),
                Pending::Held { body } => (202, body),
                _ => continue,
            };
            if let Some(key) = &item.post.key {
                store.save_idempotent_response(&mut tx, item.post.user_id, key, status, body).await?;
            }
        }
        tx.commit().await?;
        Ok((pending, Committed { builtin, custom }))
    }

    /// Each job's answer, once the batch has committed.
    async fn answers(&self, batch: &[Job], pending: Vec<Pending>) -> Vec<Result<Posted, ApiError>> {
        let bodies: Vec<Option<String>> = pending
            .iter()
            .map(|p| match p {
                Pending::Created { body } | Pending::Held { body } => Some(body.clone()),
                _ => None,
            })
            .collect();
        let mut answers = Vec::with_capacity(batch.len());
        for (job, outcome) in batch.iter().zip(pending) {
            answers.push(match outcome {
                Pending::Created { body } => Ok(Posted::Created(body)),
                Pending::Held { body } => Ok(Posted::Held(body)),
                Pending::ReplayOf(first) => match bodies.get(first).cloned().flatten() {
                    Some(body) => Ok(Posted::Replayed(body)),
                    None => Err(ApiError::internal(anyhow::anyhow!("a replay without its first answer"))),
                },
                Pending::ReplayStored => match &job.post.key {
                    Some(key) => self.stored_answer(job, key).await,
                    None => Err(ApiError::internal(anyhow::anyhow!("a stored replay without a key"))),
                },
                Pending::Failed(error) => Err(error),
                Pending::New | Pending::Taken { .. } => {
                    Err(ApiError::internal(anyhow::anyhow!("a post without an outcome")))
                }
            });
        }
        answers
    }

    /// The first answer of a key used before (claimed by another job).
    async fn stored_answer(&self, job: &Job, key: &IdempotencyKey) -> Result<Posted, ApiError> {
        match stored_answer(&self.store, job.post.user_id, key, &job.fingerprint).await? {
            Some(answer) => answer,
            // Claimed, yet gone: purged between the claim and this read.
            None => Err(ErrorCode::IdempotencyKeyReused.into()),
        }
    }
}

/// Each partition's copy's result joins its post's answer (`partition`),
/// then each fed post's result its original's (in `feeds` order: the
/// items' order), then every taken post's answer is rendered.
fn render(batch: &[Item<'_>], pending: &mut [Pending]) -> Result<(), serde_json::Error> {
    for (index, item) in batch.iter().enumerate().filter(|(_, item)| item.partition) {
        let (Some(origin), Target::Custom { board }) = (item.fed_by, &item.post.target) else { continue };
        let Some(value) = board.partition_value() else { continue };
        let Pending::Taken { answer, .. } = std::mem::replace(&mut pending[index], Pending::New) else { continue };
        let Answer::Board(result) = *answer else { continue };
        if let Pending::Taken { answer, .. } = &mut pending[origin] {
            if let Answer::Board(original) = answer.as_mut() {
                original.partition = Some(Box::new(PartitionResult::of(value, result)));
            }
        }
    }
    for (index, item) in batch.iter().enumerate().filter(|(_, item)| !item.partition) {
        let (Some(origin), Target::Custom { board }) = (item.fed_by, &item.post.target) else { continue };
        let id = board.spec.id.clone();
        let result = match std::mem::replace(&mut pending[index], Pending::New) {
            Pending::Taken { answer, .. } => match *answer {
                Answer::Board(result) => FeedResult::taken(id, result),
                Answer::Scores(_) => continue,
            },
            Pending::Failed(refusal) => FeedResult::skipped(id, refusal.code().as_str()),
            _ => continue,
        };
        if let Pending::Taken { answer, .. } = &mut pending[origin] {
            answer.feeds().push(result);
        }
    }
    for outcome in pending.iter_mut() {
        if let Pending::Taken { answer, held } = outcome {
            let body = answer.render()?;
            *outcome = if *held { Pending::Held { body } } else { Pending::Created { body } };
        }
    }
    Ok(())
}

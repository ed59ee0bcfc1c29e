//! The source the engine picked for one read: it answers each read the way
//! that source does, and when Redis fails, degrades the engine and lets the
//! database answer instead. The one place the engine decides where an
//! answer comes from.

use std::convert::Infallible;
use std::sync::Arc;

use super::source::{BoardSource, Ranked, ScoreRank, Slice, SliceRead, SliceStart};
use super::{Failed, RankEngine, Shared, Source};
use crate::domain::{BoardKey, BoardPeriod};
use crate::redis::RedisError;
use crate::store::{StoreError, StoreResult};

pub(super) struct Picked<'a> {
    pub engine: &'a RankEngine,
    pub source: Source<'a>,
}

impl Picked<'_> {
    /// A Redis answer, or none when Redis failed: the engine is degraded,
    /// unless the failure was a walk fallen too far behind, which only
    /// means that this one read goes to the database.
    fn kept<T>(&self, shared: &Arc<Shared>, answer: Result<T, RedisError>) -> Option<T> {
        answer
            .inspect_err(|error| {
                if !matches!(error, RedisError::BehindWalk) {
                    self.engine.degrade(shared, error, Failed::Read);
                }
            })
            .ok()
    }
}

fn infallible<T>(answer: Result<T, Infallible>) -> T {
    match answer {
        Ok(answer) => answer,
        Err(never) => match never {},
    }
}

impl BoardSource for Picked<'_> {
    type Error = StoreError;

    async fn slice(&self, board: BoardPeriod, start: SliceStart, count: usize) -> StoreResult<Option<Slice>> {
        let database = &self.engine.database;
        match self.source {
            Source::Local(local) => Ok(infallible(local.slice(board, start, count).await)),
            Source::Redis(shared) => match self.kept(shared, shared.redis.slice(board, start, count).await) {
                Some(answer) => Ok(answer),
                None => database.slice(board, start, count).await,
            },
            Source::Database => database.slice(board, start, count).await,
        }
    }

    async fn slice_unless(
        &self,
        board: BoardPeriod,
        start: SliceStart,
        count: usize,
        known: &str,
    ) -> StoreResult<SliceRead> {
        let database = &self.engine.database;
        match self.source {
            Source::Local(local) => Ok(infallible(local.slice_unless(board, start, count, known).await)),
            Source::Redis(shared) => {
                match self.kept(shared, shared.redis.slice_unless(board, start, count, known).await) {
                    Some(answer) => Ok(answer),
                    None => database.slice_unless(board, start, count, known).await,
                }
            }
            Source::Database => database.slice_unless(board, start, count, known).await,
        }
    }

    async fn ranks_of_keys(&self, keys: &[(BoardPeriod, BoardKey)]) -> StoreResult<Vec<ScoreRank>> {
        let database = &self.engine.database;
        match self.source {
            Source::Local(local) => Ok(infallible(local.ranks_of_keys(keys).await)),
            Source::Redis(shared) => match self.kept(shared, shared.redis.ranks_of_keys(keys).await) {
                Some(answer) => Ok(answer),
                None => database.ranks_of_keys(keys).await,
            },
            Source::Database => database.ranks_of_keys(keys).await,
        }
    }

    async fn ranked(&self, board: BoardPeriod, ids: &[i64]) -> StoreResult<Ranked> {
        let database = &self.engine.database;
        match self.source {
            Source::Local(local) => Ok(infallible(local.ranked(board, ids).await)),
            Source::Redis(shared) => match self.kept(shared, shared.redis.ranked(board, ids).await) {
                Some(answer) => Ok(answer),
                None => database.ranked(board, ids).await,
            },
            Source::Database => database.ranked(board, ids).await,
        }
    }
}

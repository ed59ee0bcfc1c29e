//! Every Redis key hiscore uses, spelled here and nowhere else. All keys
//! start with the configured prefix, so several deployments (or tests) can
//! share one Redis. Keys that Lua scripts touch together share a hash tag
//! (`{…}`), so they stay in one slot on a Redis Cluster.

/// The key builder of one deployment.
#[derive(Debug, Clone)]
pub struct Keys {
    prefix: String,
}

impl Keys {
    pub fn new(prefix: &str) -> Self {
        Self { prefix: prefix.to_owned() }
    }

    /// A session, by the hash of its token (never the token): the user id.
    pub fn session(&self, token_hash: &str) -> String {
        format!("{}:session:{token_hash}", self.prefix)
    }

    /// Every cached session (initialize drops them all).
    pub fn session_pattern(&self) -> String {
        format!("{}:session:*", self.prefix)
    }

    /// A rate-limit window of one limit and one key (an address, an account).
    pub fn rate_window(&self, limit: &str, key: &str) -> String {
        format!("{}:rate:{limit}:{key}", self.prefix)
    }

    /// The addresses `account` logged in from: a sorted set of addresses
    /// scored by when each stops counting (one key, so that erasure deletes
    /// it without a scan).
    pub fn known_addresses(&self, account: &str) -> String {
        format!("{}:known-addresses:{account}", self.prefix)
    }

    /// The addresses `account` has failed-login windows from (a set that
    /// expires with the last window): where erasure finds those windows.
    pub fn failed_login_addresses(&self, account: &str) -> String {
        format!("{}:failed-from:{account}", self.prefix)
    }

    /// A cached user row (its value carries the data generation).
    pub fn user_row(&self, id: i64) -> String {
        format!("{}:user:{id}", self.prefix)
    }

    /// Every cached user row (dropped after a failover).
    pub fn user_rows_pattern(&self) -> String {
        format!("{}:user:*", self.prefix)
    }

    /// The counter every change of a display name bumps: each instance
    /// drops its cached names when it moves.
    pub fn names_version(&self) -> String {
        format!("{}:names-version", self.prefix)
    }

    /// The counter every initialize bumps, which every instance watches.
    pub fn data_generation(&self) -> String {
        format!("{}:data-generation", self.prefix)
    }

    /// The keys of the built-in boards, which one script writes together.
    pub fn builtin_boards(&self) -> BoardGroupKeys {
        BoardGroupKeys { tag: format!("{}:{{builtin}}", self.prefix) }
    }

    /// The keys of a custom board, all its periods (one hash tag per board:
    /// boards spread over a cluster's masters, a board's scripts stay on one).
    pub fn custom_board(&self, number: i64) -> BoardGroupKeys {
        BoardGroupKeys { tag: format!("{}:{{b:{number}}}", self.prefix) }
    }

    /// Every custom board's keys (initialize wipes the boards).
    pub fn custom_boards_pattern(&self) -> String {
        format!("{}:{{b:*", self.prefix)
    }

    /// Everything under this prefix (tests).
    pub fn everything(&self) -> String {
        format!("{}:*", self.prefix)
    }
}

/// The keys of a group of boards written by one script: each board's sorted
/// set and entry hash, the group's change log and the keys of its rebuild.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardGroupKeys {
    /// `prefix:{tag}`: the hash tag that keeps the group on one slot.
    tag: String,
}

impl BoardGroupKeys {
    /// The sorted set of a board (members are packed entry keys).
    pub fn set(&self, board: &str) -> String {
        format!("{}:set:{board}", self.tag)
    }

    /// A board's entries: player id → current member and version.
    pub fn entries(&self, board: &str) -> String {
        format!("{}:entries:{board}", self.tag)
    }

    /// A `latest` board's entries' change numbers: player id → the number
    /// of the change that last wrote the entry (the database's
    /// `board_entries.changed`; walks leave out those after their start).
    pub fn change_numbers(&self, board: &str) -> String {
        format!("{}:change-numbers:{board}", self.tag)
    }

    /// A `latest` board's count of changes recorded without a gap: every
    /// change up to it is in the set (where a walk begins).
    pub fn changes_applied(&self, board: &str) -> String {
        format!("{}:changes-applied:{board}", self.tag)
    }

    /// The change numbers recorded before an earlier one (instances record
    /// after their commits, in either order).
    pub fn changes_ahead(&self, board: &str) -> String {
        format!("{}:changes-ahead:{board}", self.tag)
    }

    /// Present while the sets are complete (a flushed Redis lacks it).
    pub fn ready(&self) -> String {
        format!("{}:ready", self.tag)
    }

    /// The change log replayed after a rebuild, and its sequence counter.
    pub fn changes(&self) -> String {
        format!("{}:changes", self.tag)
    }

    /// Present while a rebuild of the group may be reading the database:
    /// only then are changes logged (see `RedisSource::begin_rebuild`).
    pub fn rebuilding(&self) -> String {
        format!("{}:rebuilding", self.tag)
    }

    pub fn sequence(&self) -> String {
        format!("{}:seq", self.tag)
    }

    /// A token set by every rebuild: with the sequence it names one state
    /// of the group's sets, even across a flush (which resets the sequence).
    pub fn epoch(&self) -> String {
        format!("{}:epoch", self.tag)
    }

    /// Held by the one instance that rebuilds.
    pub fn rebuild_lock(&self) -> String {
        format!("{}:rebuild-lock", self.tag)
    }

    /// A key being built by the rebuild holding `token`, swapped in at the end.
    pub fn building(&self, token: &str, key: &str) -> String {
        format!("{key}:build:{token}")
    }

    /// Every key of the group (to forget a deleted board).
    pub fn pattern(&self) -> String {
        format!("{}:*", self.tag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_carries_the_prefix_and_a_group_shares_one_hash_tag() {
        let keys = Keys::new("hs");
        assert_eq!(keys.session("abc"), "hs:session:abc");
        let group = keys.builtin_boards();
        let tag = |key: &str| key[key.find('{').unwrap()..=key.find('}').unwrap()].to_owned();
        let all = [
            group.set("best"),
            group.entries("total"),
            group.change_numbers("best"),
            group.changes_applied("best"),
            group.changes_ahead("best"),
            group.ready(),
            group.changes(),
            group.sequence(),
            group.rebuild_lock(),
            group.building("t", &group.set("best")),
        ];
        assert!(all.iter().all(|key| key.starts_with("hs:") && tag(key) == "{builtin}"), "{all:?}");
        let board = keys.custom_board(7);
        assert_eq!(tag(&board.set("3")), "{b:7}");
        assert!(board.set("3").starts_with(&board.pattern().replace('*', "")));
    }
}

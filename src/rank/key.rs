//! Entry keys packed so that their order *is* board order, for every board:
//! 288 bits of (score in the board's direction: 64, each subscore in its
//! own: 64 and 64, time: 48, id: 48), held as nine u32 words compared in
//! turn (integer compares). A board without subscores keeps their words at
//! 0, and its sets hold the five words that vary (see `rank::local`).
//! Redis holds the same bits as hex digits, the subscores' only on boards
//! that have them (40, 56 or 72 digits), whose lexicographic order is the
//! same, so both engines order entries exactly as the contract does
//! without running a comparator.

use crate::domain::{BoardKey, Order, Ranking, MAX_SUBSCORES};

/// Scores are shifted by this before packing, so that negative scores
/// (ascending boards may allow them) and both directions fit in a u64.
const SCORE_OFFSET: i64 = 1 << 62;
/// Time and id get 48 bits each (ms until the year 10889, 2.8e14 ids).
const FIELD_48: u64 = (1 << 48) - 1;
/// Hex digits of one 64-bit field.
const FIELD_DIGITS: usize = 16;
/// Hex digits of the time and id.
const TAIL_DIGITS: usize = 24;
/// Words of the score and the subscores (two each), before the tail.
const RANKED_WORDS: usize = 2 * (1 + MAX_SUBSCORES);

/// A packed entry key (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Packed([u32; RANKED_WORDS + 3]);

/// A value as a number that grows towards the bottom of the board.
fn rank_value(order: Order, value: i64) -> u64 {
    let value = value.clamp(-SCORE_OFFSET + 1, SCORE_OFFSET - 1);
    match order {
        Order::Desc => (SCORE_OFFSET - value) as u64,
        Order::Asc => (SCORE_OFFSET + value) as u64,
    }
}

fn value_of(order: Order, rank_value: u64) -> i64 {
    match order {
        Order::Desc => SCORE_OFFSET - rank_value as i64,
        Order::Asc => rank_value as i64 - SCORE_OFFSET,
    }
}

impl Packed {
    /// The key of an entry on a board ordered by `ranking`.
    pub fn of(ranking: Ranking, key: BoardKey) -> Self {
        let mut words = [0u32; RANKED_WORDS + 3];
        let ranked =
            std::iter::once((ranking.score, key.score)).chain(ranking.subscores().iter().copied().zip(key.subscores));
        for (field, (order, value)) in ranked.enumerate() {
            let value = rank_value(order, value);
            words[2 * field] = (value >> 32) as u32;
            words[2 * field + 1] = value as u32;
        }
        let at = key.at.max(0) as u64 & FIELD_48;
        let id = key.id.max(0) as u64 & FIELD_48;
        // The 96 bits of time and id, as three words.
        let tail = (u128::from(at) << 48) | u128::from(id);
        words[RANKED_WORDS..].copy_from_slice(&[(tail >> 64) as u32, (tail >> 32) as u32, tail as u32]);
        Self(words)
    }

    /// The smallest key with this one's score and subscores: its position
    /// is the number of entries strictly better (the key's competition
    /// rank − 1).
    pub fn floor(self) -> Self {
        let mut words = self.0;
        words[RANKED_WORDS..].fill(0);
        Self(words)
    }

    /// The smallest key after `self` (for "strictly after this key").
    pub fn successor(self) -> Self {
        let mut words = self.0;
        for word in words.iter_mut().rev() {
            let (next, overflow) = word.overflowing_add(1);
            *word = next;
            if !overflow {
                break;
            }
        }
        Self(words)
    }

    pub fn unpack(self, ranking: Ranking) -> BoardKey {
        let field = |index: usize| (u64::from(self.0[2 * index]) << 32) | u64::from(self.0[2 * index + 1]);
        let [t1, t2, t3] = [0, 1, 2].map(|i| u128::from(self.0[RANKED_WORDS + i]));
        let tail = (t1 << 64) | (t2 << 32) | t3;
        let mut key = BoardKey::of(
            value_of(ranking.score, field(0)),
            (tail >> 48) as i64 & FIELD_48 as i64,
            tail as i64 & FIELD_48 as i64,
        );
        for (index, order) in ranking.subscores().iter().enumerate() {
            key.subscores[index] = value_of(*order, field(1 + index));
        }
        key
    }

    /// The words a board without subscores varies in (the rest are 0).
    pub fn narrow(self) -> [u32; 5] {
        let w = self.0;
        [w[0], w[1], w[RANKED_WORDS], w[RANKED_WORDS + 1], w[RANKED_WORDS + 2]]
    }

    /// The key of a board without subscores from its [`Self::narrow`] words.
    pub fn widen(narrow: [u32; 5]) -> Self {
        let mut words = [0u32; RANKED_WORDS + 3];
        words[..2].copy_from_slice(&narrow[..2]);
        words[RANKED_WORDS..].copy_from_slice(&narrow[2..]);
        Self(words)
    }

    /// The Redis member: the hex digits of the score, of the board's
    /// subscores, and of the time and id, whose lexicographic order is the
    /// key order on the board.
    pub fn member(self, ranking: Ranking) -> String {
        let fields = 1 + ranking.subscores().len();
        let mut member = String::with_capacity(member_digits(ranking));
        for word in self.0[..2 * fields].iter().chain(&self.0[RANKED_WORDS..]) {
            member.push_str(&format!("{word:08x}"));
        }
        member
    }

    pub fn from_member(ranking: Ranking, member: &str) -> Option<Self> {
        if member.len() != member_digits(ranking) || !member.is_ascii() {
            return None;
        }
        let word = |at: usize| u32::from_str_radix(&member[at..at + 8], 16).ok();
        let mut words = [0u32; RANKED_WORDS + 3];
        let ranked = 2 * (1 + ranking.subscores().len());
        let slots = (0..ranked).chain(RANKED_WORDS..RANKED_WORDS + 3);
        for (index, slot) in slots.enumerate() {
            words[slot] = word(8 * index)?;
        }
        Some(Self(words))
    }
}

/// The Redis member of `key` on a board ordered by `ranking`.
pub fn member_of(ranking: Ranking, key: BoardKey) -> String {
    Packed::of(ranking, key).member(ranking)
}

/// The length of a member on a board ordered by `ranking`.
fn member_digits(ranking: Ranking) -> usize {
    member_ranked_digits(ranking) + TAIL_DIGITS
}

/// Hex digits at the front of a member that hold the score and subscores
/// (the rest is the tie-break): the floor of a member keeps these and
/// zeroes the rest, and members equal in these share a rank.
pub fn member_ranked_digits(ranking: Ranking) -> usize {
    FIELD_DIGITS * (1 + ranking.subscores().len())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DESC: Ranking = Ranking::by_score(Order::Desc);
    const ASC: Ranking = Ranking::by_score(Order::Asc);

    #[test]
    fn keys_round_trip_and_sort_in_board_order() {
        let keys = [
            BoardKey::of(1_000_000_000, 5, 9),
            BoardKey::of(7, 1_790_000_000_000, 2),
            BoardKey::of(7, 1_790_000_000_000, 3),
            BoardKey::of(7, 1_790_000_000_001, 1),
            BoardKey::of(0, 0, 1),
            BoardKey::of(-5, 0, 1),
        ];
        for key in keys {
            for ranking in [DESC, ASC] {
                let packed = Packed::of(ranking, key);
                assert_eq!(packed.unpack(ranking), key);
                assert_eq!(Packed::from_member(ranking, &packed.member(ranking)), Some(packed));
                assert_eq!(Packed::widen(packed.narrow()), packed);
            }
        }
        assert!(keys.windows(2).all(|w| Packed::of(DESC, w[0]) < Packed::of(DESC, w[1])));
        // Ascending: lower scores first, ties still by time then id.
        let asc: Vec<Packed> = keys.iter().rev().map(|k| Packed::of(ASC, *k)).collect();
        assert!(asc[0] < asc[1] && asc[1] < asc[2]);
        assert!(Packed::of(ASC, keys[2]) < Packed::of(ASC, keys[3]));
        // Members sort like keys.
        let members: Vec<String> = keys.iter().map(|k| Packed::of(DESC, *k).member(DESC)).collect();
        assert!(members.windows(2).all(|w| w[0] < w[1]));
        assert!(members.iter().all(|m| m.len() == 40));
    }

    /// Subscores order ties of the score, each in its own order, before
    /// time and id; a key's floor is below every key tied with it and
    /// above every better one.
    #[test]
    fn subscores_break_ties_of_the_score_each_in_its_order() {
        let ranking = Ranking::with_subscores(Order::Desc, &[Order::Asc, Order::Desc]);
        let key = |score, first, second, at, id| BoardKey { subscores: [first, second], ..BoardKey::of(score, at, id) };
        let max = (1 << 53) - 1;
        let keys = [
            key(9, max, 0, 0, 1),
            key(5, 0, max, 9, 9),
            key(5, 0, 3, 1, 2),
            key(5, 0, 3, 1, 3),
            key(5, 0, 3, 2, 1),
            key(5, 1, max, 0, 1),
            key(5, max, 0, 0, 0),
            key(4, 0, max, 0, 0),
        ];
        let packed: Vec<Packed> = keys.iter().map(|k| Packed::of(ranking, *k)).collect();
        assert!(packed.windows(2).all(|w| w[0] < w[1]));
        let members: Vec<String> = packed.iter().map(|p| p.member(ranking)).collect();
        assert!(members.windows(2).all(|w| w[0] < w[1]));
        assert!(members.iter().all(|m| m.len() == 72 && m.len() == member_ranked_digits(ranking) + 24));
        for (key, packed) in keys.iter().zip(&packed) {
            assert_eq!(packed.unpack(ranking), *key);
            assert_eq!(Packed::from_member(ranking, &packed.member(ranking)), Some(*packed));
        }
        let floor = packed[3].floor();
        assert!(floor <= packed[2] && floor > packed[1] && packed[4] > floor);
        assert_eq!(floor.member(ranking)[..48], members[2][..48]);
        let one = Ranking::with_subscores(Order::Asc, &[Order::Asc]);
        assert_eq!(Packed::of(one, keys[0]).member(one).len(), 56);
        assert_eq!(Packed::from_member(one, &members[0]), None, "another board's member");
    }

    #[test]
    fn floor_is_below_every_key_with_that_score_and_above_better_ones() {
        for ranking in [DESC, ASC] {
            let floor = Packed::of(ranking, BoardKey::of(40, 7, 7)).floor();
            assert!(floor <= Packed::of(ranking, BoardKey::of(40, 0, 0)));
            assert!(floor < Packed::of(ranking, BoardKey::of(40, 3, 1)));
            let better = if ranking.score == Order::Desc { 41 } else { 39 };
            assert!(Packed::of(ranking, BoardKey::of(better, i64::MAX, i64::MAX)) < floor);
        }
        let key = Packed::of(DESC, BoardKey::of(1, 2, 0xff));
        assert_eq!(key.successor().unpack(DESC), BoardKey::of(1, 2, 0x100));
    }
}

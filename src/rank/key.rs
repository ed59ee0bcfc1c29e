//! Entry keys packed so that their order *is* board order, for every board:
//! 160 bits of (score in the board's direction: 64, time: 48, id: 48),
//! held as five u32 words compared in turn (integer compares, 20 bytes).
//! Redis holds the same bits as 40 hex digits, whose lexicographic order is
//! the same, so both engines order entries exactly as the contract does
//! without running a comparator.

use crate::domain::{BoardKey, Order};

/// Scores are shifted by this before packing, so that negative scores
/// (ascending boards may allow them) and both directions fit in a u64.
const SCORE_OFFSET: i64 = 1 << 62;
/// Time and id get 48 bits each (ms until the year 10889, 2.8e14 ids).
const FIELD_48: u64 = (1 << 48) - 1;
const SCORE_BYTES: usize = 8;

/// A packed entry key (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Packed([u32; 5]);

/// The score as a number that grows towards the bottom of the board.
fn rank_score(order: Order, score: i64) -> u64 {
    let score = score.clamp(-SCORE_OFFSET + 1, SCORE_OFFSET - 1);
    match order {
        Order::Desc => (SCORE_OFFSET - score) as u64,
        Order::Asc => (SCORE_OFFSET + score) as u64,
    }
}

fn score_of(order: Order, rank_score: u64) -> i64 {
    match order {
        Order::Desc => SCORE_OFFSET - rank_score as i64,
        Order::Asc => rank_score as i64 - SCORE_OFFSET,
    }
}

fn packed(rank_score: u64, at: i64, id: i64) -> Packed {
    let at = at.max(0) as u64 & FIELD_48;
    let id = id.max(0) as u64 & FIELD_48;
    // The 96 bits of time and id, as three words.
    let tail = (u128::from(at) << 48) | u128::from(id);
    Packed([(rank_score >> 32) as u32, rank_score as u32, (tail >> 64) as u32, (tail >> 32) as u32, tail as u32])
}

impl Packed {
    /// The key of an entry on a board of this order.
    pub fn of(order: Order, key: BoardKey) -> Self {
        packed(rank_score(order, key.score), key.at, key.id)
    }

    /// The smallest key with `score`: its position is the number of entries
    /// with a strictly better score (the score's competition rank − 1).
    pub fn floor(order: Order, score: i64) -> Self {
        packed(rank_score(order, score), 0, 0)
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

    pub fn unpack(self, order: Order) -> BoardKey {
        let [s1, s2, t1, t2, t3] = self.0.map(u64::from);
        let tail = (u128::from(t1) << 64) | (u128::from(t2) << 32) | u128::from(t3);
        BoardKey {
            score: score_of(order, (s1 << 32) | s2),
            at: (tail >> 48) as i64 & FIELD_48 as i64,
            id: tail as i64 & FIELD_48 as i64,
        }
    }

    /// The Redis member: 40 hex digits, whose lexicographic order is the
    /// key order.
    pub fn member(self) -> String {
        let [a, b, c, d, e] = self.0;
        format!("{a:08x}{b:08x}{c:08x}{d:08x}{e:08x}")
    }

    pub fn from_member(member: &str) -> Option<Self> {
        if member.len() != 40 || !member.is_ascii() {
            return None;
        }
        let mut words = [0u32; 5];
        for (i, word) in words.iter_mut().enumerate() {
            *word = u32::from_str_radix(&member[8 * i..8 * i + 8], 16).ok()?;
        }
        Some(Self(words))
    }
}

/// Hex digits at the front of a member that hold the score (the rest is
/// the tie-break): the floor of a member's score keeps these and zeroes the rest.
pub const MEMBER_SCORE_DIGITS: usize = 2 * SCORE_BYTES;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_sort_in_board_order() {
        let keys = [
            BoardKey { score: 1_000_000_000, at: 5, id: 9 },
            BoardKey { score: 7, at: 1_790_000_000_000, id: 2 },
            BoardKey { score: 7, at: 1_790_000_000_000, id: 3 },
            BoardKey { score: 7, at: 1_790_000_000_001, id: 1 },
            BoardKey { score: 0, at: 0, id: 1 },
            BoardKey { score: -5, at: 0, id: 1 },
        ];
        for key in keys {
            for order in [Order::Desc, Order::Asc] {
                let packed = Packed::of(order, key);
                assert_eq!(packed.unpack(order), key);
                assert_eq!(Packed::from_member(&packed.member()), Some(packed));
            }
        }
        assert!(keys.windows(2).all(|w| Packed::of(Order::Desc, w[0]) < Packed::of(Order::Desc, w[1])));
        // Ascending: lower scores first, ties still by time then id.
        let asc: Vec<Packed> = keys.iter().rev().map(|k| Packed::of(Order::Asc, *k)).collect();
        assert!(asc[0] < asc[1] && asc[1] < asc[2]);
        assert!(Packed::of(Order::Asc, keys[2]) < Packed::of(Order::Asc, keys[3]));
        // Members sort like keys.
        let members: Vec<String> = keys.iter().map(|k| Packed::of(Order::Desc, *k).member()).collect();
        assert!(members.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn floor_is_below_every_key_with_that_score_and_above_better_ones() {
        for order in [Order::Desc, Order::Asc] {
            let floor = Packed::floor(order, 40);
            assert!(floor <= Packed::of(order, BoardKey { score: 40, at: 0, id: 0 }));
            assert!(floor < Packed::of(order, BoardKey { score: 40, at: 3, id: 1 }));
            let better = if order == Order::Desc { 41 } else { 39 };
            assert!(Packed::of(order, BoardKey { score: better, at: i64::MAX, id: i64::MAX }) < floor);
        }
        let key = Packed::of(Order::Desc, BoardKey { score: 1, at: 2, id: 0xff });
        assert_eq!(key.successor().unpack(Order::Desc), BoardKey { score: 1, at: 2, id: 0x100 });
    }
}

//! Reward bands (v4): what a board or a league pays its players when a
//! period closes. A band matches a range of competition ranks or a
//! `top_percent`; the first band that matches an entry is its reward, so
//! a player gets at most one per period and tied entries share a fate.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use super::Hundredths;
use crate::error::{ApiError, ErrorCode};

/// Which entries a band matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BandMatch {
    /// Ranks `a..=b`.
    Ranks(i64, i64),
    /// Entries whose `top_percent` is at most this.
    TopPercent(Hundredths),
}

/// One band: which entries, and the reward (a JSON object hiscore stores
/// and never interprets), kept as its compact JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewardBand {
    pub matches: BandMatch,
    pub reward: String,
}

/// A board's or league's bands, in the order they are tried.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rewards(Vec<RewardBand>);

impl Rewards {
    pub const MAX_BANDS: usize = 20;
    pub const MAX_RANK: i64 = 10_000;
    /// The most bytes a reward's JSON text may have.
    pub const MAX_REWARD_BYTES: usize = 1_024;
    /// The most rewards one close grants (bands in order until then).
    pub const MAX_GRANTS: usize = 100_000;

    pub fn new(bands: Vec<RewardBand>) -> Self {
        Self(bands)
    }

    /// The bands of a request body's `rewards` (null: none).
    pub fn parse(raw: Option<&Value>) -> Result<Self, ApiError> {
        let invalid = |why: &str| ApiError::with_message(ErrorCode::InvalidRewards, why.to_owned());
        let bands = match raw {
            None | Some(Value::Null) => return Ok(Self::default()),
            Some(Value::Array(bands)) => bands,
            Some(_) => return Err(invalid("rewards must be a list of bands")),
        };
        if bands.len() > Self::MAX_BANDS {
            return Err(invalid("a board has at most 20 reward bands"));
        }
        bands.iter().map(|band| Self::band(band).map_err(invalid)).collect::<Result<Vec<_>, _>>().map(Self)
    }

    fn band(raw: &Value) -> Result<RewardBand, &'static str> {
        const SHAPE: &str = "a band is {\"ranks\": [a, b]} or {\"top_percent\": p}, with a \"reward\" object";
        let band = raw.as_object().ok_or(SHAPE)?;
        if band.keys().any(|key| !matches!(key.as_str(), "ranks" | "top_percent" | "reward")) {
            return Err(SHAPE);
        }
        let matches = match (band.get("ranks"), band.get("top_percent")) {
            (Some(ranks), None) => {
                let pair = ranks.as_array().filter(|pair| pair.len() == 2).ok_or(SHAPE)?;
                let rank = |value: &Value| value.as_i64().filter(|rank| (1..=Self::MAX_RANK).contains(rank));
                match (rank(&pair[0]), rank(&pair[1])) {
                    (Some(a), Some(b)) if a <= b => BandMatch::Ranks(a, b),
                    _ => return Err("ranks are [a, b] with 1 <= a <= b <= 10000"),
                }
            }
            (None, Some(Value::Number(percent))) => BandMatch::TopPercent(
                Hundredths::parse_percent(&percent.to_string())
                    .ok_or("top_percent is above 0 and at most 100, with at most two decimals")?,
            ),
            _ => return Err(SHAPE),
        };
        let reward = band.get("reward").and_then(Value::as_object).ok_or(SHAPE)?;
        let reward = Value::Object(reward.clone()).to_string();
        if reward.len() > Self::MAX_REWARD_BYTES {
            return Err("a reward's JSON text is at most 1 KiB");
        }
        Ok(RewardBand { matches, reward })
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn bands(&self) -> &[RewardBand] {
        &self.0
    }

    /// The index of the first band an entry of `rank` among `players`
    /// matches, if any.
    pub fn band_of(&self, rank: i64, players: i64) -> Option<usize> {
        let top = Hundredths::top(rank, players);
        self.0.iter().position(|band| match band.matches {
            BandMatch::Ranks(a, b) => (a..=b).contains(&rank),
            BandMatch::TopPercent(percent) => top <= percent,
        })
    }

    /// The worst rank any band can match among `players`: no entry ranked
    /// below it is rewarded, so a close reads no further.
    pub fn last_rank(&self, players: i64) -> i64 {
        self.last_rank_of(self.0.len(), players)
    }

    /// The worst rank that can still change a close's grants, once the
    /// grants so far (read in board order) number `granted[i]` for band
    /// `i`. Grants are kept bands in order, each in board order, up to
    /// [`Self::MAX_GRANTS`]: when bands `0..=k` already fill it, a later
    /// entry of band `k` or after is cut off, so only bands before `k`
    /// can still change anything. A close of a large board whose first
    /// band is `top_percent: 100` reads 100,000 entries, not all of them.
    pub fn last_rank_to_read(&self, granted: &[usize], players: i64) -> i64 {
        let mut total = 0;
        for (band, count) in granted.iter().enumerate() {
            total += count;
            if total >= Self::MAX_GRANTS {
                return self.last_rank_of(band, players);
            }
        }
        self.last_rank(players)
    }

    /// The worst rank the first `bands` bands can match among `players`.
    fn last_rank_of(&self, bands: usize, players: i64) -> i64 {
        self.0
            .iter()
            .take(bands)
            .map(|band| match band.matches {
                BandMatch::Ranks(_, b) => b,
                // `top(r) <= p` holds up to r = floor(players × p): the
                // cut-off position, which no matching rank exceeds.
                BandMatch::TopPercent(percent) => percent.position_in(players),
            })
            .max()
            .unwrap_or(0)
            .min(players)
    }
}

impl Serialize for RewardBand {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        match self.matches {
            BandMatch::Ranks(a, b) => map.serialize_entry("ranks", &[a, b])?,
            BandMatch::TopPercent(percent) => map.serialize_entry("top_percent", &percent)?,
        }
        let reward: Map<String, Value> = serde_json::from_str(&self.reward).unwrap_or_default();
        map.serialize_entry("reward", &reward)?;
        map.end()
    }
}

impl utoipa::PartialSchema for RewardBand {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{AdditionalProperties, ArrayBuilder, ObjectBuilder, OneOfBuilder, Type};
        let reward = || {
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .description(Some("A JSON object of at most 1 KiB, stored and never interpreted"))
                .examples([serde_json::json!({"gems": 100})])
        };
        let rank = ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(1)).maximum(Some(Rewards::MAX_RANK));
        let by_ranks = ObjectBuilder::new()
            .property(
                "ranks",
                ArrayBuilder::new()
                    .items(rank)
                    .min_items(Some(2))
                    .max_items(Some(2))
                    .description(Some("Ranks [a, b], 1 <= a <= b <= 10000: an entry whose rank r has a <= r <= b")),
            )
            .property("reward", reward())
            .required("ranks")
            .required("reward")
            .additional_properties(Some(AdditionalProperties::FreeForm(false)));
        let by_percent = ObjectBuilder::new()
            .property(
                "top_percent",
                ObjectBuilder::new()
                    .schema_type(Type::Number)
                    .exclusive_minimum(Some(0))
                    .maximum(Some(100))
                    .multiple_of(Some(0.01))
                    .description(Some("An entry whose `top_percent` is at most this (two decimals at most)")),
            )
            .property("reward", reward())
            .required("top_percent")
            .required("reward")
            .additional_properties(Some(AdditionalProperties::FreeForm(false)));
        OneOfBuilder::new()
            .item(by_ranks)
            .item(by_percent)
            .description(Some(
                "A reward band (v4): exactly one of `ranks` or `top_percent`, and the `reward`. The first band an \
                 entry matches is its reward; tied entries share a fate.",
            ))
            .into()
    }
}

impl utoipa::ToSchema for RewardBand {}

impl Serialize for Rewards {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rewards(raw: Value) -> Result<Rewards, ErrorCode> {
        Rewards::parse(Some(&raw)).map_err(|error| error.code())
    }

    #[test]
    fn bands_are_validated() {
        let fine = rewards(json!([
            {"ranks": [1, 1], "reward": {"gems": 100}},
            {"ranks": [2, 10000], "reward": {}},
            {"top_percent": 2.5, "reward": {"badge": "silver"}},
            {"top_percent": 100, "reward": {}}
        ]))
        .unwrap();
        assert_eq!(fine.bands().len(), 4);
        assert_eq!(Rewards::parse(Some(&serde_json::to_value(&fine).unwrap())).unwrap(), fine, "round trip");
        assert!(rewards(json!(null)).unwrap().is_empty());
        let refused = [
            json!({}),
            json!([{"ranks": [0, 1], "reward": {}}]),
            json!([{"ranks": [3, 2], "reward": {}}]),
            json!([{"ranks": [1, 10001], "reward": {}}]),
            json!([{"ranks": [1], "reward": {}}]),
            json!([{"ranks": [1, 2], "top_percent": 5, "reward": {}}]),
            json!([{"top_percent": 0, "reward": {}}]),
            json!([{"top_percent": 100.01, "reward": {}}]),
            json!([{"top_percent": 1.234, "reward": {}}]),
            json!([{"top_percent": "5", "reward": {}}]),
            json!([{"ranks": [1, 2]}]),
            json!([{"ranks": [1, 2], "reward": [1]}]),
            json!([{"ranks": [1, 2], "reward": {}, "extra": 1}]),
            json!([{"ranks": [1, 2], "reward": {"x": "y".repeat(1_020)}}]),
            Value::Array(vec![json!({"ranks": [1, 1], "reward": {}}); 21]),
        ];
        for raw in refused {
            assert_eq!(rewards(raw.clone()), Err(ErrorCode::InvalidRewards), "{raw}");
        }
    }

    #[test]
    fn the_first_matching_band_wins_and_ties_share_it() {
        let bands = rewards(json!([
            {"ranks": [1, 3], "reward": {"a": 1}},
            {"top_percent": 50, "reward": {"b": 1}},
            {"ranks": [9, 9], "reward": {"c": 1}}
        ]))
        .unwrap();
        // Ranks 1, 2, 3, 3, 3, 6, 7, 8, 9, 10 of 10 players.
        let fates: Vec<_> = [1, 2, 3, 3, 3, 6, 7, 8, 9, 10].iter().map(|rank| bands.band_of(*rank, 10)).collect();
        assert_eq!(fates, [Some(0), Some(0), Some(0), Some(0), Some(0), None, None, None, Some(2), None]);
        // 5 of 10 is exactly 50 %.
        assert_eq!(bands.band_of(5, 10), Some(1));
        assert_eq!(bands.last_rank(10), 9);
        assert_eq!(bands.last_rank(2), 2, "never beyond the players");
        // Once the first bands fill the grants, only their ranks matter.
        let wide = rewards(json!([
            {"ranks": [1, 10], "reward": {}},
            {"top_percent": 100, "reward": {}},
            {"ranks": [5_000, 9_000], "reward": {}}
        ]))
        .unwrap();
        let players = 1_000_000;
        assert_eq!(wide.last_rank_to_read(&[10, 5_000, 0], players), players);
        assert_eq!(wide.last_rank_to_read(&[10, Rewards::MAX_GRANTS - 10, 0], players), 10);
        assert_eq!(wide.last_rank_to_read(&[10, Rewards::MAX_GRANTS - 10], players), 10);
        let first_fills =
            rewards(json!([{"top_percent": 50, "reward": {}}, {"ranks": [1, 10_000], "reward": {}}])).unwrap();
        assert_eq!(first_fills.last_rank_to_read(&[0, 0], players), 500_000);
        assert_eq!(first_fills.last_rank_to_read(&[Rewards::MAX_GRANTS, 0], players), 0);
        let ranks_first =
            rewards(json!([{"ranks": [1, 10_000], "reward": {}}, {"top_percent": 100, "reward": {}}])).unwrap();
        assert_eq!(ranks_first.last_rank_to_read(&[9_000, 50_000], players), players);
        assert_eq!(ranks_first.last_rank_to_read(&[10_000, Rewards::MAX_GRANTS - 10_000], players), 10_000);
        let percent_first =
            rewards(json!([{"top_percent": 100, "reward": {}}, {"ranks": [1, 10_000], "reward": {}}])).unwrap();
        assert_eq!(percent_first.last_rank_to_read(&[99_999, 0], players), players);
        assert_eq!(percent_first.last_rank_to_read(&[Rewards::MAX_GRANTS, 0], players), 0);
        // A band's last rank agrees with `top_percent` for every population.
        let percent = rewards(json!([{"top_percent": 3, "reward": {}}])).unwrap();
        for players in 1..400 {
            let last = percent.last_rank(players);
            assert!(last == 0 || percent.band_of(last, players).is_some(), "{players}");
            assert_eq!(percent.band_of(last + 1, players), None, "{players}");
        }
    }
}

//! Partitions (v4 `partition_by`): boards inside a board, one per value
//! of a metadata field, each with its own entries and ranks.

use std::collections::BTreeSet;

use serde_json::Value;

use super::board::Metadata;
use crate::error::{ApiError, ErrorCode};

/// Partitions one period of a board opens at most, by default and at most.
pub const DEFAULT_MAX_PARTITIONS: i64 = 1_000;
pub const MAX_MAX_PARTITIONS: i64 = 10_000;

/// A partition's value: 1..=32 characters of `[A-Za-z0-9_-]`, compared
/// byte for byte (case-sensitive).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PartitionValue(String);

impl PartitionValue {
    pub fn parse_str(text: &str) -> Option<Self> {
        let allowed = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
        ((1..=32).contains(&text.len()) && text.bytes().all(allowed)).then(|| Self(text.to_owned()))
    }

    /// A read's `partition=`: 422 `invalid_partition` when malformed.
    pub fn parse_query(raw: Option<&str>) -> Result<Option<Self>, ApiError> {
        raw.map(|text| Self::parse_str(text).ok_or_else(|| ApiError::new(ErrorCode::InvalidPartition))).transpose()
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// How a board splits into partitions, as set at creation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partitioning {
    /// The metadata field whose value names a post's partition: 1..=64
    /// characters of `[A-Za-z0-9_]`.
    pub field: String,
    /// Partitions one period opens at most.
    pub max_partitions: i64,
    /// The only values taken, when set.
    pub values: Option<BTreeSet<PartitionValue>>,
}

impl Partitioning {
    /// A definition's `partition_by`, `max_partitions` and
    /// `partition_values`: `None` without `partition_by` (the other two
    /// must then be absent or null).
    pub fn parse(
        partition_by: Option<&Value>,
        max_partitions: Option<&Value>,
        values: Option<&Value>,
    ) -> Result<Option<Self>, ApiError> {
        let absent = |raw: Option<&Value>| raw.is_none_or(Value::is_null);
        let field = match partition_by {
            None | Some(Value::Null) => {
                if !absent(max_partitions) {
                    return Err(ErrorCode::InvalidMaxPartitions.into());
                }
                if !absent(values) {
                    return Err(ErrorCode::InvalidPartitionValues.into());
                }
                return Ok(None);
            }
            Some(Value::String(field))
                if (1..=64).contains(&field.len()) && field.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
            {
                field.clone()
            }
            Some(_) => return Err(ErrorCode::InvalidPartitionBy.into()),
        };
        let max_partitions = match max_partitions {
            None | Some(Value::Null) => DEFAULT_MAX_PARTITIONS,
            Some(value) => value
                .as_i64()
                .filter(|n| (1..=MAX_MAX_PARTITIONS).contains(n))
                .ok_or(ErrorCode::InvalidMaxPartitions)?,
        };
        let values = match values {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) if items.len() as i64 <= max_partitions => {
                let mut set = BTreeSet::new();
                for item in items {
                    let value = item.as_str().and_then(PartitionValue::parse_str);
                    if !value.is_some_and(|value| set.insert(value)) {
                        return Err(ErrorCode::InvalidPartitionValues.into());
                    }
                }
                Some(set)
            }
            Some(_) => return Err(ErrorCode::InvalidPartitionValues.into()),
        };
        Ok(Some(Self { field, max_partitions, values }))
    }

    /// The partition a post with this metadata lands on: none without the
    /// field (or with it null), 422 `invalid_partition` for another type,
    /// a malformed value or one outside `values`.
    pub fn partition_of(&self, metadata: Option<&Metadata>) -> Result<Option<PartitionValue>, ErrorCode> {
        let Some(metadata) = metadata else { return Ok(None) };
        let object: serde_json::Map<String, Value> =
            serde_json::from_str(metadata.as_str()).map_err(|_| ErrorCode::InvalidPartition)?;
        let value = match object.get(&self.field) {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::String(text)) => PartitionValue::parse_str(text).ok_or(ErrorCode::InvalidPartition)?,
            Some(_) => return Err(ErrorCode::InvalidPartition),
        };
        match &self.values {
            Some(allowed) if !allowed.contains(&value) => Err(ErrorCode::InvalidPartition),
            _ => Ok(Some(value)),
        }
    }

    /// The values as stored: a JSON list, or NULL.
    pub fn values_json(&self) -> Option<String> {
        let values = self.values.as_ref()?;
        Some(Value::from(values.iter().map(|value| value.as_str()).collect::<Vec<_>>()).to_string())
    }

    /// From the stored columns; `None` when `values` is not a list of values.
    pub fn from_stored(field: String, max_partitions: i64, values: Option<&str>) -> Option<Self> {
        let values = match values {
            None => None,
            Some(text) => {
                let list: Vec<String> = serde_json::from_str(text).ok()?;
                Some(list.iter().map(|value| PartitionValue::parse_str(value)).collect::<Option<BTreeSet<_>>>()?)
            }
        };
        Some(Self { field, max_partitions, values })
    }
}

/// Where a partition belongs: its board's number and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionOf {
    pub board: i64,
    pub value: PartitionValue,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn metadata(value: Value) -> Metadata {
        Metadata::parse(Some(&value)).unwrap().unwrap()
    }

    #[test]
    fn a_definition_is_checked_field_by_field() {
        let code = |by: Value, max: Value, values: Value| {
            Partitioning::parse(Some(&by), Some(&max), Some(&values)).err().map(|e| e.code().as_str())
        };
        assert_eq!(code(json!("country"), json!(null), json!(null)), None);
        assert_eq!(code(json!(""), json!(null), json!(null)), Some("invalid_partition_by"));
        assert_eq!(code(json!("a-b"), json!(null), json!(null)), Some("invalid_partition_by"));
        assert_eq!(code(json!("a".repeat(65)), json!(null), json!(null)), Some("invalid_partition_by"));
        assert_eq!(code(json!(7), json!(null), json!(null)), Some("invalid_partition_by"));
        assert_eq!(code(json!("c"), json!(0), json!(null)), Some("invalid_max_partitions"));
        assert_eq!(code(json!("c"), json!(10_001), json!(null)), Some("invalid_max_partitions"));
        assert_eq!(code(json!("c"), json!(1.5), json!(null)), Some("invalid_max_partitions"));
        assert_eq!(code(json!(null), json!(5), json!(null)), Some("invalid_max_partitions"));
        assert_eq!(code(json!(null), json!(null), json!(["a"])), Some("invalid_partition_values"));
        assert_eq!(code(json!("c"), json!(1), json!(["a", "b"])), Some("invalid_partition_values"));
        assert_eq!(code(json!("c"), json!(null), json!(["a", "a"])), Some("invalid_partition_values"));
        assert_eq!(code(json!("c"), json!(null), json!(["a b"])), Some("invalid_partition_values"));
        assert_eq!(code(json!("c"), json!(null), json!("a")), Some("invalid_partition_values"));
        let rule = Partitioning::parse(Some(&json!("c")), None, None).unwrap().unwrap();
        assert_eq!(rule.max_partitions, DEFAULT_MAX_PARTITIONS);
    }

    #[test]
    fn a_post_lands_on_the_partition_its_metadata_names() {
        let rule =
            Partitioning::parse(Some(&json!("country")), None, Some(&json!(["DE", "fr", "x_y-1"]))).unwrap().unwrap();
        let of = |value: Value| rule.partition_of(Some(&metadata(value))).map(|p| p.map(|p| p.as_str().to_owned()));
        assert_eq!(of(json!({"country": "DE"})), Ok(Some("DE".to_owned())));
        assert_eq!(of(json!({"country": "x_y-1", "x": 1})), Ok(Some("x_y-1".to_owned())));
        assert_eq!(of(json!({"country": null})), Ok(None));
        assert_eq!(of(json!({"other": "DE"})), Ok(None));
        assert_eq!(rule.partition_of(None), Ok(None));
        assert_eq!(of(json!({"country": "de"})), Err(ErrorCode::InvalidPartition), "case-sensitive");
        assert_eq!(of(json!({"country": 49})), Err(ErrorCode::InvalidPartition));
        assert_eq!(of(json!({"country": ""})), Err(ErrorCode::InvalidPartition));
        let open = Partitioning::parse(Some(&json!("country")), None, None).unwrap().unwrap();
        let long = json!({"country": "a".repeat(33)});
        assert_eq!(open.partition_of(Some(&metadata(long))), Err(ErrorCode::InvalidPartition));
        let stored = Partitioning::from_stored("country".into(), 1000, rule.values_json().as_deref());
        assert_eq!(stored.as_ref(), Some(&rule));
    }
}

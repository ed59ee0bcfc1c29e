//! The name other players see.

use serde_json::Value;

use crate::error::{ApiError, ErrorCode};

/// A display name: 1..=32 Unicode scalar values, no control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisplayName(String);

impl DisplayName {
    pub fn parse(raw: &Value) -> Result<Self, ApiError> {
        let invalid = || {
            ApiError::with_message(
                ErrorCode::InvalidDisplayName,
                "display_name must be 1 to 32 characters without control characters",
            )
        };
        let name = raw.as_str().ok_or_else(invalid)?;
        let length = name.chars().count();
        if (1..=32).contains(&length) && !name.chars().any(char::is_control) {
            Ok(Self(name.to_owned()))
        } else {
            Err(invalid())
        }
    }

    /// The default display name: the login name, which is always a valid one.
    pub fn from_login_name(login_name: &super::LoginName) -> Self {
        Self(login_name.as_str().to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepts_unicode_up_to_32_characters() {
        for ok in ["A", "Zoë", "名前", "🎮 player", &"é".repeat(32)] {
            assert!(DisplayName::parse(&json!(ok)).is_ok(), "{ok}");
        }
    }

    #[test]
    fn rejects_empty_long_control_and_non_strings() {
        for bad in
            [json!(""), json!("x".repeat(33)), json!("a\nb"), json!("a\u{0}"), json!("\u{7f}"), json!(5), json!(null)]
        {
            let err = DisplayName::parse(&bad).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidDisplayName, "{bad}");
        }
    }
}

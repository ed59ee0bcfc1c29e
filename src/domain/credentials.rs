//! Login names and passwords as registration and login accept them.

use serde_json::Value;

use crate::error::{ApiError, ErrorCode};

/// A login name: 3..=32 characters of `[A-Za-z0-9_.-]`.
///
/// Names are unique case-insensitively; [`LoginName::key`] is the folded form
/// that the unique index is built on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginName(String);

impl LoginName {
    pub fn parse(raw: Option<&Value>) -> Result<Self, ApiError> {
        let invalid = || {
            ApiError::with_message(
                ErrorCode::InvalidLoginName,
                "login_name must be 3 to 32 characters of A-Z, a-z, 0-9, '_', '.', '-'",
            )
        };
        let name = raw.and_then(Value::as_str).ok_or_else(invalid)?;
        let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
        if (3..=32).contains(&name.len()) && name.chars().all(allowed) {
            Ok(Self(name.to_owned()))
        } else {
            Err(invalid())
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The case-folded name used for uniqueness and lookup (ASCII only, so
    /// folding is the same on every database).
    pub fn key(&self) -> String {
        self.0.to_ascii_lowercase()
    }
}

/// A password: 8..=72 bytes (bcrypt's input limit). Never printed.
#[derive(Clone)]
pub struct Password(String);

impl Password {
    pub fn parse(raw: Option<&Value>) -> Result<Self, ApiError> {
        let invalid = || ApiError::with_message(ErrorCode::InvalidPassword, "password must be 8 to 72 bytes");
        let password = raw.and_then(Value::as_str).ok_or_else(invalid)?;
        if (8..=72).contains(&password.len()) {
            Ok(Self(password.to_owned()))
        } else {
            Err(invalid())
        }
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn login_name_rules() {
        for ok in ["abc", "Alice_01", "a.b-c", &"x".repeat(32)] {
            assert!(LoginName::parse(Some(&json!(ok))).is_ok(), "{ok}");
        }
        for bad in ["ab", "", "has space", "émile", "a/b", &"x".repeat(33)] {
            let err = LoginName::parse(Some(&json!(bad))).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidLoginName, "{bad}");
        }
        assert!(LoginName::parse(Some(&json!(123))).is_err());
        assert!(LoginName::parse(None).is_err());
    }

    #[test]
    fn login_name_key_folds_case() {
        let name = LoginName::parse(Some(&json!("AlIcE"))).unwrap();
        assert_eq!(name.key(), "alice");
        assert_eq!(name.as_str(), "AlIcE");
    }

    #[test]
    fn password_length_is_in_bytes() {
        assert!(Password::parse(Some(&json!("12345678"))).is_ok());
        assert!(Password::parse(Some(&json!("1234567"))).is_err());
        assert!(Password::parse(Some(&json!("x".repeat(72)))).is_ok());
        assert!(Password::parse(Some(&json!("x".repeat(73)))).is_err());
        // 24 three-byte characters are 72 bytes; 25 are 75.
        assert!(Password::parse(Some(&json!("€".repeat(24)))).is_ok());
        assert!(Password::parse(Some(&json!("€".repeat(25)))).is_err());
        assert!(Password::parse(Some(&json!(12345678))).is_err());
    }

    #[test]
    fn password_debug_is_redacted() {
        let password = Password::parse(Some(&json!("hunter2hunter2"))).unwrap();
        assert!(!format!("{password:?}").contains("hunter2"));
    }
}

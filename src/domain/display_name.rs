//! The name other players see.

use serde_json::Value;
use unicode_normalization::UnicodeNormalization as _;
use unicode_properties::{GeneralCategory, UnicodeGeneralCategory as _};

use crate::error::{ApiError, ErrorCode};

/// A display name: 1..=32 Unicode scalar values in NFC, not blank, and
/// without characters that are invisible or move text around: controls,
/// format characters (zero-width spaces and joiners, bidirectional
/// overrides such as U+202E), line and paragraph separators, private-use,
/// unassigned and surrogate code points. Another player's name must look
/// like what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisplayName(String);

impl DisplayName {
    pub fn parse(raw: &Value) -> Result<Self, ApiError> {
        let invalid = || {
            ApiError::with_message(
                ErrorCode::InvalidDisplayName,
                "display_name must be 1 to 32 visible characters (no control, format or separator characters)",
            )
        };
        let name: String = raw.as_str().ok_or_else(invalid)?.nfc().collect();
        let length = name.chars().count();
        if (1..=32).contains(&length) && !name.trim().is_empty() && name.chars().all(allowed) {
            Ok(Self(name))
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

/// Whether a character may appear in a display name (see [`DisplayName`]).
fn allowed(c: char) -> bool {
    !matches!(
        c.general_category(),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
            | GeneralCategory::PrivateUse
            | GeneralCategory::Surrogate
            | GeneralCategory::Unassigned
    )
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
    fn invisible_and_direction_changing_characters_are_refused() {
        for bad in ["abc\u{202E}fed", "a\u{200B}b", "a\u{2028}b", "a\u{2029}b", "\u{FEFF}x", "x\u{E000}", "   "] {
            let err = DisplayName::parse(&json!(bad)).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidDisplayName, "{bad:?}");
        }
    }

    #[test]
    fn names_are_stored_in_nfc() {
        // "é" as e + combining acute is one character once composed.
        let name = DisplayName::parse(&json!("Zoe\u{301}")).unwrap();
        assert_eq!(name.as_str(), "Zo\u{e9}");
        assert_eq!(DisplayName::parse(&json!("e\u{301}".repeat(32))).unwrap().as_str().chars().count(), 32);
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

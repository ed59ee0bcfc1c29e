//! Scoped admin keys (v4): what a key may do, and what an admin route
//! needs. Roles nest: a viewer reads, a moderator also moderates, and only
//! the admin token changes the service itself.

use serde_json::Value;

use crate::error::{ApiError, ErrorCode};

/// What a key made by `POST /api/admin/keys` is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyRole {
    /// A game server's key: posts scores for players; no admin route.
    Server,
    Moderator,
    Viewer,
}

/// What an admin route needs, in nesting order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    /// Every admin read.
    Viewer,
    /// Reads, and removing posts, bans, unbans, renames, deciding held posts.
    Moderator,
    /// Everything: the admin token alone.
    Admin,
}

impl KeyRole {
    /// `role` in a key's definition: absent or null is `server`.
    pub fn parse(raw: Option<&Value>) -> Result<Self, ApiError> {
        match raw {
            None | Some(Value::Null) => Ok(Self::Server),
            Some(Value::String(name)) => Self::from_name(name).ok_or_else(|| ErrorCode::InvalidRole.into()),
            Some(_) => Err(ErrorCode::InvalidRole.into()),
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "server" => Some(Self::Server),
            "moderator" => Some(Self::Moderator),
            "viewer" => Some(Self::Viewer),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Server => "server",
            Self::Moderator => "moderator",
            Self::Viewer => "viewer",
        }
    }

    /// The admin routes a key of this role reaches (none for `server`).
    pub fn access(self) -> Option<Access> {
        match self {
            Self::Server => None,
            Self::Moderator => Some(Access::Moderator),
            Self::Viewer => Some(Access::Viewer),
        }
    }
}

impl Access {
    /// The role's name as `whoami` shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Viewer => "viewer",
            Self::Moderator => "moderator",
            Self::Admin => "admin",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_nest_and_parse() {
        assert!(Access::Viewer < Access::Moderator && Access::Moderator < Access::Admin);
        assert_eq!(KeyRole::parse(None).unwrap(), KeyRole::Server);
        assert_eq!(KeyRole::parse(Some(&Value::from("viewer"))).unwrap(), KeyRole::Viewer);
        assert!(KeyRole::parse(Some(&Value::from("admin"))).is_err());
        assert!(KeyRole::parse(Some(&Value::from(1))).is_err());
        assert_eq!(KeyRole::Server.access(), None);
        for role in [KeyRole::Server, KeyRole::Moderator, KeyRole::Viewer] {
            assert_eq!(KeyRole::from_name(role.as_str()), Some(role));
        }
    }
}

//! Who may call each admin route (v4 scoped keys): the one table the
//! `Actor` extractor reads. Roles nest (`domain::Access`): a viewer key
//! calls every admin read, a moderator key also removes posts, bans,
//! unbans, renames and decides held posts, and the admin token does
//! everything, alone changing boards, leagues, webhooks and keys and
//! calling initialize. A route missing here needs the admin token (a test
//! checks the table names every admin route of the route table).

use super::paths;
use crate::domain::Access;

/// (method, path, the least access that calls it), for every admin route.
pub const ADMIN_ROUTES: &[(&str, &str, Access)] = &[
    ("get", paths::ADMIN_WHOAMI, Access::Viewer),
    ("get", paths::ADMIN_AUDIT, Access::Viewer),
    ("get", paths::ADMIN_USERS, Access::Viewer),
    ("get", paths::ADMIN_BOARD_EXPORT, Access::Viewer),
    ("get", paths::ADMIN_BOARD_REWARDS, Access::Viewer),
    ("get", paths::ADMIN_LEAGUE_REWARDS, Access::Viewer),
    ("get", paths::ADMIN_HELD, Access::Viewer),
    ("get", paths::ADMIN_KEYS, Access::Viewer),
    ("get", paths::ADMIN_WEBHOOKS, Access::Viewer),
    ("get", paths::ADMIN_WEBHOOK_DELIVERIES, Access::Viewer),
    ("delete", paths::ADMIN_SCORE, Access::Moderator),
    ("delete", paths::ADMIN_BOARD_SCORE, Access::Moderator),
    ("patch", paths::ADMIN_USER, Access::Moderator),
    ("post", paths::ADMIN_USER_BAN, Access::Moderator),
    ("delete", paths::ADMIN_USER_BAN, Access::Moderator),
    ("post", paths::ADMIN_HELD_POST, Access::Moderator),
    ("post", paths::ADMIN_BOARDS, Access::Admin),
    ("patch", paths::ADMIN_BOARD, Access::Admin),
    ("delete", paths::ADMIN_BOARD, Access::Admin),
    ("post", paths::ADMIN_KEYS, Access::Admin),
    ("delete", paths::ADMIN_KEY, Access::Admin),
    ("post", paths::ADMIN_LEAGUES, Access::Admin),
    ("patch", paths::ADMIN_LEAGUE, Access::Admin),
    ("delete", paths::ADMIN_LEAGUE, Access::Admin),
    ("post", paths::ADMIN_WEBHOOKS, Access::Admin),
    ("delete", paths::ADMIN_WEBHOOK, Access::Admin),
    ("post", paths::ADMIN_INITIALIZE, Access::Admin),
];

/// What a request to this route needs: the admin token for any route the
/// table does not name.
pub fn needed(method: &str, pattern: Option<&str>) -> Access {
    let Some(pattern) = pattern else { return Access::Admin };
    ADMIN_ROUTES
        .iter()
        .find(|(m, path, _)| m.eq_ignore_ascii_case(method) && *path == pattern)
        .map_or(Access::Admin, |(_, _, access)| *access)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every admin route the service registers is in the table, and the
    /// table names no other.
    #[test]
    fn the_table_names_exactly_the_admin_routes() {
        let mut registered: Vec<(&str, &str)> =
            super::super::ROUTES.iter().copied().filter(|(_, path)| path.starts_with("/api/admin/")).collect();
        let mut listed: Vec<(&str, &str)> = ADMIN_ROUTES.iter().map(|(method, path, _)| (*method, *path)).collect();
        registered.sort_unstable();
        listed.sort_unstable();
        assert_eq!(listed, registered);
        assert_eq!(needed("GET", Some(paths::ADMIN_AUDIT)), Access::Viewer);
        assert_eq!(needed("DELETE", Some(paths::ADMIN_SCORE)), Access::Moderator);
        assert_eq!(needed("GET", Some("/api/admin/unknown")), Access::Admin);
        assert_eq!(needed("GET", None), Access::Admin);
    }
}

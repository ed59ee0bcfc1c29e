//! Paths are taken as they are written. nginx (or any proxy) matches its
//! rules, such as the block on `/api/admin/`, against the *decoded* path
//! and passes the raw one on: `/api/admin/boards/..%2F..%2Fx` decodes to
//! `/api/x`, which no rule blocks, and arrives as an admin route. The
//! bundled nginx refuses such paths itself; this refuses them again, for
//! whatever else may be in front (see `front`: 400 `invalid_path`).

/// Whether a raw path holds `%2F`, `%5C` or `%2E`, in either case.
pub fn has_encoded_separator(raw_path: &str) -> bool {
    raw_path.as_bytes().windows(3).any(|window| {
        window[0] == b'%'
            && matches!([window[1], window[2].to_ascii_uppercase()], [b'2', b'F'] | [b'5', b'C'] | [b'2', b'E'])
    })
}

#[cfg(test)]
mod tests {
    use super::has_encoded_separator;

    #[test]
    fn encoded_separators_and_dots_are_found_in_any_case() {
        for bad in ["/api/admin/boards/..%2F..%2Fx", "/api/x%2fy", "/api/%2e%2e/admin", "/api/a%5Cb", "/api/%2E"] {
            assert!(has_encoded_separator(bad), "{bad}");
        }
        for good in ["/api/rankings/best", "/api/boards/level-3/scores", "/api/users/12", "/api/x%20y", "/%2"] {
            assert!(!has_encoded_separator(good), "{good}");
        }
    }
}

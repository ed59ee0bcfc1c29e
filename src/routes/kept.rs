//! Kept answers given by their address before the router runs (`front`,
//! issue 43): without CORS, a GET whose path and query (its address)
//! already led the router to a ranking page, and on a single instance an
//! around-me window, a friends board or a profile, answered from the copy
//! the handler kept while it is exact (the rank engine's version, and for
//! a profile the user rows' count of changes; with Redis, a page under its
//! lease: `redis::PageLease`). The same copy, tag,
//! conditional answer and metrics as the handler gives; the use cases
//! remember an address for as long as it names the same copy (a custom
//! board's while the board catalog is unchanged and its period has not
//! ended: `usecases::rankings::address_term`), and everything else goes
//! through the router. The router, the extractors and the
//! handler were most of what a kept page cost beyond the framework
//! (BENCHMARKS.md, "Kept answers by their address").

use actix_web::dev::ServiceRequest;
use actix_web::http::Method;
use actix_web::{web, HttpResponse};

use super::rankings::conditional;
use super::{address_of, json_response, paths};
use crate::cache::{AddressClock, PageOutcome, PageVersion};
use crate::state::AppState;
use crate::telemetry::RouteName;
use crate::usecases::rankings::served_under_lease;

/// Where the paths of the ranking routes begin.
const RANKINGS: &str = "/api/rankings/";
/// Where a profile's path begins.
const USERS: &str = "/api/users/";

/// The kept answer to this request, if it has one, and the route the
/// router would have named (its metrics label).
pub fn kept_answer(request: &ServiceRequest) -> Option<(HttpResponse, RouteName)> {
    if request.method() != Method::GET {
        return None;
    }
    let path = request.path();
    if !path.starts_with(RANKINGS) && !path.starts_with(USERS) {
        return None;
    }
    let state = request.app_data::<web::Data<AppState>>()?;
    // CORS headers are the CORS layer's, inside this one.
    if state.settings.cors_origins().next().is_some() {
        return None;
    }
    let address = address_of(request.request())?;
    let clock = AddressClock { catalog: state.boards.changes(), at: None };
    let ranks = state.ranks.version();
    let version = PageVersion::Local(ranks);
    let caches = &state.caches;
    // With Redis only pages are kept (the windows and profiles are empty).
    // A board's id has no `/`: what follows it names the route.
    let (answer, route) = match path.strip_prefix(RANKINGS) {
        Some(rest) if rest.contains("/around/") => (
            conditional(request.request(), caches.windows.get_by_address(address, &clock, &version)?),
            paths::RANKING_AROUND,
        ),
        Some(rest) if rest.ends_with("/users") => {
            (json_response(caches.windows.get_by_address(address, &clock, &version)?.body), paths::RANKING_USERS)
        }
        Some(_) => {
            let page = match &state.redis {
                None => caches.pages.get_by_address(address, &clock, &version)?,
                Some(redis) => {
                    served_under_lease(state, caches.pages.leased_by_address(address, &clock, redis.page_lease())?)
                }
            };
            caches.count_page(PageOutcome::Hit);
            (conditional(request.request(), page), paths::RANKING)
        }
        None => {
            let version = PageVersion::Profile { ranks, rows: caches.users.local_changes()? };
            (json_response(caches.profiles.get_by_address(address, &clock, &version)?.body), paths::USER)
        }
    };
    Some((answer, RouteName(route)))
}

//! The operator's console (`/admin/`): one static page whose script does
//! everything through the documented API. Served here, not by the static
//! files, for its Content-Security-Policy: the page holds an admin token
//! in memory, so it may load nothing but its own files, run no inline
//! script, and never be framed.

use actix_web::http::header::{HeaderValue, CACHE_CONTROL, CONTENT_SECURITY_POLICY};
use actix_web::{web, HttpRequest, HttpResponse};

use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;

/// The contract's policy for the console (nginx sends the same).
pub const CONSOLE_POLICY: &str = "default-src 'self'; object-src 'none'; frame-ancestors 'none'";

/// `GET /admin/` (and `/admin/index.html`): the console page, always
/// revalidated so a deploy is seen at once.
pub async fn page(request: HttpRequest, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let path = state.settings.static_dir.join("admin").join("index.html");
    let file = actix_files::NamedFile::open_async(path).await.map_err(|_| ApiError::from(ErrorCode::NotFound))?;
    let mut response = file.into_response(&request);
    let headers = response.headers_mut();
    headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONSOLE_POLICY));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(response)
}

/// `GET /admin`: to the page's own address, so that its path ends in `/`.
pub async fn to_page() -> HttpResponse {
    HttpResponse::PermanentRedirect().insert_header(("Location", "/admin/")).finish()
}

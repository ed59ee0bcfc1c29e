//! The floor a read is measured against (BENCHMARKS.md, "Reads at the
//! framework's floor"): actix-web, as hiscore builds it (same Cargo.lock,
//! same features, one worker per core), answering a fixed JSON body of
//! each size asked at `/<size>` (a static route: no pattern to match).
//! Nothing else: no middleware, no state, no work per request.
//!
//!   cargo run --release --example floor -- 127.0.0.1:8091 1657 232
use actix_web::http::header::ContentType;
use actix_web::web::Bytes;
use actix_web::{web, App, HttpResponse, HttpServer};

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let bind = args.next().unwrap_or_else(|| "127.0.0.1:8091".to_owned());
    let sizes: Vec<usize> = args.map(|size| size.parse().expect("a body size in bytes")).collect();
    HttpServer::new(move || {
        sizes.iter().fold(App::new(), |app, size| {
            // A JSON string of exactly `size` bytes (at least the two quotes).
            let body = Bytes::from(format!("\"{}\"", "x".repeat(size.saturating_sub(2))));
            app.route(
                &format!("/{size}"),
                web::get().to(move || {
                    let body = body.clone();
                    async move { HttpResponse::Ok().content_type(ContentType::json()).body(body) }
                }),
            )
        })
    })
    .bind(bind)?
    .run()
    .await
}

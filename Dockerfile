# Multi-stage build: compile in the Rust image, run from a slim Debian as
# a non-root user. `docker compose up` builds it (see docker-compose.yml).
FROM rust:1-bookworm AS builder
WORKDIR /build
COPY Cargo.toml Cargo.lock ./
COPY src ./src
# A workspace member: cargo reads its manifest (the image builds only the server).
COPY bench ./bench
COPY schema.sql ./
COPY tests ./tests
RUN cargo build --release --locked --bin hiscore

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home /app hiscore
WORKDIR /app
COPY --from=builder /build/target/release/hiscore /usr/local/bin/hiscore
COPY static ./static
USER hiscore
ENV BIND=0.0.0.0:8080 STATIC_DIR=/app/static RUST_LOG=info
EXPOSE 8080
HEALTHCHECK --interval=5s --timeout=3s --retries=10 CMD ["hiscore", "healthcheck"]
ENTRYPOINT ["hiscore", "serve"]

//! Versioned migrations: a database made by the release before migrations
//! is adopted with its data intact and answers the same pages; `schema.sql`
//! (which docker-compose loads) equals what the MySQL migrations build;
//! `--no-migrate` refuses an out-of-date database until `hiscore migrate`.

use hiscore::config::Settings;
use hiscore::dataset::{generate, DatasetSpec};
use hiscore::startup::Application;
use hiscore::store::Store;
use serde_json::json;
use sqlx::AnyPool;

use crate::backend_tests;
use crate::helpers::{spawn_app_on, Backend, TestDatabase};

backend_tests!(
    a_database_of_the_release_before_migrations_is_adopted,
    no_migrate_requires_hiscore_migrate,
    custom_entries_written_before_subscores_keep_their_order
);

fn is_sqlite(db: &TestDatabase) -> bool {
    db.url.starts_with("sqlite:")
}

/// Writes what the first release's initialize wrote, on its own schema:
/// the frozen schema file, then the generated dataset, row by row.
async fn load_first_release(pool: &AnyPool, sqlite: bool, spec: DatasetSpec) {
    let schema = if sqlite {
        include_str!("../fixtures/v1_schema_sqlite.sql")
    } else {
        include_str!("../fixtures/v1_schema_mysql.sql")
    };
    sqlx::raw_sql(schema).execute(pool).await.expect("the first release's schema");
    let data = generate(spec);
    for user in &data.users {
        sqlx::query(
            "INSERT INTO users (id, login_name, login_key, display_name, password_hash, best_score, best_at, \
             best_score_id, total_score, play_count, created_at) VALUES (?, ?, ?, ?, 'x', ?, ?, ?, ?, ?, ?)",
        )
        .bind(user.id)
        .bind(&user.login_name)
        .bind(user.login_name.to_ascii_lowercase())
        .bind(&user.display_name)
        .bind(user.best_score)
        .bind(user.best_at.map(|t| t.millis()))
        .bind(user.best_score_id)
        .bind(user.total_score)
        .bind(user.play_count)
        .bind(user.created_at.millis())
        .execute(pool)
        .await
        .unwrap();
    }
    for score in &data.scores {
        sqlx::query("INSERT INTO scores (id, user_id, score, created_at) VALUES (?, ?, ?, ?)")
            .bind(score.id)
            .bind(score.user_id)
            .bind(score.score)
            .bind(score.created_at.millis())
            .execute(pool)
            .await
            .unwrap();
    }
    // A release that predates board_stats left it empty: the migration counts.
}

async fn pages_of(app: &crate::helpers::TestApp) -> Vec<String> {
    let mut pages = Vec::new();
    for path in [
        "/api/rankings/best?limit=100",
        "/api/rankings/best?limit=7&offset=13",
        "/api/rankings/total?limit=100",
        "/api/rankings/total/around/5?radius=3",
        "/api/users/3",
        "/api/users?ids=9,1,4",
        "/api/users/2/scores?limit=5",
    ] {
        let response = app.get(path).await;
        assert_eq!(response.status(), 200, "{path}");
        pages.push(response.text().await.unwrap());
    }
    pages
}

async fn a_database_of_the_release_before_migrations_is_adopted(backend: Backend) {
    // Arrange: the pages this version serves for a dataset it loaded itself…
    let spec = DatasetSpec { users: 60, scores: 500, seed: 11 };
    let fresh_db = TestDatabase::new(&backend).await;
    // One cursor secret for both (each database would make its own): the
    // pages' cursors are then byte for byte the same too.
    let secret = ["--cursor-secret", "one secret for both databases"];
    let fresh =
        spawn_app_on(&fresh_db, &[&["--admin-token", "test-admin-token-0123456789abcdef"][..], &secret].concat()).await;
    let body = json!({"users": spec.users, "scores": spec.scores, "seed": spec.seed});
    assert_eq!(fresh.initialize("test-admin-token-0123456789abcdef", &body).await.0, 200);
    let expected = pages_of(&fresh).await;
    // …and a database the first release made, holding the same data.
    let old = TestDatabase::new(&backend).await;
    let pool = old.connect().await;
    load_first_release(&pool, is_sqlite(&old), spec).await;

    // Act: this version starts on it.
    let app = spawn_app_on(&old, &secret).await;

    // Assert: the same pages, the data intact, and the schema recorded.
    assert_eq!(pages_of(&app).await, expected);
    let count = |sql: &'static str| {
        let pool = pool.clone();
        async move { sqlx::query_scalar::<_, i64>(sql).fetch_one(&pool).await.unwrap() }
    };
    assert_eq!(count("SELECT COUNT(*) FROM users").await, spec.users);
    assert_eq!(count("SELECT COUNT(*) FROM scores").await, spec.scores);
    assert_eq!(
        count("SELECT players FROM board_stats WHERE id = 1").await,
        count("SELECT COUNT(*) FROM users WHERE play_count > 0").await
    );
    assert!(count("SELECT COUNT(*) FROM _sqlx_migrations").await >= 1);
    // It keeps working: a new player posts, and a restart adopts nothing twice.
    let player = app.register("after_upgrade").await;
    assert_eq!(app.post_score(&player, 123).await["user"]["play_count"], 1);
    app.stop().await;
    let again = spawn_app_on(&old, &[]).await;
    assert_eq!(again.get_json(&format!("/api/users/{}", player.id)).await.1["best_score"], 123);
}

/// A custom board's entries written before migration 20 (subscores: the
/// board order index gained `rank_sub1`, `rank_sub2`) read in the same
/// order, with the same ranks, once this version migrated the database:
/// the migrations up to 19 are applied by sqlx from a copy of the
/// directory, the board and its entries written as that schema held them
/// (a tie on the score, split by time), then this version starts on it.
async fn custom_entries_written_before_subscores_keep_their_order(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let pool = db.connect().await;
    let dialect = if is_sqlite(&db) { "sqlite" } else { "mysql" };
    let before = tempfile::tempdir().unwrap();
    for file in std::fs::read_dir(format!("{}/migrations/{dialect}", env!("CARGO_MANIFEST_DIR"))).unwrap() {
        let path = file.unwrap().path();
        let version: u32 = path.file_name().unwrap().to_str().unwrap()[..4].parse().unwrap();
        if version < 20 {
            std::fs::copy(&path, before.path().join(path.file_name().unwrap())).unwrap();
        }
    }
    sqlx::migrate::Migrator::new(before.path()).await.unwrap().run(&pool).await.unwrap();
    let created = 1_796_112_000_000_i64;
    sqlx::query(
        "INSERT INTO boards (number, id, name, sort_order, operator, reset, timezone, archive_periods, min_score, \
         max_score, created_at) VALUES (1, 'old', 'Old', 'asc', 'best', NULL, 'UTC', 10, 0, 1000000000, ?)",
    )
    .bind(created)
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO board_periods (board, period, starts_at, ends_at, players, changes) VALUES (1, 0, ?, NULL, 4, 4)",
    )
    .bind(created)
    .execute(&pool)
    .await
    .unwrap();
    // (user, score, achieved_at): lowest first; 20 twice, the earlier first.
    let entries = [(1, 30, 5), (2, 20, 9), (3, 20, 7), (4, 10, 8)];
    for (user, score, at) in entries {
        sqlx::query(
            "INSERT INTO users (id, login_name, login_key, display_name, password_hash, created_at) \
             VALUES (?, ?, ?, ?, 'x', ?)",
        )
        .bind(user)
        .bind(format!("old{user}"))
        .bind(format!("old{user}"))
        .bind(format!("Old {user}"))
        .bind(created)
        .execute(&pool)
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO board_entries (board, period, user_id, score, rank_score, achieved_at, post_id, metadata, \
             plays, version, changed) VALUES (1, 0, ?, ?, ?, ?, ?, NULL, 1, 1, ?)",
        )
        .bind(user)
        .bind(score)
        .bind(score)
        .bind(created + at)
        .bind(user)
        .bind(user)
        .execute(&pool)
        .await
        .unwrap();
    }

    let app = spawn_app_on(&db, &[]).await;
    let page = app.ranking("old", "limit=10").await;
    let shown: Vec<(i64, i64)> = page["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["rank"].as_i64().unwrap(), e["user"]["id"].as_i64().unwrap()))
        .collect();
    assert_eq!(shown, [(1, 4), (2, 3), (2, 2), (4, 1)], "{page}");
    let cursor = app.ranking("old", "limit=2").await["next_cursor"].as_str().unwrap().to_owned();
    let rest = app.ranking("old", &format!("limit=2&cursor={cursor}")).await;
    let ids: Vec<i64> = rest["entries"].as_array().unwrap().iter().map(|e| e["user"]["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [2, 1], "a cursor walk goes on by the old entries' keys");
    let (_, around) = app.get_json("/api/rankings/old/around/2?radius=0").await;
    assert_eq!(around["entries"][0]["rank"], 2);
}

async fn no_migrate_requires_hiscore_migrate(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let settings = |extra: &[&str]| {
        let mut args =
            vec!["hiscore", "--bind", "127.0.0.1:0", "--database-url", &db.url, "--static-dir", "/nonexistent"];
        args.extend_from_slice(extra);
        Settings::try_parse_from(args).unwrap()
    };
    let refused = Application::build(settings(&["--no-migrate"])).await.err().expect("an empty database is refused");
    assert!(refused.to_string().contains("hiscore migrate"), "{refused}");

    // What `hiscore migrate` does, then the same start succeeds.
    let counter = prometheus::IntCounter::new("statements", "statements").unwrap();
    let store = Store::open(&db.url, 1, counter, Default::default()).await.unwrap();
    assert!(!store.migrate().await.unwrap().is_empty());
    assert!(store.migrate().await.unwrap().is_empty(), "a second run applies nothing");
    drop(store);
    let app = Application::build(settings(&["--no-migrate"])).await.expect("a migrated database is accepted");
    let handle = app.handle();
    actix_web::rt::spawn(app.run_until_stopped());
    handle.stop(true).await;
}

/// docker-compose loads `schema.sql` into a fresh MariaDB, then the service
/// migrates it: both must describe the same tables, columns and indexes.
#[actix_web::test]
#[cfg_attr(not(hiscore_test_mysql), ignore = "set TEST_MYSQL_URL")]
async fn schema_sql_equals_the_mysql_migrations() {
    let backend = Backend::mariadb();
    let from_file = TestDatabase::new(&backend).await;
    let pool = from_file.connect().await;
    sqlx::raw_sql(include_str!("../../schema.sql")).execute(&pool).await.expect("schema.sql loads");
    let from_migrations = TestDatabase::new(&backend).await;
    let counter = prometheus::IntCounter::new("statements", "statements").unwrap();
    let store = Store::open(&from_migrations.url, 1, counter, Default::default()).await.unwrap();
    store.migrate().await.unwrap();

    let describe = |db: &TestDatabase| {
        let url = db.url.clone();
        async move {
            let pool = sqlx::AnyPool::connect(&url).await.unwrap();
            // MariaDB types these texts as BLOB or TEXT depending on the view.
            let text = |rows: Vec<sqlx::any::AnyRow>| -> Vec<String> {
                use sqlx::Row as _;
                rows.iter()
                    .map(|row| {
                        row.try_get::<String, _>(0)
                            .unwrap_or_else(|_| String::from_utf8_lossy(&row.get::<Vec<u8>, _>(0)).into_owned())
                    })
                    .collect()
            };
            let columns = sqlx::query(
                "SELECT CAST(CONCAT_WS(' ', table_name, column_name, column_type, is_nullable, IFNULL(column_default, '-'), \
                 IFNULL(character_set_name, '-'), IFNULL(collation_name, '-')) AS CHAR) FROM information_schema.columns \
                 WHERE table_schema = DATABASE() AND table_name <> '_sqlx_migrations' ORDER BY 1",
            )
            .fetch_all(&pool)
            .await
            .unwrap();
            let indexes = sqlx::query(
                "SELECT CAST(CONCAT_WS(' ', table_name, index_name, seq_in_index, column_name, non_unique, \
                 IFNULL(collation, '-')) AS CHAR) FROM information_schema.statistics \
                 WHERE table_schema = DATABASE() AND table_name <> '_sqlx_migrations' ORDER BY 1",
            )
            .fetch_all(&pool)
            .await
            .unwrap();
            (text(columns), text(indexes))
        }
    };
    let (file_columns, file_indexes) = describe(&from_file).await;
    let (migrated_columns, migrated_indexes) = describe(&from_migrations).await;
    assert!(!file_columns.is_empty());
    assert_eq!(file_columns, migrated_columns, "columns differ between schema.sql and the migrations");
    assert_eq!(file_indexes, migrated_indexes, "indexes differ between schema.sql and the migrations");
}

/// Found by running the README's two-instance recipe: two instances
/// starting together on a new MariaDB database both applied the
/// migrations (sqlx's lock waits forever on MySQL, not at all on MariaDB)
/// and one stopped on a duplicate key. Now one applies them, the other
/// waits and finds them applied.
#[actix_web::test]
#[cfg_attr(not(hiscore_test_mysql), ignore = "set TEST_MYSQL_URL")]
async fn two_instances_migrating_a_new_database_at_once_both_start() {
    let backend = Backend::mariadb();
    for _ in 0..3 {
        let db = TestDatabase::new(&backend).await;
        let open = || async {
            let counter = prometheus::IntCounter::new("statements", "statements").unwrap();
            Store::open(&db.url, 2, counter, Default::default()).await.unwrap()
        };
        let (first, second) = (open().await, open().await);
        let (a, b) = futures_util::future::join(first.migrate(), second.migrate()).await;
        let (a, b) = (a.expect("the first instance migrates"), b.expect("the second instance migrates"));
        let migrations = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/mysql")).unwrap().count();
        assert_eq!(a.len() + b.len(), migrations, "each migration applied once: {a:?} and {b:?}");
    }
}

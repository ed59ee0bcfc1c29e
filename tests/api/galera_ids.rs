//! Galera's auto-increment (`innodb_autoinc_lock_mode` 2, ids stepped by
//! the cluster size) on a MariaDB of its own: the score writer still sends
//! one multi-row INSERT per batch (`INSERT … RETURNING`), and every post's
//! id is the row that holds its score, on the built-in and custom boards.
//! Runs where `TEST_MYSQL_URL` is set, i.e. where MariaDB is installed.

use futures_util::future::join_all;
use serde_json::json;

use hiscore::domain::{PostStatus, Score, Timestamp};
use hiscore::store::{Migrations, SqliteSync, Store};

use crate::external::{free_port, start_mariadb, wait_for_port};
use crate::helpers::{spawn_app_on, Backend, TestDatabase, ADMIN};

#[actix_web::test]
#[cfg_attr(not(hiscore_test_mysql), ignore = "set TEST_MYSQL_URL")]
async fn batches_keep_one_insert_and_exact_ids_under_galera_auto_increment() {
    Backend::mariadb();
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    // What Galera sets on a node of three (wsrep_auto_increment_control).
    let galera_like = ["--innodb-autoinc-lock-mode=2", "--auto-increment-increment=3", "--auto-increment-offset=2"]
        .map(str::to_owned);
    let _mariadb = start_mariadb(dir.path(), port, &galera_like);
    wait_for_port(port).await;
    let backend = Backend::MariaDb { server_url: format!("mysql://root@127.0.0.1:{port}/hiscore") };
    let db = TestDatabase::new(&backend).await;
    let app = spawn_app_on(&db, &["--admin-token", ADMIN]).await;
    app.create_board(&json!({"id": "laps", "name": "Laps", "order": "asc"})).await;
    let mut players = Vec::new();
    for i in 0..20 {
        players.push(app.register(&format!("racer{i}")).await);
    }
    // 20 players post 5 times each, all at once: the writer batches them.
    let posts = players.iter().enumerate().flat_map(|(i, player)| {
        let app = &app;
        (0..5).map(move |n| async move {
            let score = (i * 100 + n) as i64 + 1;
            let builtin = app.post_score(player, score).await;
            let custom = app.post_board_score(player, "laps", score).await;
            (score, builtin["score"]["id"].as_i64().unwrap(), custom["score"]["id"].as_i64().unwrap())
        })
    });
    let posted = join_all(posts).await;

    let pool = db.connect().await;
    for (score, builtin_id, custom_id) in &posted {
        let stored: i64 = sqlx::query_scalar("SELECT score FROM scores WHERE id = ?")
            .bind(builtin_id)
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(stored, *score, "post {builtin_id} holds another score");
        let stored: i64 = sqlx::query_scalar("SELECT score FROM board_scores WHERE id = ?")
            .bind(custom_id)
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(stored, *score, "board post {custom_id} holds another score");
    }
    let ids: Vec<i64> = posted.iter().map(|(_, id, _)| *id).collect();
    assert!(ids.iter().all(|id| id % 3 == 2), "ids step by 3 from 2, as on Galera: {ids:?}");

    // One statement for a batch of 60 posts, and their ids in order.
    let statements = prometheus::IntCounter::new("statements", "statements").unwrap();
    let store =
        Store::connect(&db.url, 2, statements.clone(), Migrations::Require, SqliteSync::default()).await.unwrap();
    let batch: Vec<(i64, Score, PostStatus)> = (0..60)
        .map(|n| (players[n % 20].id, Score::parse(Some(&json!(5_000 + n)), Score::MAX).unwrap(), PostStatus::Accepted))
        .collect();
    let mut conn = store.conn().await.unwrap();
    let before = statements.get();
    let ids = store.insert_scores(&mut conn, &batch, Timestamp::now()).await.unwrap();
    assert_eq!(statements.get() - before, 1, "one INSERT for the batch");
    for ((_, score, _), id) in batch.iter().zip(&ids) {
        let stored: i64 =
            sqlx::query_scalar("SELECT score FROM scores WHERE id = ?").bind(id).fetch_one(&pool).await.unwrap();
        assert_eq!(stored, score.value(), "id {id}");
    }
}

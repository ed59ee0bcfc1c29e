//! The connection pool never hands out a connection inside a transaction
//! (issue 39; RELIABILITY.md: a pooled MariaDB connection, idle inside a
//! transaction nobody would end, held a lock for 24 minutes). A caller
//! dropped while its `BEGIN` was on the wire (a client gone, a timeout)
//! left the server in a transaction sqlx did not count.

use std::time::Duration;

use hiscore::store::Store;

use crate::backend_tests;
use crate::helpers::{Backend, TestDatabase};

backend_tests!(begins_cut_short_leave_no_transaction_in_the_pool);

const CONNECTIONS: u32 = 2;

/// How many of the pool's connections are inside a transaction, by
/// asking the server (sqlx's own count is what was wrong): MariaDB says
/// so; SQLite refuses a `BEGIN` inside one. Every connection is held at
/// once, so each is asked. (On MariaDB a later `BEGIN` on the connection
/// commits what was open and hides it, so the pool is asked after every
/// attempt, not once at the end.)
async fn open_transactions(store: &Store, mysql: bool) -> usize {
    let mut held = Vec::new();
    for _ in 0..CONNECTIONS {
        held.push(store.conn().await.unwrap());
    }
    let mut open = 0;
    for conn in &mut held {
        let in_transaction = if mysql {
            sqlx::query_scalar::<_, i64>("SELECT @@in_transaction").fetch_one(&mut **conn).await.unwrap() != 0
        } else {
            let began = sqlx::query("BEGIN").execute(&mut **conn).await.is_ok();
            if began {
                sqlx::query("ROLLBACK").execute(&mut **conn).await.unwrap();
            }
            !began
        };
        open += usize::from(in_transaction);
    }
    open
}

async fn begins_cut_short_leave_no_transaction_in_the_pool(backend: Backend) {
    let db = TestDatabase::new(&backend).await;
    let counter = prometheus::IntCounter::new("statements", "statements").unwrap();
    let store = Store::open(&db.url, CONNECTIONS, counter, Default::default()).await.unwrap();
    store.migrate().await.unwrap();
    let mysql = !db.url.starts_with("sqlite:");
    // Cut short at every moment from before the BEGIN is sent to after its
    // answer came: after a growing number of turns of the runtime (timers
    // are too coarse: a round trip here is tens of microseconds).
    let mut open = 0;
    for attempt in 0..300u32 {
        let turns = async {
            for _ in 0..attempt % 30 {
                tokio::task::yield_now().await;
                std::thread::sleep(Duration::from_micros(5));
            }
        };
        tokio::select! {
            // Nobody commits it: it is rolled back.
            begun = store.begin_write() => if let Ok(transaction) = begun { drop(transaction) },
            () = turns => {}
        }
        // The dropped connection goes back to the pool on a task of its own.
        tokio::time::sleep(Duration::from_millis(2)).await;
        open += open_transactions(&store, mysql).await;
    }
    assert_eq!(open, 0, "pooled connections came with a transaction open");
}

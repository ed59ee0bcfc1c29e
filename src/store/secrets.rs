//! Secrets of the deployment kept in its database (`secrets`): made once,
//! at the first start that needs one, then shared by every instance on
//! that database. Initialize does not replace them.

use super::{Store, StoreResult};
use crate::domain::derive_secret;

impl Store {
    /// The secret named `name`, made now if there is none yet (two
    /// instances starting together keep whichever was stored first).
    pub async fn secret(&self, name: &str) -> StoreResult<String> {
        let mut conn = self.conn().await?;
        let made = derive_secret(&format!("{:032x}{:032x}", rand::random::<u128>(), rand::random::<u128>()));
        let sql = format!(
            "{} INTO secrets (name, value) VALUES (?, ?){}",
            self.dialect.insert_ignore(),
            self.dialect.on_conflict_ignore()
        );
        self.sql(&sql).bind(name).bind(&made).execute(&mut *conn).await?;
        Ok(self.sql_scalar("SELECT value FROM secrets WHERE name = ?").bind(name).fetch_one(&mut *conn).await?)
    }
}

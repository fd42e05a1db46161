//! State rebuilt from the log: registers the SQL views of `queries/sql/state/` (pod
//! placements, workload devices, admission intervals, node and GPU health, run progress,
//! checkpoint restores) on a session that has the `events` and `metrics` tables.

use datafusion::prelude::SessionContext;

use crate::Result;
use crate::sql::{self, STATE_VIEWS};

/// Creates (or replaces) every state view.
pub async fn register(ctx: &SessionContext) -> Result<()> {
    for &view in STATE_VIEWS {
        sql::execute(ctx, view).await?;
    }
    Ok(())
}

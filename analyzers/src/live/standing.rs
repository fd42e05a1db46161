//! The incidents that stand in a store: the latest revision of each (the
//! `incidents_latest` view) that is not retracted, as the report's slowdown objects.

use std::path::Path;

use arrow::array::AsArray;

use crate::report::Slowdown;
use crate::{AnalyzeError, Result};

/// The standing incidents of the store at `root`, sorted by start then slowdown id.
pub async fn standing_incidents(root: &Path) -> Result<Vec<Slowdown>> {
    let store_err = |e: &dyn std::fmt::Display| AnalyzeError::Store {
        path: root.display().to_string(),
        detail: e.to_string(),
    };
    let ctx = whyslow_queries::open_session(root)
        .await
        .map_err(|e| store_err(&e))?;
    let sql = "SELECT json FROM incidents_latest WHERE status <> 'retracted'";
    let sql_err = |source| AnalyzeError::Sql {
        file: "(standing incidents)",
        source,
    };
    let batches = ctx
        .sql(sql)
        .await
        .map_err(sql_err)?
        .collect()
        .await
        .map_err(sql_err)?;
    let mut out = Vec::new();
    for b in &batches {
        let json = b
            .column(0)
            .as_string_opt::<i32>()
            .ok_or_else(|| AnalyzeError::Shape {
                file: "(standing incidents)",
                column: "json".into(),
                detail: "not a string column".into(),
            })?;
        for i in 0..b.num_rows() {
            out.push(serde_json::from_str::<Slowdown>(json.value(i))?);
        }
    }
    out.sort_by(|a, b| (&a.start, &a.slowdown_id).cmp(&(&b.start, &b.slowdown_id)));
    Ok(out)
}

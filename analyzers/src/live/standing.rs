//! Incidents already in a store: the latest revision of each (the `incidents_latest`
//! view), as the report's slowdown objects (those that stand) or as the state a restarted
//! live analyzer resumes from.

use std::path::Path;

use arrow::array::AsArray;
use arrow::datatypes::Int64Type;
use whyslow_schemas::tables::{StoredTime, stored_to_ns};

use super::tracker::{Published, Sighting};

use crate::report::Slowdown;
use crate::{AnalyzeError, Result};

/// The standing incidents of the store at `root` (latest revisions, retractions left
/// out), sorted by start then slowdown id.
pub async fn standing_incidents(root: &Path) -> Result<Vec<Slowdown>> {
    let mut out: Vec<Slowdown> = published_incidents(root, i64::MIN)
        .await?
        .into_iter()
        .filter(|p| !p.retracted)
        .map(|p| p.sighting.slowdown)
        .collect();
    out.sort_by(|a, b| (&a.start, &a.slowdown_id).cmp(&(&b.start, &b.slowdown_id)));
    Ok(out)
}

/// The latest revision of every incident whose extent reaches `from_ns` or later, to
/// resume a tracker from.
pub async fn published_incidents(root: &Path, from_ns: i64) -> Result<Vec<Published>> {
    let ctx = crate::command::open(root).await?;
    let sql = "SELECT incident_id, revision, status, start, \"end\", json FROM incidents_latest";
    let sql_err = |source| AnalyzeError::Sql {
        file: "(published incidents)",
        source,
    };
    let batches = ctx
        .sql(sql)
        .await
        .map_err(sql_err)?
        .collect()
        .await
        .map_err(sql_err)?;
    let shape = |column: &str| AnalyzeError::Shape {
        file: "(published incidents)",
        column: column.into(),
        detail: "unexpected type".into(),
    };
    let mut out = Vec::new();
    for b in &batches {
        let id = b
            .column(0)
            .as_string_opt::<i32>()
            .ok_or_else(|| shape("incident_id"))?;
        let revision = b
            .column(1)
            .as_primitive_opt::<Int64Type>()
            .ok_or_else(|| shape("revision"))?;
        let status = b
            .column(2)
            .as_string_opt::<i32>()
            .ok_or_else(|| shape("status"))?;
        let start = b
            .column(3)
            .as_primitive_opt::<StoredTime>()
            .ok_or_else(|| shape("start"))?;
        let end = b
            .column(4)
            .as_primitive_opt::<StoredTime>()
            .ok_or_else(|| shape("end"))?;
        let json = b
            .column(5)
            .as_string_opt::<i32>()
            .ok_or_else(|| shape("json"))?;
        for i in 0..b.num_rows() {
            if stored_to_ns(end.value(i)) < from_ns {
                continue;
            }
            out.push(Published {
                incident_id: id.value(i).to_string(),
                revision: revision.value(i),
                retracted: status.value(i) == "retracted",
                sighting: Sighting {
                    slowdown: serde_json::from_str::<Slowdown>(json.value(i))?,
                    start_ns: stored_to_ns(start.value(i)),
                    end_ns: stored_to_ns(end.value(i)),
                },
            });
        }
    }
    out.sort_by(|a, b| a.incident_id.cmp(&b.incident_id));
    Ok(out)
}

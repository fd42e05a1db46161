//! Incidents already in a store: the latest revision of each (the `incidents_latest`
//! view), as the report's slowdown objects (those that stand) or as the state a restarted
//! live analyzer resumes from.

use std::path::Path;

use super::tracker::{Published, Sighting};

use crate::columns::Columns;
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
    const FILE: &str = "(published incidents)";
    let mut out = Vec::new();
    for b in &batches {
        // Read by name and cast as needed: the store's strings come as views.
        let c = Columns::new(b, FILE);
        let (id, status, json) = (
            c.texts("incident_id")?,
            c.texts("status")?,
            c.texts("json")?,
        );
        let revision = c.ints("revision")?;
        let (start, end) = (c.times("start")?, c.times("end")?);
        for i in 0..b.num_rows() {
            let (Some(incident_id), Some(revision), Some(start_ns), Some(end_ns), Some(json)) =
                (id.get(i), revision[i], start[i], end[i], json.get(i))
            else {
                return Err(AnalyzeError::Shape {
                    file: FILE,
                    column: "incident_id, revision, start, end, json".into(),
                    detail: "NULL in a column the live analyzer always writes".into(),
                });
            };
            if end_ns < from_ns {
                continue;
            }
            out.push(Published {
                incident_id: incident_id.to_string(),
                revision,
                retracted: status.get(i) == Some("retracted"),
                sighting: Sighting {
                    slowdown: serde_json::from_str::<Slowdown>(json)?,
                    start_ns,
                    end_ns,
                },
            });
        }
    }
    out.sort_by(|a, b| a.incident_id.cmp(&b.incident_id));
    Ok(out)
}

//! The profiles captured during each slowdown, listed on it as evidence to open
//! (`profile_captured` events: XProf, PyTorch profiler, Nsight traces): those of its
//! workload (same namespace and workload; the same run where both name one) whose
//! capture interval `[time − duration_seconds, time]` (just `time` without a duration)
//! overlaps the slowdown's `[start, end]`, in time order, each url once.

use std::collections::HashSet;

use datafusion::prelude::SessionContext;

use super::Finding;
use super::read::Params;
use crate::Result;
use crate::columns::Columns;
use crate::sql::{self, symptoms::PROFILES};
use crate::symptoms::WorkloadKey;

/// A captured profile as a slowdown lists it: when its capture ended and where it opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileRef {
    pub time_ns: i64,
    pub url: String,
}

/// One captured profile: whose it is and the interval it covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    pub namespace: Option<String>,
    pub workload: Option<String>,
    pub run_id: Option<String>,
    /// `time − duration_seconds` (`time` without a duration).
    pub began_ns: i64,
    /// When the capture ended (the event's time).
    pub time_ns: i64,
    pub url: String,
}

/// The captured profiles that may overlap the window (`symptoms/profiles.sql`).
pub async fn read_captures(ctx: &SessionContext, params: &Params) -> Result<Vec<Capture>> {
    let mut out = Vec::new();
    for b in sql::collect(ctx, PROFILES, params).await? {
        let c = Columns::new(&b, PROFILES.path);
        let (ns, w, run, url) = (
            c.strings("namespace")?,
            c.strings("workload")?,
            c.strings("run_id")?,
            c.strings("url")?,
        );
        let (time, seconds) = (c.times("time")?, c.floats("duration_seconds")?);
        for i in 0..b.num_rows() {
            let (Some(time_ns), Some(url)) = (time[i], url[i].clone()) else {
                continue;
            };
            // The query keeps durations within a week: the product fits.
            let span = seconds[i].map_or(0, |s| (s * 1e9).round() as i64);
            out.push(Capture {
                namespace: ns[i].clone(),
                workload: w[i].clone(),
                run_id: run[i].clone(),
                began_ns: time_ns.saturating_sub(span),
                time_ns,
                url,
            });
        }
    }
    Ok(out)
}

/// The captures of `key`'s workload that overlap `[start_ns, end_ns]`, in time order,
/// each url once (at its first capture).
pub fn matching(
    captures: &[Capture],
    key: &WorkloadKey,
    start_ns: i64,
    end_ns: i64,
) -> Vec<ProfileRef> {
    let mut out: Vec<ProfileRef> = captures
        .iter()
        .filter(|c| {
            c.namespace == key.namespace
                && c.workload == key.workload
                && match (&c.run_id, &key.run_id) {
                    (Some(a), Some(b)) => a == b,
                    _ => true,
                }
                && c.began_ns <= end_ns
                && c.time_ns >= start_ns
        })
        .map(|c| ProfileRef {
            time_ns: c.time_ns,
            url: c.url.clone(),
        })
        .collect();
    out.sort_by(|a, b| (a.time_ns, &a.url).cmp(&(b.time_ns, &b.url)));
    let mut seen = HashSet::new();
    out.retain(|p| seen.insert(p.url.clone()));
    out
}

/// Lists on each finding the profiles captured during it.
pub async fn attach(
    ctx: &SessionContext,
    params: &Params,
    mut findings: Vec<Finding>,
) -> Result<Vec<Finding>> {
    if findings.is_empty() {
        return Ok(findings);
    }
    let captures = read_captures(ctx, params).await?;
    for f in &mut findings {
        let s = &f.symptom;
        f.profiles = matching(&captures, &s.key, s.start_ns, s.end_ns);
    }
    Ok(findings)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn capture(workload: &str, run: Option<&str>, began: i64, end: i64, url: &str) -> Capture {
        Capture {
            namespace: Some("llm".into()),
            workload: Some(workload.into()),
            run_id: run.map(Into::into),
            began_ns: began * S,
            time_ns: end * S,
            url: url.into(),
        }
    }

    /// A slowdown from 100 s to 200 s of llm/train, run r1.
    #[test]
    fn overlapping_captures_of_the_workload_in_time_order_once_each() {
        let key = WorkloadKey {
            namespace: Some("llm".into()),
            workload: Some("train".into()),
            run_id: Some("r1".into()),
        };
        let captures = [
            capture("train", Some("r1"), 150, 160, "b"),
            // Ends at the start: the intervals touch.
            capture("train", None, 90, 100, "a"),
            // Began inside, ended after the end.
            capture("train", Some("r1"), 190, 260, "c"),
            // The same url again later: listed once, at its first capture.
            capture("train", Some("r1"), 170, 170, "b"),
            // Before, after, another run, another workload.
            capture("train", Some("r1"), 10, 99, "before"),
            capture("train", Some("r1"), 201, 210, "after"),
            capture("train", Some("r2"), 150, 150, "other-run"),
            capture("serve", Some("r1"), 150, 150, "other-workload"),
        ];
        let got: Vec<(i64, String)> = matching(&captures, &key, 100 * S, 200 * S)
            .into_iter()
            .map(|p| (p.time_ns / S, p.url))
            .collect();
        let want = [(100, "a"), (160, "b"), (260, "c")].map(|(t, u)| (t, u.to_string()));
        assert_eq!(got, want);
        // A slowdown naming no run takes the profiles of every run.
        let any_run = WorkloadKey {
            run_id: None,
            ..key.clone()
        };
        let urls: Vec<String> = matching(&captures, &any_run, 150 * S, 150 * S)
            .into_iter()
            .map(|p| p.url)
            .collect();
        assert_eq!(urls, ["other-run", "b"]);
    }
}

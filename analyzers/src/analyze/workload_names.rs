//! The names users know workloads by. slurmctld and a job's output file name a Slurm job
//! by its id, sacct by its id and its name (`state/slurm_jobs.sql`); a JobSet's pods name
//! its child Jobs (`state/workload_members.sql`). The analysis runs on what the records
//! name (a requeued Slurm job keeps its id, so its restart is one run's); the workloads
//! and findings it returns name a Slurm job by its name, with the job id as its run, and a
//! child Job by its JobSet. A Slurm job submitted again under its name is then another
//! run of the same workload, as a Kubernetes Job created again under its name is.

use std::collections::BTreeMap;

use super::second_copies::Members;
use super::{Finding, Selection, WorkloadExtent};
use crate::symptoms::WorkloadKey;

/// Each named Slurm job's id and name, and each member workload's whole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkloadNames {
    by_id: BTreeMap<String, String>,
    members: Members,
}

impl WorkloadNames {
    /// From the workloads' members (`workload_members`): a Slurm job told by its id is
    /// the member of no namespace (`state/slurm_jobs.sql`: sacct's JobName), a JobSet's
    /// child Job one of its namespace.
    pub fn new(members: &Members) -> Self {
        let by_id = members
            .iter()
            .filter(|((ns, _), _)| ns.is_none())
            .map(|((_, id), name)| (id.clone(), name.clone()))
            .collect();
        WorkloadNames {
            by_id,
            members: members.clone(),
        }
    }

    /// `key` named as its users name it: a Slurm job's (no namespace, the job id as its
    /// workload) by its name, with the job id as its run unless a run is named already; a
    /// member's (a JobSet's child Job) by its whole, with its run.
    pub fn named(&self, key: &WorkloadKey) -> Option<WorkloadKey> {
        let workload = key.workload.as_deref()?;
        if key.namespace.is_none()
            && let Some(name) = self.by_id.get(workload)
        {
            return Some(WorkloadKey {
                namespace: None,
                workload: Some(name.clone()),
                run_id: key.run_id.clone().or_else(|| Some(workload.to_string())),
            });
        }
        let whole = self
            .members
            .get(&(key.namespace.clone(), workload.to_string()))?;
        Some(WorkloadKey {
            namespace: key.namespace.clone(),
            workload: Some(whole.clone()),
            run_id: key.run_id.clone(),
        })
    }

    /// Whether `sel` asks for `key`, by the job's id or by its name.
    pub fn wanted(&self, sel: &Selection, key: &WorkloadKey) -> bool {
        sel.wants(key) || self.named(key).is_some_and(|k| sel.wants(&k))
    }

    /// The findings' workloads by name.
    pub fn name_findings(&self, findings: &mut [Finding]) {
        for f in findings {
            if let Some(k) = self.named(&f.symptom.key) {
                f.symptom.key = k;
            }
        }
    }

    /// The workloads by name: two jobs of one name are one workload of two runs.
    pub fn name_workloads(&self, workloads: Vec<WorkloadExtent>) -> Vec<WorkloadExtent> {
        if self.by_id.is_empty() && self.members.is_empty() {
            return workloads;
        }
        let mut out: Vec<WorkloadExtent> = Vec::with_capacity(workloads.len());
        for mut w in workloads {
            if let Some(k) = self.named(&w.key) {
                if w.run_ids.is_empty()
                    && let Some(run) = &k.run_id
                    && w.key.run_id.is_none()
                {
                    w.run_ids.push(run.clone());
                }
                w.key = WorkloadKey { run_id: None, ..k };
            }
            match out.iter_mut().find(|o| o.key == w.key) {
                Some(o) => {
                    o.first_ns = o.first_ns.min(w.first_ns);
                    o.last_ns = o.last_ns.max(w.last_ns);
                    o.alive_ns = o.alive_ns.max(w.alive_ns);
                    o.warned_ns = o.warned_ns.max(w.warned_ns);
                    o.run_ids.extend(w.run_ids);
                    o.run_ids.sort();
                    o.run_ids.dedup();
                }
                None => out.push(w),
            }
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(ns: Option<&str>, w: &str, run: Option<&str>) -> WorkloadKey {
        WorkloadKey {
            namespace: ns.map(str::to_string),
            workload: Some(w.to_string()),
            run_id: run.map(str::to_string),
        }
    }

    fn names() -> WorkloadNames {
        WorkloadNames {
            by_id: [("482113", "llama3-8b"), ("482200", "llama3-8b")]
                .into_iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            members: [(
                (Some("ml".to_string()), "pretrain-slice-0".to_string()),
                "pretrain".to_string(),
            )]
            .into_iter()
            .collect(),
        }
    }

    fn extent(k: WorkloadKey, first: i64, last: i64) -> WorkloadExtent {
        WorkloadExtent {
            key: k,
            run_ids: Vec::new(),
            first_ns: first,
            last_ns: last,
            alive_ns: Some(last),
            warned_ns: None,
        }
    }

    #[test]
    fn a_slurm_job_is_named_by_its_name_and_run_by_its_id() {
        let n = names();
        assert_eq!(
            n.named(&key(None, "482113", None)),
            Some(key(None, "llama3-8b", Some("482113")))
        );
        // A run the job's own records name stays its run.
        assert_eq!(
            n.named(&key(None, "482113", Some("r7"))),
            Some(key(None, "llama3-8b", Some("r7")))
        );
        // Not a Slurm job: a workload of a namespace, or an id sacct never named.
        assert_eq!(n.named(&key(Some("ml"), "482113", None)), None);
        assert_eq!(n.named(&key(None, "999", None)), None);
        // A JobSet's child Job is its JobSet, with its own run.
        assert_eq!(
            n.named(&key(Some("ml"), "pretrain-slice-0", Some("r1"))),
            Some(key(Some("ml"), "pretrain", Some("r1")))
        );
    }

    #[test]
    fn a_selection_finds_a_job_by_id_or_by_name() {
        let n = names();
        let by = |w: &str| Selection {
            workload: Some(w.to_string()),
            ..Selection::default()
        };
        let job = key(None, "482113", None);
        assert!(n.wanted(&by("482113"), &job));
        assert!(n.wanted(&by("llama3-8b"), &job));
        assert!(!n.wanted(&by("other"), &job));
    }

    #[test]
    fn two_jobs_of_one_name_are_one_workload_of_two_runs() {
        let n = names();
        let out = n.name_workloads(vec![
            extent(key(None, "482200", None), 50, 90),
            extent(key(Some("ml"), "serve", None), 0, 10),
            extent(key(None, "482113", None), 10, 40),
            extent(key(None, "7", None), 5, 6),
        ]);
        let keys: Vec<_> = out.iter().map(|w| w.key.clone()).collect();
        assert_eq!(
            keys,
            vec![
                key(None, "7", None),
                key(None, "llama3-8b", None),
                key(Some("ml"), "serve", None)
            ]
        );
        let job = &out[1];
        assert_eq!(
            job.run_ids,
            vec!["482113".to_string(), "482200".to_string()]
        );
        assert_eq!(
            (job.first_ns, job.last_ns, job.alive_ns),
            (10, 90, Some(90))
        );
    }
}

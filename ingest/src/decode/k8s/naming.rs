//! Which workload (the owning Job, Deployment, JobSet, …) an object belongs to: by owner
//! references the decoder has seen (Pod, ReplicaSet and Kueue Workload objects earlier in
//! the input), else by the controllers' naming conventions.
//!
//! Naming rules (Kubernetes' generated suffixes use the alphabet `bcdfghjklmnpqrstvwxz2456789`):
//! - Deployment pod `<deployment>-<pod-template-hash>-<5 chars>` → Deployment `<deployment>`
//! - ReplicaSet `<deployment>-<pod-template-hash>` → Deployment `<deployment>`
//! - indexed Job pod `<job>-<index>-<5 chars>` → Job `<job>` (JobSet pods thus map to their child Job)
//! - Job pod `<job>-<5 chars>` → Job `<job>`
//! - StatefulSet pod `<statefulset>-<ordinal>` → StatefulSet `<statefulset>`
//! - Kueue Workload `<kind>-<owner>-<5 hex>` (`job-…`, `jobset-…`, `pod-…`, …) → that owner;
//!   a `pod-` owner maps on through the pod rules.

use std::borrow::Cow;
use std::collections::HashMap;

/// A workload: the controller kind and its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadRef<'a> {
    pub kind: Cow<'a, str>,
    pub name: Cow<'a, str>,
}

impl<'a> WorkloadRef<'a> {
    fn new(kind: impl Into<Cow<'a, str>>, name: impl Into<Cow<'a, str>>) -> Self {
        WorkloadRef {
            kind: kind.into(),
            name: name.into(),
        }
    }
}

/// Kinds that are workloads in their own right (the `workload` scope column).
pub fn is_workload_kind(kind: &str) -> bool {
    matches!(
        kind,
        "Job"
            | "Deployment"
            | "StatefulSet"
            | "DaemonSet"
            | "JobSet"
            | "CronJob"
            | "LeaderWorkerSet"
            | "RayJob"
            | "RayCluster"
            | "PyTorchJob"
            | "TFJob"
            | "MPIJob"
            | "XGBoostJob"
            | "PaddleJob"
            | "JAXJob"
            | "TrainJob"
            | "AppWrapper"
    )
}

const SAFE: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

fn is_safe_suffix(s: &str, min: usize, max: usize) -> bool {
    (min..=max).contains(&s.len()) && s.bytes().all(|b| SAFE.contains(&b))
}

/// A pod's workload from its name alone.
pub fn pod_workload_by_name(pod: &str) -> Option<WorkloadRef<'_>> {
    let (rest, last) = pod.rsplit_once('-')?;
    if rest.is_empty() {
        return None;
    }
    if is_safe_suffix(last, 5, 5) {
        if let Some((base, prev)) = rest.rsplit_once('-')
            && !base.is_empty()
        {
            if !prev.is_empty() && prev.len() <= 5 && prev.bytes().all(|b| b.is_ascii_digit()) {
                return Some(WorkloadRef::new("Job", base));
            }
            if is_safe_suffix(prev, 6, 10) {
                return Some(WorkloadRef::new("Deployment", base));
            }
        }
        return Some(WorkloadRef::new("Job", rest));
    }
    if !last.is_empty() && last.len() <= 5 && last.bytes().all(|b| b.is_ascii_digit()) {
        return Some(WorkloadRef::new("StatefulSet", rest));
    }
    None
}

/// A ReplicaSet's Deployment from its name alone.
pub fn replica_set_deployment_by_name(rs: &str) -> Option<&str> {
    let (base, hash) = rs.rsplit_once('-')?;
    (!base.is_empty() && is_safe_suffix(hash, 6, 10)).then_some(base)
}

/// Kueue's workload-name prefixes (lowercased owner kind) and the kinds they stand for.
const KUEUE_PREFIXES: &[(&str, &str)] = &[
    ("job", "Job"),
    ("jobset", "JobSet"),
    ("pod", "Pod"),
    ("rayjob", "RayJob"),
    ("raycluster", "RayCluster"),
    ("pytorchjob", "PyTorchJob"),
    ("tfjob", "TFJob"),
    ("mpijob", "MPIJob"),
    ("xgboostjob", "XGBoostJob"),
    ("paddlejob", "PaddleJob"),
    ("jaxjob", "JAXJob"),
    ("trainjob", "TrainJob"),
    ("appwrapper", "AppWrapper"),
    ("leaderworkerset", "LeaderWorkerSet"),
    ("statefulset", "StatefulSet"),
    ("deployment", "Deployment"),
];

/// The owner of a Kueue Workload from its name alone (`job-<job>-<5 hex>`).
pub fn kueue_owner_by_name(workload: &str) -> Option<WorkloadRef<'_>> {
    let (rest, hash) = workload.rsplit_once('-')?;
    if hash.len() != 5 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let (prefix, owner) = rest.split_once('-')?;
    if owner.is_empty() {
        return None;
    }
    let kind = KUEUE_PREFIXES.iter().find(|(p, _)| *p == prefix)?.1;
    Some(WorkloadRef::new(kind, owner))
}

type Key = (String, String);

/// Above this many remembered objects a map starts over (a long-running stream worker must
/// not grow without bound; naming rules still apply after a reset).
const MAX_REMEMBERED: usize = 1_000_000;

/// Ownership learned from the objects seen so far in the input.
#[derive(Debug, Default)]
pub struct Owners {
    pods: HashMap<Key, (String, String)>,
    replica_sets: HashMap<Key, String>,
    workloads: HashMap<Key, (String, String)>,
    scales: HashMap<Key, i64>,
}

fn key(ns: Option<&str>, name: &str) -> Key {
    (ns.unwrap_or("").to_string(), name.to_string())
}

fn remember<V>(map: &mut HashMap<Key, V>, k: Key, v: V) {
    if map.len() >= MAX_REMEMBERED {
        map.clear();
    }
    map.insert(k, v);
}

impl Owners {
    /// Records a pod's controlling owner (`ownerReferences`).
    pub fn learn_pod(&mut self, ns: Option<&str>, pod: &str, owner_kind: &str, owner_name: &str) {
        let w = self.resolve(ns, owner_kind, owner_name);
        let v = (w.kind.into_owned(), w.name.into_owned());
        remember(&mut self.pods, key(ns, pod), v);
    }

    /// Records a ReplicaSet's Deployment.
    pub fn learn_replica_set(&mut self, ns: Option<&str>, rs: &str, deployment: &str) {
        remember(&mut self.replica_sets, key(ns, rs), deployment.to_string());
    }

    /// Records a Kueue Workload's owner.
    pub fn learn_workload(
        &mut self,
        ns: Option<&str>,
        wl: &str,
        owner_kind: &str,
        owner_name: &str,
    ) {
        let w = self.resolve(ns, owner_kind, owner_name);
        let v = (w.kind.into_owned(), w.name.into_owned());
        remember(&mut self.workloads, key(ns, wl), v);
    }

    fn lookup<'m>(
        map: &'m HashMap<Key, (String, String)>,
        ns: Option<&str>,
        name: &str,
    ) -> Option<WorkloadRef<'m>> {
        // Allocation-free probes would need a borrowed key type; objects are few per
        // record, so the key strings are built here.
        map.get(&key(ns, name))
            .map(|(k, n)| WorkloadRef::new(k.as_str(), n.as_str()))
    }

    /// Records a controller's replica count (parallelism for a Job) and returns the one
    /// seen before, if any.
    pub fn observe_scale(
        &mut self,
        ns: Option<&str>,
        kind: &str,
        name: &str,
        value: i64,
    ) -> Option<i64> {
        let k = key(ns, &format!("{kind}/{name}"));
        let before = self.scales.get(&k).copied();
        remember(&mut self.scales, k, value);
        before
    }

    /// The workload of a pod: as learned, else by name.
    pub fn pod_workload<'a>(&self, ns: Option<&str>, pod: &'a str) -> Option<WorkloadRef<'a>> {
        if !self.pods.is_empty()
            && let Some(w) = Self::lookup(&self.pods, ns, pod)
        {
            return Some(owned(w));
        }
        pod_workload_by_name(pod)
    }

    /// The workload an object of `kind` named `name` belongs to (itself for a workload kind).
    pub fn resolve<'a>(&self, ns: Option<&str>, kind: &'a str, name: &'a str) -> WorkloadRef<'a> {
        self.workload_of(ns, kind, name)
            .unwrap_or_else(|| WorkloadRef::new(kind, name))
    }

    /// The workload an object belongs to, if it can be told.
    pub fn workload_of<'a>(
        &self,
        ns: Option<&str>,
        kind: &'a str,
        name: &'a str,
    ) -> Option<WorkloadRef<'a>> {
        match kind {
            "Pod" => self.pod_workload(ns, name),
            "ReplicaSet" => {
                if let Some(d) = self.replica_sets.get(&key(ns, name)) {
                    return Some(WorkloadRef::new("Deployment", d.clone()));
                }
                replica_set_deployment_by_name(name).map(|d| WorkloadRef::new("Deployment", d))
            }
            "Workload" => {
                if !self.workloads.is_empty()
                    && let Some(w) = Self::lookup(&self.workloads, ns, name)
                {
                    return Some(owned(w));
                }
                let owner = kueue_owner_by_name(name)?;
                if owner.kind == "Pod" {
                    return self.pod_workload(
                        ns,
                        match owner.name {
                            Cow::Borrowed(n) => n,
                            Cow::Owned(_) => return None,
                        },
                    );
                }
                Some(owner)
            }
            k if is_workload_kind(k) => Some(WorkloadRef::new(kind, name)),
            _ => None,
        }
    }
}

fn owned<'a>(w: WorkloadRef<'_>) -> WorkloadRef<'a> {
    WorkloadRef::new(w.kind.into_owned(), w.name.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pw(p: &str) -> Option<(String, String)> {
        pod_workload_by_name(p).map(|w| (w.kind.into_owned(), w.name.into_owned()))
    }

    #[test]
    fn pod_naming_rules() {
        let s = |k: &str, n: &str| Some((k.to_string(), n.to_string()));
        // 'i' and 'o' are not in the generated-suffix alphabet: no rule applies.
        assert_eq!(pw("tgi-gemma-deployment-75675f5897-7ci7o"), None);
        assert_eq!(
            pw("tgi-gemma-75675f5897-7xk2p"),
            s("Deployment", "tgi-gemma")
        );
        assert_eq!(
            pw("finetune-gemma-l4-0-vcxpz"),
            s("Job", "finetune-gemma-l4")
        );
        assert_eq!(pw("sample-job-sl4bm-7bqld"), s("Job", "sample-job-sl4bm"));
        assert_eq!(pw("web-0"), s("StatefulSet", "web"));
        assert_eq!(pw("js-workers-0-1-x7k2m"), s("Job", "js-workers-0"));
        assert_eq!(pw("standalone"), None);
        assert_eq!(pw("-"), None);
        assert_eq!(
            replica_set_deployment_by_name("nginx-deployment-75675f5897"),
            Some("nginx-deployment")
        );
    }

    #[test]
    fn kueue_names() {
        let w = kueue_owner_by_name("job-sample-job-team-a-mbd4h-1b468").unwrap();
        assert_eq!(
            (w.kind.as_ref(), w.name.as_ref()),
            ("Job", "sample-job-team-a-mbd4h")
        );
        assert!(kueue_owner_by_name("sample-job-sl4bm").is_none());
        let o = Owners::default();
        let w = o
            .workload_of(
                Some("llm"),
                "Workload",
                "pod-tgi-gemma-75675f5897-7xk2p-3af0c",
            )
            .unwrap();
        assert_eq!(
            (w.kind.as_ref(), w.name.as_ref()),
            ("Deployment", "tgi-gemma")
        );
    }

    #[test]
    fn learned_owners_win() {
        let mut o = Owners::default();
        o.learn_replica_set(Some("ns"), "odd-name", "my-deploy");
        o.learn_pod(Some("ns"), "p1", "ReplicaSet", "odd-name");
        let w = o.pod_workload(Some("ns"), "p1").unwrap();
        assert_eq!(
            (w.kind.as_ref(), w.name.as_ref()),
            ("Deployment", "my-deploy")
        );
        o.learn_workload(Some("ns"), "wl-1", "JobSet", "train");
        let w = o.workload_of(Some("ns"), "Workload", "wl-1").unwrap();
        assert_eq!(w.name, "train");
        assert!(o.workload_of(Some("other"), "Workload", "wl-1").is_none());
    }
}

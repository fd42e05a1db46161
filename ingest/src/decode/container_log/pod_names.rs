//! Who wrote a container log: namespace, pod and container from the kubelet's log paths,
//! and the owning workload and pod index from the controllers' pod naming rules.

/// Namespace, pod and container named by a log file's path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathScope {
    pub namespace: Option<String>,
    pub pod: Option<String>,
    pub container: Option<String>,
}

/// Reads the kubelet's two layouts:
/// `/var/log/pods/<ns>_<pod>_<uid>/<container>/<N>.log` and
/// `/var/log/containers/<pod>_<ns>_<container>-<64 hex id>.log`. Anything else names
/// nothing (a plain `kubectl logs` file: its pod comes from `--pod` or the file name).
pub fn scope_from_path(path: &str) -> PathScope {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    if let Some(i) = parts.iter().position(|p| *p == "pods")
        && let (Some(dir), Some(container)) = (parts.get(i + 1), parts.get(i + 2))
    {
        let fields: Vec<&str> = dir.splitn(3, '_').collect();
        if fields.len() == 3 && !fields[0].is_empty() && !fields[1].is_empty() {
            return PathScope {
                namespace: Some(fields[0].to_string()),
                pod: Some(fields[1].to_string()),
                container: (parts.len() > i + 3).then(|| container.to_string()),
            };
        }
    }
    if let Some(i) = parts.iter().position(|p| *p == "containers")
        && let Some(file) = parts.get(i + 1)
    {
        let stem = file.strip_suffix(".log").unwrap_or(file);
        let fields: Vec<&str> = stem.splitn(3, '_').collect();
        if fields.len() == 3 {
            // The container name is followed by `-<container id>` (64 hex digits).
            let container = match fields[2].rsplit_once('-') {
                Some((name, id)) if id.len() >= 12 && id.bytes().all(|c| c.is_ascii_hexdigit()) => {
                    name
                }
                _ => fields[2],
            };
            return PathScope {
                namespace: Some(fields[1].to_string()),
                pod: Some(fields[0].to_string()),
                container: Some(container.to_string()),
            };
        }
    }
    PathScope::default()
}

/// A pod name as a file name (`finetune-0-abcde.log`, `trainer-0-x7k2p_stdout.txt`): the
/// stem, if it looks like a Kubernetes object name.
pub fn pod_from_file_name(path: &str) -> Option<String> {
    let file = path.rsplit('/').next()?;
    let stem = file.split('.').next()?;
    let stem = stem.split('_').next()?;
    let ok = !stem.is_empty()
        && stem.len() <= 253
        && stem
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && stem.contains('-');
    ok.then(|| stem.to_string())
}

/// The Slurm job whose output a file is, by Slurm's default output file name:
/// `slurm-<job id>.out` (`slurm-%j.out`), `slurm-<array job>_<task>.out` (`slurm-%A_%a.out`).
pub fn slurm_job_from_file_name(path: &str) -> Option<String> {
    let file = path.rsplit('/').next()?;
    let id = file.strip_prefix("slurm-")?.strip_suffix(".out")?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    let ok = match id.split_once('_') {
        Some((job, task)) => digits(job) && digits(task),
        None => digits(id),
    };
    ok.then(|| id.to_string())
}

/// The pod a file is named after, where its stem ends as Kubernetes names the pods it
/// generates: `<owner>-<five random characters>` (a Job's or JobSet's pods, a
/// ReplicaSet's `<deployment>-<template hash>-<five>`), drawn from the alphabet the API
/// server draws them from (no vowels, no `0`, `1`, `3`). A scrape saved per pod
/// (`vllm-chat-5f7c9d8b46-k2v7x.prom`) names its pod this way; a node's file name or a
/// file numbered in sequence does not.
pub fn generated_pod_from_file_name(path: &str) -> Option<String> {
    const RANDOM: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let pod = pod_from_file_name(path)?;
    let (owner, suffix) = pod.rsplit_once('-')?;
    let generated =
        !owner.is_empty() && suffix.len() == 5 && suffix.bytes().all(|c| RANDOM.contains(&c));
    generated.then_some(pod)
}

/// The workload named by pod labels (Fluent Bit / Vector `kubernetes.labels`), most
/// specific first.
pub const WORKLOAD_LABELS: [&str; 6] = [
    "jobset.sigs.k8s.io/jobset-name",
    "training.kubeflow.org/job-name",
    "batch.kubernetes.io/job-name",
    "job-name",
    "app.kubernetes.io/name",
    "app",
];

/// The Deployment of a ReplicaSet's pod: `pod` is `<deployment>-<hash>-<five>` where
/// `hash` is its `pod-template-hash` label.
pub fn deployment_of<'p>(pod: &'p str, hash: &str) -> Option<&'p str> {
    let (owner, _) = pod.rsplit_once('-')?;
    let deployment = owner.strip_suffix(hash)?.strip_suffix('-')?;
    (!deployment.is_empty() && !hash.is_empty()).then_some(deployment)
}

/// Pod labels that carry the pod's index within its workload.
pub const INDEX_LABELS: [&str; 3] = [
    "batch.kubernetes.io/job-completion-index",
    "training.kubeflow.org/replica-index",
    "apps.kubernetes.io/pod-index",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replicaset_pod_names_its_deployment_by_its_template_hash() {
        assert_eq!(
            deployment_of("tgi-mistral-7b-rt2q5cghxc-w4rn6", "rt2q5cghxc"),
            Some("tgi-mistral-7b")
        );
        assert_eq!(
            deployment_of("tgi-mistral-7b-rt2q5cghxc-w4rn6", "other"),
            None
        );
        assert_eq!(deployment_of("rt2q5cghxc-w4rn6", "rt2q5cghxc"), None);
    }

    #[test]
    fn slurm_output_files_name_their_job() {
        let job = |p| slurm_job_from_file_name(p);
        assert_eq!(job("/logs/slurm-48213.out").as_deref(), Some("48213"));
        assert_eq!(job("slurm-1200_7.out").as_deref(), Some("1200_7"));
        for p in [
            "slurm-abc.out",
            "slurm-48213.log",
            "train-48213.out",
            "slurm-.out",
        ] {
            assert_eq!(job(p), None, "{p}");
        }
    }

    #[test]
    fn generated_pod_names_from_file_names() {
        let pod = |p| generated_pod_from_file_name(p);
        assert_eq!(
            pod("serving/vllm-mistral-7b-instruct-5f7c9d8b46-k2v7x.prom.gz").as_deref(),
            Some("vllm-mistral-7b-instruct-5f7c9d8b46-k2v7x")
        );
        assert_eq!(
            pod("/x/finetune-0-vcxpz.prom").as_deref(),
            Some("finetune-0-vcxpz")
        );
        for p in [
            "dcgm/gke-serving-usw4-l4-pool-3e1d9b27-lt5m.prom",
            "dcgm/ip-10-8-38-7.prom",
            "scrapes/scrape-00012.prom",
            "metrics.prom",
            "serving/vllm-chat-abcde.prom",
        ] {
            assert_eq!(pod(p), None, "{p}");
        }
    }

    #[test]
    fn kubelet_paths() {
        let s = scope_from_path(
            "/var/log/pods/llm_finetune-gemma-l4-0-vcxpz_0f1e2d3c-aaaa-bbbb-cccc-0123456789ab/trainer/0.log",
        );
        assert_eq!(s.namespace.as_deref(), Some("llm"));
        assert_eq!(s.pod.as_deref(), Some("finetune-gemma-l4-0-vcxpz"));
        assert_eq!(s.container.as_deref(), Some("trainer"));
        let id = "4f3c2b1a".repeat(8);
        let s = scope_from_path(&format!(
            "/var/log/containers/tgi-7d9f8b6c5d-x2x9k_serving_tgi-{id}.log"
        ));
        assert_eq!(s.namespace.as_deref(), Some("serving"));
        assert_eq!(s.pod.as_deref(), Some("tgi-7d9f8b6c5d-x2x9k"));
        assert_eq!(s.container.as_deref(), Some("tgi"));
        assert_eq!(scope_from_path("logs/trainer.log"), PathScope::default());
        assert_eq!(
            pod_from_file_name("/tmp/finetune-0-vcxpz.log").as_deref(),
            Some("finetune-0-vcxpz")
        );
        assert_eq!(pod_from_file_name("/tmp/Train.log"), None);
    }
}

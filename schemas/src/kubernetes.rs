//! Kubernetes' naming rules: the workload a pod belongs to by its controller's naming.

/// The owner of a pod named by a controller, and the pod's index where its name has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodOwner<'a> {
    pub workload: &'a str,
    pub index: Option<i32>,
}

/// The characters Kubernetes uses for generated name suffixes (`utilrand.String`) and
/// pod-template hashes: no vowels, no `0 1 3`.
fn is_generated(s: &str) -> bool {
    s.bytes()
        .all(|c| b"bcdfghjklmnpqrstvwxz2456789".contains(&c))
}

/// The workload a pod belongs to by the controllers' naming rules:
/// `<deployment>-<pod-template-hash>-<5 chars>`, `<job>-<index>-<5 chars>` (indexed Job,
/// JobSet), `<job>-<5 chars>` (Job), `<statefulset or kubeflow job>-<index>`
/// (StatefulSet, `<job>-worker-<n>`: the workload is the name before the role).
/// `None` when the name follows no rule.
pub fn owner_from_pod_name(pod: &str) -> Option<PodOwner<'_>> {
    let (head, last) = pod.rsplit_once('-')?;
    if head.is_empty() {
        return None;
    }
    if last.len() == 5 && is_generated(last) {
        let (head2, middle) = match head.rsplit_once('-') {
            Some(p) if !p.0.is_empty() => p,
            _ => {
                return Some(PodOwner {
                    workload: head,
                    index: None,
                });
            }
        };
        if (6..=10).contains(&middle.len()) && is_generated(middle) {
            return Some(PodOwner {
                workload: head2,
                index: None,
            });
        }
        if let Ok(index) = middle.parse::<i32>()
            && middle.len() <= 6
        {
            return Some(PodOwner {
                workload: head2,
                index: Some(index),
            });
        }
        return Some(PodOwner {
            workload: head,
            index: None,
        });
    }
    if let Ok(index) = last.parse::<i32>()
        && last.len() <= 6
    {
        // Kubeflow training operators name pods `<job>-master-0` / `<job>-worker-3`.
        for role in [
            "-master",
            "-worker",
            "-launcher",
            "-chief",
            "-ps",
            "-evaluator",
        ] {
            if let Some(job) = head.strip_suffix(role)
                && !job.is_empty()
            {
                return Some(PodOwner {
                    workload: job,
                    index: Some(index),
                });
            }
        }
        return Some(PodOwner {
            workload: head,
            index: Some(index),
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller_naming_rules() {
        let o = owner_from_pod_name("finetune-gemma-l4-0-vcxpz").unwrap();
        assert_eq!((o.workload, o.index), ("finetune-gemma-l4", Some(0)));
        let o = owner_from_pod_name("tgi-gemma-7d9f8b6c5d-x2x9k").unwrap();
        assert_eq!((o.workload, o.index), ("tgi-gemma", None));
        let o = owner_from_pod_name("pi-job-qz2tk").unwrap();
        assert_eq!((o.workload, o.index), ("pi-job", None));
        let o = owner_from_pod_name("bert-worker-3").unwrap();
        assert_eq!((o.workload, o.index), ("bert", Some(3)));
        let o = owner_from_pod_name("web-2").unwrap();
        assert_eq!((o.workload, o.index), ("web", Some(2)));
        assert_eq!(owner_from_pod_name("standalone"), None);
        assert_eq!(owner_from_pod_name("-x"), None);
    }
}

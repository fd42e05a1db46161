//! Borrowed serde views of the Kubernetes and Kueue objects the k8s decoder reads: only
//! the fields it uses, strings borrowed from the input where the input allows it, and
//! scalars read leniently (YAML turns `status: True` into a bool and `gpu: 4` into a
//! number; JSON from the API spells both as strings).

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

/// A scalar read as text whatever its JSON/YAML type (string, number or bool).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Text<'a>(pub Cow<'a, str>);

impl<'a> Text<'a> {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string, number or bool")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Text(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Text(Cow::Owned(v.to_string())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Text(Cow::Owned(v)))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Text(Cow::Borrowed(if v { "True" } else { "False" })))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Text(Cow::Owned(v.to_string())))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Text(Cow::Owned(v.to_string())))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Text(Cow::Owned(v.to_string())))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Text(Cow::Borrowed("")))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TextVisitor)
    }
}

/// An integer given as a number or a numeric string.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Int(pub i64);

struct IntVisitor;

impl<'de> Visitor<'de> for IntVisitor {
    type Value = Int;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Int, E> {
        Ok(Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Int, E> {
        i64::try_from(v)
            .map(Int)
            .map_err(|_| E::custom(format!("integer {v} out of range")))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Int, E> {
        if v.fract() == 0.0 && v.abs() < 9.0e18 {
            Ok(Int(v as i64))
        } else {
            Err(E::custom(format!("{v} is not an integer")))
        }
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Int, E> {
        v.trim()
            .parse()
            .map(Int)
            .map_err(|_| E::custom(format!("'{v}' is not an integer")))
    }
}

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(IntVisitor)
    }
}

/// A string-to-scalar map (labels, annotations, resource lists, flavors) kept in input order.
#[derive(Debug, Clone, Default)]
pub struct Pairs<'a>(pub Vec<(Text<'a>, Text<'a>)>);

impl<'a> Pairs<'a> {
    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k.as_str() == key)
            .map(|(_, v)| v.as_str())
    }
}

struct PairsVisitor;

impl<'de> Visitor<'de> for PairsVisitor {
    type Value = Pairs<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of scalars")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut v = Vec::new();
        while let Some((k, val)) = map.next_entry::<Text<'de>, Option<Text<'de>>>()? {
            v.push((k, val.unwrap_or_default()));
        }
        Ok(Pairs(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Pairs::default())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Pairs<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(PairsVisitor)
    }
}

/// Fields read first from every document to decide what it is.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Head<'a> {
    #[serde(borrow)]
    pub kind: Option<Text<'a>>,
    #[serde(borrow)]
    pub api_version: Option<Text<'a>>,
    /// A watch event's `type` (or an Event's Normal/Warning).
    #[serde(borrow, rename = "type")]
    pub type_: Option<&'a serde_json::value::RawValue>,
    /// A watch event's object.
    #[serde(borrow)]
    pub object: Option<&'a serde_json::value::RawValue>,
    /// A `List`'s items.
    #[serde(borrow)]
    pub items: Option<Vec<&'a serde_json::value::RawValue>>,
    /// An Event's subject and reason: how an Event is known without its `kind`, as
    /// kubernetes-event-exporter and Fluent Bit's `kubernetes_events` input ship it.
    pub involved_object: Option<serde::de::IgnoredAny>,
    pub regarding: Option<serde::de::IgnoredAny>,
    pub reason: Option<serde::de::IgnoredAny>,
}

impl Head<'_> {
    /// An object without `kind` that has an Event's subject and reason is an Event.
    pub fn event_shaped(&self) -> bool {
        (self.involved_object.is_some() || self.regarding.is_some()) && self.reason.is_some()
    }
}

/// `metadata`.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct Meta<'a> {
    #[serde(borrow)]
    pub name: Option<Text<'a>>,
    #[serde(borrow)]
    pub generate_name: Option<Text<'a>>,
    #[serde(borrow)]
    pub namespace: Option<Text<'a>>,
    #[serde(borrow)]
    pub uid: Option<Text<'a>>,
    #[serde(borrow)]
    pub creation_timestamp: Option<Text<'a>>,
    #[serde(borrow)]
    pub deletion_timestamp: Option<Text<'a>>,
    pub deletion_grace_period_seconds: Option<Int>,
    pub generation: Option<Int>,
    #[serde(borrow)]
    pub labels: Option<Pairs<'a>>,
    #[serde(borrow)]
    pub owner_references: Option<Vec<OwnerRef<'a>>>,
    #[serde(borrow)]
    pub managed_fields: Option<Vec<ManagedField<'a>>>,
}

impl<'a> Meta<'a> {
    /// A label's value.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.as_ref().and_then(|l| l.get(key))
    }

    /// The controlling owner reference (or the first one).
    pub fn owner(&self) -> Option<&OwnerRef<'a>> {
        let refs = self.owner_references.as_deref()?;
        refs.iter()
            .find(|r| r.controller == Some(true))
            .or_else(|| refs.first())
    }
}

/// `metadata.ownerReferences[]`.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct OwnerRef<'a> {
    #[serde(borrow)]
    pub kind: Option<Text<'a>>,
    #[serde(borrow)]
    pub name: Option<Text<'a>>,
    #[serde(borrow)]
    pub uid: Option<Text<'a>>,
    pub controller: Option<bool>,
}

/// `metadata.managedFields[]`: who last wrote which part of the object, and when.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct ManagedField<'a> {
    #[serde(borrow)]
    pub time: Option<Text<'a>>,
    #[serde(borrow)]
    pub subresource: Option<Text<'a>>,
}

/// `involvedObject` / `regarding` / `related`.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct ObjectRef<'a> {
    #[serde(borrow)]
    pub kind: Option<Text<'a>>,
    #[serde(borrow)]
    pub namespace: Option<Text<'a>>,
    #[serde(borrow)]
    pub name: Option<Text<'a>>,
    #[serde(borrow)]
    pub uid: Option<Text<'a>>,
    #[serde(borrow)]
    pub api_version: Option<Text<'a>>,
    #[serde(borrow)]
    pub field_path: Option<Text<'a>>,
}

/// `source` / `deprecatedSource`.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct EventSource<'a> {
    #[serde(borrow)]
    pub component: Option<Text<'a>>,
    #[serde(borrow)]
    pub host: Option<Text<'a>>,
}

/// `series`.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct Series<'a> {
    pub count: Option<Int>,
    #[serde(borrow)]
    pub last_observed_time: Option<Text<'a>>,
}

/// A core/v1 or events.k8s.io/v1 Event: the union of both APIs' fields.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct Event<'a> {
    #[serde(borrow)]
    pub metadata: Meta<'a>,
    #[serde(borrow)]
    pub involved_object: Option<ObjectRef<'a>>,
    #[serde(borrow)]
    pub regarding: Option<ObjectRef<'a>>,
    #[serde(borrow)]
    pub related: Option<ObjectRef<'a>>,
    #[serde(borrow)]
    pub reason: Option<Text<'a>>,
    #[serde(borrow)]
    pub message: Option<Text<'a>>,
    #[serde(borrow)]
    pub note: Option<Text<'a>>,
    #[serde(borrow, rename = "type")]
    pub type_: Option<Text<'a>>,
    #[serde(borrow)]
    pub action: Option<Text<'a>>,
    #[serde(borrow)]
    pub first_timestamp: Option<Text<'a>>,
    #[serde(borrow)]
    pub last_timestamp: Option<Text<'a>>,
    #[serde(borrow)]
    pub event_time: Option<Text<'a>>,
    pub count: Option<Int>,
    #[serde(borrow)]
    pub deprecated_first_timestamp: Option<Text<'a>>,
    #[serde(borrow)]
    pub deprecated_last_timestamp: Option<Text<'a>>,
    pub deprecated_count: Option<Int>,
    #[serde(borrow)]
    pub series: Option<Series<'a>>,
    #[serde(borrow)]
    pub source: Option<EventSource<'a>>,
    #[serde(borrow)]
    pub deprecated_source: Option<EventSource<'a>>,
    #[serde(borrow)]
    pub reporting_component: Option<Text<'a>>,
    #[serde(borrow)]
    pub reporting_controller: Option<Text<'a>>,
    #[serde(borrow)]
    pub reporting_instance: Option<Text<'a>>,
}

/// A `status.conditions[]` entry (Pod, Node, Job, Deployment, Workload).
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct Condition<'a> {
    #[serde(borrow, rename = "type")]
    pub type_: Option<Text<'a>>,
    #[serde(borrow)]
    pub status: Option<Text<'a>>,
    #[serde(borrow)]
    pub reason: Option<Text<'a>>,
    #[serde(borrow)]
    pub message: Option<Text<'a>>,
    #[serde(borrow)]
    pub last_transition_time: Option<Text<'a>>,
    #[serde(borrow)]
    pub last_probe_time: Option<Text<'a>>,
    #[serde(borrow)]
    pub last_update_time: Option<Text<'a>>,
}

/// `resources`.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct Resources<'a> {
    #[serde(borrow)]
    pub requests: Option<Pairs<'a>>,
    #[serde(borrow)]
    pub limits: Option<Pairs<'a>>,
}

/// A container of a pod spec.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct Container<'a> {
    #[serde(borrow)]
    pub name: Option<Text<'a>>,
    #[serde(borrow)]
    pub resources: Option<Resources<'a>>,
}

/// The parts of a pod spec the decoder reads.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct PodSpec<'a> {
    #[serde(borrow)]
    pub node_name: Option<Text<'a>>,
    pub priority: Option<Int>,
    #[serde(borrow)]
    pub priority_class_name: Option<Text<'a>>,
    #[serde(borrow)]
    pub containers: Option<Vec<Container<'a>>>,
}

/// A pod template (`spec.template`, `podSets[].template`).
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct PodTemplate<'a> {
    #[serde(borrow)]
    pub spec: Option<PodSpec<'a>>,
}

/// A container's `state` / `lastState`.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct ContainerState<'a> {
    #[serde(borrow)]
    pub terminated: Option<Terminated<'a>>,
    #[serde(borrow)]
    pub waiting: Option<Waiting<'a>>,
}

/// `state.terminated`.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct Terminated<'a> {
    #[serde(borrow)]
    pub reason: Option<Text<'a>>,
    #[serde(borrow)]
    pub message: Option<Text<'a>>,
    pub exit_code: Option<Int>,
    #[serde(borrow)]
    pub started_at: Option<Text<'a>>,
    #[serde(borrow)]
    pub finished_at: Option<Text<'a>>,
}

/// `state.waiting`.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct Waiting<'a> {
    #[serde(borrow)]
    pub reason: Option<Text<'a>>,
}

/// `status.containerStatuses[]`.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerStatus<'a> {
    #[serde(borrow)]
    pub name: Option<Text<'a>>,
    pub restart_count: Option<Int>,
    #[serde(borrow)]
    pub state: Option<ContainerState<'a>>,
    #[serde(borrow)]
    pub last_state: Option<ContainerState<'a>>,
}

/// A Pod's status.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct PodStatus<'a> {
    #[serde(borrow)]
    pub phase: Option<Text<'a>>,
    #[serde(borrow)]
    pub reason: Option<Text<'a>>,
    #[serde(borrow)]
    pub message: Option<Text<'a>>,
    #[serde(borrow)]
    pub start_time: Option<Text<'a>>,
    #[serde(borrow)]
    pub conditions: Option<Vec<Condition<'a>>>,
    #[serde(borrow)]
    pub container_statuses: Option<Vec<ContainerStatus<'a>>>,
    #[serde(borrow)]
    pub init_container_statuses: Option<Vec<ContainerStatus<'a>>>,
}

/// A core/v1 Pod.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct Pod<'a> {
    #[serde(borrow)]
    pub metadata: Meta<'a>,
    #[serde(borrow)]
    pub spec: PodSpec<'a>,
    #[serde(borrow)]
    pub status: PodStatus<'a>,
}

/// `spec.taints[]`.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct Taint<'a> {
    #[serde(borrow)]
    pub key: Option<Text<'a>>,
    #[serde(borrow)]
    pub value: Option<Text<'a>>,
    #[serde(borrow)]
    pub effect: Option<Text<'a>>,
    #[serde(borrow)]
    pub time_added: Option<Text<'a>>,
}

/// A Node's spec.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeSpec<'a> {
    pub unschedulable: Option<bool>,
    #[serde(borrow)]
    pub taints: Option<Vec<Taint<'a>>>,
    #[serde(borrow, rename = "providerID")]
    pub provider_id: Option<Text<'a>>,
}

/// A Node's status.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct NodeStatus<'a> {
    #[serde(borrow)]
    pub conditions: Option<Vec<Condition<'a>>>,
    #[serde(borrow)]
    pub capacity: Option<Pairs<'a>>,
    #[serde(borrow)]
    pub allocatable: Option<Pairs<'a>>,
}

/// A core/v1 Node.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct Node<'a> {
    #[serde(borrow)]
    pub metadata: Meta<'a>,
    #[serde(borrow)]
    pub spec: NodeSpec<'a>,
    #[serde(borrow)]
    pub status: NodeStatus<'a>,
}

/// The spec fields of a Job / Deployment / ReplicaSet / StatefulSet / JobSet the decoder reads.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct ControllerSpec<'a> {
    pub replicas: Option<Int>,
    pub parallelism: Option<Int>,
    pub completions: Option<Int>,
    pub suspend: Option<bool>,
    pub paused: Option<bool>,
    pub backoff_limit: Option<Int>,
    #[serde(borrow)]
    pub completion_mode: Option<Text<'a>>,
    #[serde(borrow)]
    pub template: Option<PodTemplate<'a>>,
    /// A JobSet's Jobs: how many of each template.
    #[serde(borrow)]
    pub replicated_jobs: Option<Vec<ReplicatedJob<'a>>>,
}

/// `spec.replicatedJobs[]` of a JobSet: a Job template and how many Jobs of it run.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct ReplicatedJob<'a> {
    #[serde(borrow)]
    pub name: Option<Text<'a>>,
    pub replicas: Option<Int>,
}

/// The status fields of a Job / Deployment the decoder reads.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct ControllerStatus<'a> {
    #[serde(borrow)]
    pub conditions: Option<Vec<Condition<'a>>>,
    #[serde(borrow)]
    pub start_time: Option<Text<'a>>,
    #[serde(borrow)]
    pub completion_time: Option<Text<'a>>,
}

/// A batch/v1 Job, apps/v1 Deployment, ReplicaSet or StatefulSet, or a JobSet.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct Controller<'a> {
    #[serde(borrow)]
    pub metadata: Meta<'a>,
    #[serde(borrow)]
    pub spec: ControllerSpec<'a>,
    #[serde(borrow)]
    pub status: ControllerStatus<'a>,
}

/// `spec.podSets[]` of a Kueue Workload.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct PodSet<'a> {
    #[serde(borrow)]
    pub name: Option<Text<'a>>,
    pub count: Option<Int>,
    #[serde(borrow)]
    pub template: Option<PodTemplate<'a>>,
}

/// `spec.priorityClassRef` (kueue v1beta2).
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct PriorityClassRef<'a> {
    #[serde(borrow)]
    pub name: Option<Text<'a>>,
}

/// A Kueue Workload's spec.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct WorkloadSpec<'a> {
    #[serde(borrow)]
    pub queue_name: Option<Text<'a>>,
    pub priority: Option<Int>,
    #[serde(borrow)]
    pub priority_class_name: Option<Text<'a>>,
    #[serde(borrow)]
    pub priority_class_source: Option<Text<'a>>,
    #[serde(borrow)]
    pub priority_class_ref: Option<PriorityClassRef<'a>>,
    #[serde(borrow)]
    pub pod_sets: Option<Vec<PodSet<'a>>>,
    pub active: Option<bool>,
}

/// `status.admission.podSetAssignments[]`.
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct PodSetAssignment<'a> {
    #[serde(borrow)]
    pub name: Option<Text<'a>>,
    #[serde(borrow)]
    pub flavors: Option<Pairs<'a>>,
}

/// `status.admission`.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct Admission<'a> {
    #[serde(borrow)]
    pub cluster_queue: Option<Text<'a>>,
    #[serde(borrow)]
    pub pod_set_assignments: Option<Vec<PodSetAssignment<'a>>>,
}

/// `status.requeueState`.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct RequeueState<'a> {
    pub count: Option<Int>,
    #[serde(borrow)]
    pub requeue_at: Option<Text<'a>>,
}

/// A Kueue Workload's status.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct WorkloadStatus<'a> {
    #[serde(borrow)]
    pub admission: Option<Admission<'a>>,
    #[serde(borrow)]
    pub conditions: Option<Vec<Condition<'a>>>,
    #[serde(borrow)]
    pub requeue_state: Option<RequeueState<'a>>,
}

/// A kueue.x-k8s.io Workload (v1beta1 or v1beta2).
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
pub struct Workload<'a> {
    #[serde(borrow)]
    pub metadata: Meta<'a>,
    #[serde(borrow)]
    pub spec: WorkloadSpec<'a>,
    #[serde(borrow)]
    pub status: WorkloadStatus<'a>,
}

/// The text of an optional field, or `None` when absent or empty.
pub fn text<'x>(t: &'x Option<Text<'_>>) -> Option<&'x str> {
    t.as_ref().map(Text::as_str).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_scalars() {
        let c: Condition = serde_json::from_str(r#"{"type":"Ready","status":true}"#).unwrap();
        assert_eq!(text(&c.status), Some("True"));
        let p: Pairs = serde_json::from_str(r#"{"nvidia.com/gpu":4,"cpu":"500m"}"#).unwrap();
        assert_eq!(p.get("nvidia.com/gpu"), Some("4"));
        assert_eq!(p.get("cpu"), Some("500m"));
        let s: Series = serde_json::from_str(r#"{"count":"3"}"#).unwrap();
        assert_eq!(s.count, Some(Int(3)));
        assert!(serde_json::from_str::<Series>(r#"{"count":"x"}"#).is_err());
    }

    #[test]
    fn strings_are_borrowed_when_unescaped() {
        let src = r#"{"kind":"Pod","name":"a\"b"}"#;
        let h: Head = serde_json::from_str(src).unwrap();
        assert!(matches!(h.kind.unwrap().0, Cow::Borrowed("Pod")));
    }
}

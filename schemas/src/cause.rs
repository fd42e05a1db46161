//! The root-cause taxonomy of `contracts/causes.md`: ids are `layer.name`.

use std::fmt;
use std::str::FromStr;

use crate::{Layer, UnknownId};

macro_rules! causes {
    ($( $(#[$doc:meta])* $variant:ident => $id:literal, $layer:ident; )*) => {
        /// A typed state change that explains a symptom.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Cause {
            $( $(#[$doc])* $variant, )*
        }

        impl Cause {
            /// Every cause, in the order of `contracts/causes.md`.
            pub const ALL: &'static [Cause] = &[$(Cause::$variant),*];

            /// The stable id, `layer.name` (or `unknown`).
            pub fn id(self) -> &'static str {
                match self { $(Cause::$variant => $id,)* }
            }

            /// The layer the cause belongs to; `None` for `unknown`.
            pub fn layer(self) -> Option<Layer> {
                match self { $(Cause::$variant => causes!(@layer $layer),)* }
            }
        }
    };
    (@layer none) => { None };
    (@layer $l:ident) => { Some(Layer::$l) };
}

causes! {
    /// A GPU failed or fell off the bus (Xid 79, 119/120, 154).
    GpuFailure => "infrastructure.gpu_failure", Infrastructure;
    /// Uncorrectable or accumulating GPU memory errors.
    GpuMemoryError => "infrastructure.gpu_memory_error", Infrastructure;
    /// NVLink or NVSwitch degraded.
    NvlinkError => "infrastructure.nvlink_error", Infrastructure;
    /// Clocks cut for temperature.
    ThermalThrottle => "infrastructure.thermal_throttle", Infrastructure;
    /// Clocks cut for power.
    PowerThrottle => "infrastructure.power_throttle", Infrastructure;
    /// NIC link flaps or errors.
    NetworkDegraded => "infrastructure.network_degraded", Infrastructure;
    /// A node went NotReady, rebooted or stopped answering.
    NodeFailure => "infrastructure.node_failure", Infrastructure;
    /// Planned host maintenance or repair.
    HostMaintenance => "infrastructure.host_maintenance", Infrastructure;
    /// Checkpoint or data storage slow or failing.
    StorageSlow => "infrastructure.storage_slow", Infrastructure;
    /// Host memory/CPU/disk pressure, including the kubelet evictions it causes.
    HostResourcePressure => "infrastructure.host_resource_pressure", Infrastructure;
    /// Evicted to make room for a higher-priority or reclaiming workload.
    Preemption => "orchestrator.preemption", Orchestrator;
    /// Waiting for admission or quota.
    QuotaWait => "orchestrator.quota_wait", Orchestrator;
    /// Pods cannot be placed.
    SchedulingFailure => "orchestrator.scheduling_failure", Orchestrator;
    /// Evicted by an orchestrator policy, not for preemption nor node health.
    Eviction => "orchestrator.eviction", Orchestrator;
    /// A container was OOM-killed and restarted.
    OomKilled => "orchestrator.oom_killed", Orchestrator;
    /// Containers crash and back off.
    CrashLoop => "orchestrator.crash_loop", Orchestrator;
    /// Image pull slow or failing.
    ImagePull => "orchestrator.image_pull", Orchestrator;
    /// The workload's own replica count or slice changed.
    ScaleChange => "orchestrator.scale_change", Orchestrator;
    /// Another workload on the same node/GPUs competes.
    NoisyNeighbor => "orchestrator.noisy_neighbor", Orchestrator;
    /// Checkpointing costs too much.
    CheckpointSave => "framework.checkpoint_save", Framework;
    /// The restore itself is abnormally slow.
    CheckpointRestore => "framework.checkpoint_restore", Framework;
    /// A collective hung until the watchdog fired.
    CollectiveTimeout => "framework.collective_timeout", Framework;
    /// The program recompiled.
    Recompilation => "framework.recompilation", Framework;
    /// The input pipeline cannot keep up.
    DataloaderStall => "framework.dataloader_stall", Framework;
    /// One rank is slow and holds back the rest.
    StragglerRank => "framework.straggler_rank", Framework;
    /// A serving workload receives far more requests than its own baseline.
    RequestSurge => "framework.request_surge", Framework;
    /// A serving engine's KV cache is full: requests preempted, swapped or recomputed.
    KvCachePressure => "framework.kv_cache_pressure", Framework;
    /// The run's configuration changed against its baseline.
    ConfigChange => "framework.config_change", Framework;
    /// The symptom is real; nothing in the log explains it.
    Unknown => "unknown", none;
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl FromStr for Cause {
    type Err = UnknownId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Cause::ALL
            .iter()
            .copied()
            .find(|c| c.id() == s)
            .ok_or_else(|| UnknownId {
                what: "cause",
                value: s.to_string(),
            })
    }
}

impl serde::Serialize for Cause {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

impl<'de> serde::Deserialize<'de> for Cause {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cause_round_trips_through_its_id() {
        for &c in Cause::ALL {
            assert_eq!(c.id().parse::<Cause>().unwrap(), c);
            match c.layer() {
                Some(l) => assert!(c.id().starts_with(&format!("{l}."))),
                None => assert_eq!(c, Cause::Unknown),
            }
        }
        assert_eq!(Cause::ALL.len(), 29);
        assert!("infrastructure.cosmic_ray".parse::<Cause>().is_err());
    }
}

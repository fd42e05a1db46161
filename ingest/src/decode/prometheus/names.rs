//! Which system a Prometheus metric comes from (layer and source), and the normalized
//! names of the metrics analyzers query (see the table in the `prometheus` module docs).

use whyslow_schemas::Layer;

/// The exporter families the decoder knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// NVIDIA dcgm-exporter (`DCGM_*`).
    Dcgm,
    /// vLLM's server metrics (`vllm:*`).
    Vllm,
    /// kube-state-metrics (`kube_*`).
    KubeStateMetrics,
    /// Kueue's controller metrics (`kueue_*`).
    Kueue,
    /// node-problem-detector's `problem_counter` / `problem_gauge`.
    NodeProblemDetector,
    /// GKE's TPU / GPU device plugins (`duty_cycle`, `memory_used`, … with `accelerator_id`).
    DevicePlugin,
    /// Anything else.
    Other,
}

impl Family {
    /// The family of a metric, from its name (and, for the device plugins' generic names,
    /// whether it carries an `accelerator_id` label).
    pub fn of(name: &str, has_accelerator_id: bool) -> Family {
        if name.starts_with("DCGM_") {
            Family::Dcgm
        } else if name.starts_with("vllm:") {
            Family::Vllm
        } else if name.starts_with("kube_") {
            Family::KubeStateMetrics
        } else if name.starts_with("kueue_") {
            Family::Kueue
        } else if name == "problem_counter" || name == "problem_gauge" {
            Family::NodeProblemDetector
        } else if has_accelerator_id && device_plugin_name(name).is_some() {
            Family::DevicePlugin
        } else {
            Family::Other
        }
    }

    /// The `layer` of its rows.
    pub fn layer(self) -> Layer {
        match self {
            Family::Vllm => Layer::Framework,
            Family::KubeStateMetrics | Family::Kueue => Layer::Orchestrator,
            _ => Layer::Infrastructure,
        }
    }

    /// The `source` of its rows.
    pub fn source(self) -> &'static str {
        match self {
            Family::Dcgm => "dcgm",
            Family::Vllm => "vllm",
            Family::KubeStateMetrics => "kube-state-metrics",
            Family::Kueue => "kueue",
            Family::NodeProblemDetector => "node-problem-detector",
            Family::DevicePlugin => "device-plugin",
            Family::Other => "prometheus",
        }
    }
}

/// The normalized name of a metric, where whyslow has one.
pub fn normalized(family: Family, name: &str) -> Option<&'static str> {
    match family {
        Family::Dcgm => dcgm_name(name),
        Family::DevicePlugin => device_plugin_name(name),
        _ => None,
    }
}

/// GKE device-plugin metrics (TPU: `make="cloud-tpu"`; GPU: the `*_gpu_node` names).
fn device_plugin_name(name: &str) -> Option<&'static str> {
    Some(match name {
        "duty_cycle" | "duty_cycle_gpu_node" => "duty_cycle",
        "tensorcore_utilization" => "tensorcore_util",
        "memory_bandwidth_utilization" => "memory_bandwidth_util",
        "memory_used" | "memory_used_gpu_node" => "accelerator_memory_used_bytes",
        "memory_total" | "memory_total_gpu_node" => "accelerator_memory_total_bytes",
        _ => return None,
    })
}

/// dcgm-exporter field names → whyslow metric names.
fn dcgm_name(name: &str) -> Option<&'static str> {
    Some(match name {
        "DCGM_FI_DEV_GPU_UTIL" => "gpu_util",
        "DCGM_FI_DEV_MEM_COPY_UTIL" => "mem_copy_util",
        "DCGM_FI_DEV_ENC_UTIL" => "enc_util",
        "DCGM_FI_DEV_DEC_UTIL" => "dec_util",
        "DCGM_FI_DEV_GPU_TEMP" => "gpu_temp_celsius",
        "DCGM_FI_DEV_MEMORY_TEMP" => "memory_temp_celsius",
        "DCGM_FI_DEV_SLOWDOWN_TEMP" => "slowdown_temp_celsius",
        "DCGM_FI_DEV_POWER_USAGE" => "power_watts",
        "DCGM_FI_DEV_POWER_MGMT_LIMIT" => "power_limit_watts",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" => "energy_millijoules_total",
        "DCGM_FI_DEV_SM_CLOCK" => "sm_clock_mhz",
        "DCGM_FI_DEV_MEM_CLOCK" => "mem_clock_mhz",
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" | "DCGM_FI_DEV_CLOCKS_EVENT_REASONS" => {
            "clock_throttle_reasons"
        }
        "DCGM_FI_DEV_PSTATE" => "pstate",
        "DCGM_FI_DEV_XID_ERRORS" => "xid_errors",
        "DCGM_EXP_XID_ERRORS_COUNT" => "xid_errors_count",
        "DCGM_EXP_CLOCK_EVENTS_COUNT" => "clock_events_count",
        "DCGM_EXP_GPU_HEALTH_STATUS" => "gpu_health_status",
        "DCGM_FI_DEV_FB_FREE" => "fb_free_mib",
        "DCGM_FI_DEV_FB_USED" => "fb_used_mib",
        "DCGM_FI_DEV_FB_RESERVED" => "fb_reserved_mib",
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER" => "pcie_replay_total",
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL" => "ecc_sbe_volatile_total",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" => "ecc_dbe_volatile_total",
        "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL" => "ecc_sbe_aggregate_total",
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL" => "ecc_dbe_aggregate_total",
        "DCGM_FI_DEV_RETIRED_SBE" => "retired_pages_sbe",
        "DCGM_FI_DEV_RETIRED_DBE" => "retired_pages_dbe",
        "DCGM_FI_DEV_RETIRED_PENDING" => "retired_pages_pending",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS" => "remapped_rows_uncorrectable",
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS" => "remapped_rows_correctable",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE" => "row_remap_failure",
        "DCGM_FI_DEV_ROW_REMAP_PENDING" => "row_remap_pending",
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL" => "nvlink_bandwidth_total",
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL" => "nvlink_crc_flit_errors_total",
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL" => "nvlink_crc_data_errors_total",
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL" => "nvlink_replay_errors_total",
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL" => "nvlink_recovery_errors_total",
        "DCGM_FI_DEV_POWER_VIOLATION" => "power_violation_us",
        "DCGM_FI_DEV_THERMAL_VIOLATION" => "thermal_violation_us",
        "DCGM_FI_DEV_SYNC_BOOST_VIOLATION" => "sync_boost_violation_us",
        "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION" => "board_limit_violation_us",
        "DCGM_FI_DEV_LOW_UTIL_VIOLATION" => "low_util_violation_us",
        "DCGM_FI_DEV_RELIABILITY_VIOLATION" => "reliability_violation_us",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE" => "gr_engine_active",
        "DCGM_FI_PROF_SM_ACTIVE" => "sm_active",
        "DCGM_FI_PROF_SM_OCCUPANCY" => "sm_occupancy",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" => "tensor_active",
        "DCGM_FI_PROF_DRAM_ACTIVE" => "dram_active",
        "DCGM_FI_PROF_PIPE_FP64_ACTIVE" => "fp64_active",
        "DCGM_FI_PROF_PIPE_FP32_ACTIVE" => "fp32_active",
        "DCGM_FI_PROF_PIPE_FP16_ACTIVE" => "fp16_active",
        "DCGM_FI_PROF_PCIE_TX_BYTES" => "pcie_tx_bytes",
        "DCGM_FI_PROF_PCIE_RX_BYTES" => "pcie_rx_bytes",
        "DCGM_FI_PROF_NVLINK_TX_BYTES" => "nvlink_tx_bytes",
        "DCGM_FI_PROF_NVLINK_RX_BYTES" => "nvlink_rx_bytes",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_and_names() {
        let f = Family::of("DCGM_FI_DEV_GPU_UTIL", false);
        assert_eq!(
            (f, f.layer(), f.source()),
            (Family::Dcgm, Layer::Infrastructure, "dcgm")
        );
        assert_eq!(normalized(f, "DCGM_FI_DEV_GPU_UTIL"), Some("gpu_util"));
        assert_eq!(
            normalized(f, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"),
            Some("clock_throttle_reasons")
        );
        assert_eq!(normalized(f, "DCGM_FI_DEV_VGPU_LICENSE_STATUS"), None);
        assert_eq!(
            Family::of("vllm:num_requests_running", false).layer(),
            Layer::Framework
        );
        assert_eq!(
            Family::of("kube_pod_info", false).source(),
            "kube-state-metrics"
        );
        assert_eq!(
            Family::of("problem_gauge", false).source(),
            "node-problem-detector"
        );
        assert_eq!(Family::of("duty_cycle", true), Family::DevicePlugin);
        assert_eq!(Family::of("duty_cycle", false), Family::Other);
        assert_eq!(
            normalized(Family::DevicePlugin, "duty_cycle_gpu_node"),
            Some("duty_cycle")
        );
        assert_eq!(
            Family::of("node_cpu_seconds_total", false).source(),
            "prometheus"
        );
    }
}

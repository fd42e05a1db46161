//! Which system a Prometheus metric comes from (layer and source), and the normalized
//! names of the metrics analyzers query (see the table in the `prometheus` module docs),
//! including what the serving engines' (vLLM, TGI) metrics are: gauge, counter or
//! histogram part, and which derived rows they give (see [`super::serving`]).

use whyslow_schemas::Layer;

/// The exporter families the decoder knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// NVIDIA dcgm-exporter (`DCGM_*`).
    Dcgm,
    /// vLLM's server metrics (`vllm:*`).
    Vllm,
    /// HuggingFace text-generation-inference's router metrics (`tgi_*`).
    Tgi,
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
        } else if name.starts_with("tgi_") {
            Family::Tgi
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
            Family::Vllm | Family::Tgi => Layer::Framework,
            Family::KubeStateMetrics | Family::Kueue => Layer::Orchestrator,
            _ => Layer::Infrastructure,
        }
    }

    /// The `source` of its rows.
    pub fn source(self) -> &'static str {
        match self {
            Family::Dcgm => "dcgm",
            Family::Vllm => "vllm",
            Family::Tgi => "tgi",
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
        Family::Vllm | Family::Tgi => serving(family, name).map(|s| s.metric),
        _ => None,
    }
}

/// Which part of a serving engine's metric family a sample is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// A gauge: kept as it is, nothing derived.
    Gauge,
    /// A counter: a rate per scrape interval.
    Counter,
    /// A histogram's `_bucket` (with `le`).
    Bucket,
    /// A histogram's `_sum`.
    Sum,
    /// A histogram's `_count`.
    Count,
}

/// What the derived rows of a serving metric are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Derive {
    /// None (gauges).
    Nothing,
    /// A counter's rate per second, under this name.
    Rate(&'static str),
    /// A latency histogram: quantiles, mean and observation count per interval, named
    /// `<base>_p50`, `_p95`, `_p99`, `_mean`, `_observations`.
    Quantiles,
    /// A tokens-per-request histogram: the rate of its `_sum` (tokens per second), under
    /// this name.
    SumRate(&'static str),
}

/// A serving engine's metric as whyslow names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServingName {
    /// The whyslow name of this sample (`ttft_seconds_bucket`, `requests_waiting`).
    pub metric: &'static str,
    /// The family's whyslow name (`ttft_seconds`, `preemptions_total`): the stem of the
    /// derived rows' names.
    pub base: &'static str,
    /// The engine's own family name (`vllm:time_to_first_token_seconds`): the derived
    /// rows' `__name__`.
    pub engine: &'static str,
    pub part: Part,
    pub derive: Derive,
}

/// One histogram family: engine name, whyslow base, and the whyslow names of its parts
/// (`_bucket`, `_sum`, `_count`).
struct Histogram {
    engine: &'static str,
    base: &'static str,
    parts: [&'static str; 3],
    derive: Derive,
}

const HISTOGRAMS: &[Histogram] = &[
    Histogram {
        engine: "vllm:time_to_first_token_seconds",
        base: "ttft_seconds",
        parts: [
            "ttft_seconds_bucket",
            "ttft_seconds_sum",
            "ttft_seconds_count",
        ],
        derive: Derive::Quantiles,
    },
    Histogram {
        engine: "vllm:inter_token_latency_seconds",
        base: "inter_token_seconds",
        parts: [
            "inter_token_seconds_bucket",
            "inter_token_seconds_sum",
            "inter_token_seconds_count",
        ],
        derive: Derive::Quantiles,
    },
    // Deprecated in vLLM 0.10 for inter_token_latency_seconds, and the same observations
    // (each inter-token gap) before: one whyslow name, told apart by `__name__`.
    Histogram {
        engine: "vllm:time_per_output_token_seconds",
        base: "inter_token_seconds",
        parts: [
            "inter_token_seconds_bucket",
            "inter_token_seconds_sum",
            "inter_token_seconds_count",
        ],
        derive: Derive::Quantiles,
    },
    Histogram {
        engine: "vllm:e2e_request_latency_seconds",
        base: "request_seconds",
        parts: [
            "request_seconds_bucket",
            "request_seconds_sum",
            "request_seconds_count",
        ],
        derive: Derive::Quantiles,
    },
    Histogram {
        engine: "vllm:request_queue_time_seconds",
        base: "queue_seconds",
        parts: [
            "queue_seconds_bucket",
            "queue_seconds_sum",
            "queue_seconds_count",
        ],
        derive: Derive::Quantiles,
    },
    Histogram {
        engine: "tgi_request_duration",
        base: "request_seconds",
        parts: [
            "request_seconds_bucket",
            "request_seconds_sum",
            "request_seconds_count",
        ],
        derive: Derive::Quantiles,
    },
    Histogram {
        engine: "tgi_request_queue_duration",
        base: "queue_seconds",
        parts: [
            "queue_seconds_bucket",
            "queue_seconds_sum",
            "queue_seconds_count",
        ],
        derive: Derive::Quantiles,
    },
    Histogram {
        engine: "tgi_request_inference_duration",
        base: "inference_seconds",
        parts: [
            "inference_seconds_bucket",
            "inference_seconds_sum",
            "inference_seconds_count",
        ],
        derive: Derive::Quantiles,
    },
    // TGI observes each request's mean time per output token (TPOT), not each gap.
    Histogram {
        engine: "tgi_request_mean_time_per_token_duration",
        base: "time_per_output_token_seconds",
        parts: [
            "time_per_output_token_seconds_bucket",
            "time_per_output_token_seconds_sum",
            "time_per_output_token_seconds_count",
        ],
        derive: Derive::Quantiles,
    },
    // TGI has no token counters: its per-request token histograms' sums are.
    Histogram {
        engine: "tgi_request_generated_tokens",
        base: "generated_tokens_per_request",
        parts: [
            "generated_tokens_per_request_bucket",
            "generated_tokens_per_request_sum",
            "generated_tokens_per_request_count",
        ],
        derive: Derive::SumRate("generation_tokens_per_second"),
    },
    Histogram {
        engine: "tgi_request_input_length",
        base: "prompt_tokens_per_request",
        parts: [
            "prompt_tokens_per_request_bucket",
            "prompt_tokens_per_request_sum",
            "prompt_tokens_per_request_count",
        ],
        derive: Derive::SumRate("prompt_tokens_per_second"),
    },
];

/// A serving engine's gauge or counter: (engine name, whyslow name, derived rows).
const SCALARS: &[(&str, &str, Derive)] = &[
    (
        "vllm:num_requests_running",
        "requests_running",
        Derive::Nothing,
    ),
    (
        "vllm:num_requests_waiting",
        "requests_waiting",
        Derive::Nothing,
    ),
    (
        "vllm:kv_cache_usage_perc",
        "kv_cache_usage",
        Derive::Nothing,
    ),
    (
        "vllm:gpu_cache_usage_perc",
        "kv_cache_usage",
        Derive::Nothing,
    ),
    (
        "vllm:num_preemptions_total",
        "preemptions_total",
        Derive::Rate("preemptions_per_second"),
    ),
    (
        "vllm:prompt_tokens_total",
        "prompt_tokens_total",
        Derive::Rate("prompt_tokens_per_second"),
    ),
    (
        "vllm:generation_tokens_total",
        "generation_tokens_total",
        Derive::Rate("generation_tokens_per_second"),
    ),
    (
        "vllm:request_success_total",
        "requests_succeeded_total",
        Derive::Rate("requests_succeeded_per_second"),
    ),
    ("tgi_queue_size", "requests_waiting", Derive::Nothing),
    (
        "tgi_batch_current_size",
        "requests_running",
        Derive::Nothing,
    ),
    (
        "tgi_request_count",
        "requests_total",
        Derive::Rate("requests_per_second"),
    ),
    (
        "tgi_request_success",
        "requests_succeeded_total",
        Derive::Rate("requests_succeeded_per_second"),
    ),
    (
        "tgi_request_failure",
        "requests_failed_total",
        Derive::Rate("requests_failed_per_second"),
    ),
];

/// What a vLLM or TGI sample is, where whyslow knows it.
pub fn serving(family: Family, name: &str) -> Option<ServingName> {
    if !matches!(family, Family::Vllm | Family::Tgi) {
        return None;
    }
    if let Some(&(engine, metric, derive)) = SCALARS.iter().find(|(e, _, _)| *e == name) {
        let part = match derive {
            Derive::Nothing => Part::Gauge,
            _ => Part::Counter,
        };
        return Some(ServingName {
            metric,
            base: metric,
            engine,
            part,
            derive,
        });
    }
    let (stem, i, part) = if let Some(s) = name.strip_suffix("_bucket") {
        (s, 0, Part::Bucket)
    } else if let Some(s) = name.strip_suffix("_sum") {
        (s, 1, Part::Sum)
    } else if let Some(s) = name.strip_suffix("_count") {
        (s, 2, Part::Count)
    } else {
        return None;
    };
    let h = HISTOGRAMS.iter().find(|h| h.engine == stem)?;
    Some(ServingName {
        metric: h.parts[i],
        base: h.base,
        engine: h.engine,
        part,
        derive: h.derive,
    })
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

    #[test]
    fn serving_names() {
        let v = Family::of("vllm:time_to_first_token_seconds_bucket", false);
        let s = serving(v, "vllm:time_to_first_token_seconds_bucket").unwrap();
        assert_eq!(
            (s.metric, s.base, s.part, s.derive),
            (
                "ttft_seconds_bucket",
                "ttft_seconds",
                Part::Bucket,
                Derive::Quantiles
            )
        );
        assert_eq!(
            normalized(v, "vllm:gpu_cache_usage_perc"),
            Some("kv_cache_usage")
        );
        assert_eq!(
            serving(v, "vllm:num_preemptions_total").unwrap().derive,
            Derive::Rate("preemptions_per_second")
        );
        assert_eq!(
            normalized(v, "vllm:time_per_output_token_seconds_sum"),
            Some("inter_token_seconds_sum")
        );
        // `_created` and unknown names stay as they are.
        assert_eq!(normalized(v, "vllm:prompt_tokens_created"), None);
        assert_eq!(normalized(v, "vllm:iteration_tokens_total_bucket"), None);
        let t = Family::of("tgi_queue_size", false);
        assert_eq!(
            (t, t.layer(), t.source()),
            (Family::Tgi, Layer::Framework, "tgi")
        );
        assert_eq!(normalized(t, "tgi_queue_size"), Some("requests_waiting"));
        assert_eq!(
            normalized(t, "tgi_request_duration_count"),
            Some("request_seconds_count")
        );
        assert_eq!(
            serving(t, "tgi_request_generated_tokens_sum")
                .unwrap()
                .derive,
            Derive::SumRate("generation_tokens_per_second")
        );
        assert_eq!(serving(Family::Dcgm, "tgi_queue_size"), None);
    }
}

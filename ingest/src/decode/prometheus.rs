//! Decoder of Prometheus metrics: the text exposition format 0.0.4, OpenMetrics, and the
//! JSON records of prometheus-kafka-adapter. Every sample is a `metrics` row; the state
//! gauges of dcgm-exporter (Xid, clock-throttle reasons) also give `events` when they
//! change.
//!
//! **Records.** A file is read a line at a time; a Kafka message may hold a whole scrape
//! and is split on newlines here. A line is a sample (one row), a comment or blank
//! (skipped), or unreadable (rejected). In a multi-line message, samples that read
//! become rows and each unreadable line goes to `dead_letters` on its own (named
//! `topic/partition/offset line N`); a message with no readable sample is rejected whole.
//!
//! **Time.** A sample keeps its own timestamp (milliseconds in 0.0.4; seconds with a
//! fraction in OpenMetrics; read by magnitude). Without one it takes the time of the
//! nearest preceding `# whyslow-scrape-time: <RFC 3339>` line of the same input, else
//! `Hints::default_time_ns` (`--time`, or the file's mtime the runner passes), else the
//! line is rejected.
//!
//! **Values.** `NaN`, `+Inf` and `-Inf` are kept as rows: Prometheus stores them, and a
//! `NaN` gauge (a GPU that stopped answering) is itself evidence.
//!
//! **Layer and source** by metric name: `DCGM_*` infrastructure/`dcgm`; `vllm:*`
//! framework/`vllm`; `tgi_*` framework/`tgi`; `kube_*` orchestrator/`kube-state-metrics`; `kueue_*`
//! orchestrator/`kueue`; `problem_counter`, `problem_gauge`
//! infrastructure/`node-problem-detector`; GKE device-plugin metrics (`duty_cycle`,
//! `memory_used`, `memory_total`, `tensorcore_utilization`, `memory_bandwidth_utilization`,
//! `*_gpu_node`, with an `accelerator_id` label) infrastructure/`device-plugin`; anything
//! else infrastructure/`prometheus`.
//!
//! **Scope.** `node` ← label `node`, else `kubernetes_node`, else `--node`
//! (`Hints::node`), else `Hostname`/`hostname` (dcgm-exporter's, which on some
//! deployments is the exporter pod's own name: hence `--node` wins over it). `device` ←
//! `gpu` (dcgm-exporter's GPU index), or `accelerator_id` for the device plugins.
//! `namespace`/`pod` ← `exported_namespace`/`exported_pod` (what Prometheus renames them
//! to when the target has its own), else `namespace`/`pod`; a serving engine's sample with
//! neither (the engine does not label its own metrics: its scraper adds the target's
//! labels) takes `--pod` (`Hints::pod`), else the pod its file is named after
//! (`serving/vllm-chat-5f7c9d8b46-k2v7x.prom`: a name Kubernetes generated, see
//! `generated_pod_from_file_name`). `workload` ← a `workload`,
//! `job_name`, `deployment`, `statefulset` or `jobset_name` label, or `owner_name` where
//! `owner_kind` is `Job`/`JobSet` (kube-state-metrics). `cluster` ← label `cluster`,
//! else `Hints::cluster`. Labels that became scope columns leave `labels`; all others
//! (`UUID`, `pci_bus_id`, `modelName`, `container`, `le`, `quantile`, …) stay.
//!
//! **Metric names.** Known names are normalized and the original is kept in
//! `labels["__name__"]`; unknown names are kept as they are.
//!
//! | source name | `metric` |
//! |---|---|
//! | `DCGM_FI_DEV_GPU_UTIL` | `gpu_util` (percent, 0–100) |
//! | `DCGM_FI_DEV_MEM_COPY_UTIL`, `_ENC_UTIL`, `_DEC_UTIL` | `mem_copy_util`, `enc_util`, `dec_util` (percent) |
//! | `DCGM_FI_DEV_GPU_TEMP`, `_MEMORY_TEMP`, `_SLOWDOWN_TEMP` | `gpu_temp_celsius`, `memory_temp_celsius`, `slowdown_temp_celsius` |
//! | `DCGM_FI_DEV_POWER_USAGE`, `_POWER_MGMT_LIMIT` | `power_watts`, `power_limit_watts` |
//! | `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION` | `energy_millijoules_total` |
//! | `DCGM_FI_DEV_SM_CLOCK`, `_MEM_CLOCK` | `sm_clock_mhz`, `mem_clock_mhz` |
//! | `DCGM_FI_DEV_CLOCK_THROTTLE_REASONS`, `DCGM_FI_DEV_CLOCKS_EVENT_REASONS` | `clock_throttle_reasons` (NVML bitmask) |
//! | `DCGM_FI_DEV_PSTATE` | `pstate` |
//! | `DCGM_FI_DEV_XID_ERRORS` | `xid_errors` (last Xid code) |
//! | `DCGM_EXP_XID_ERRORS_COUNT`, `DCGM_EXP_CLOCK_EVENTS_COUNT`, `DCGM_EXP_GPU_HEALTH_STATUS` | `xid_errors_count`, `clock_events_count`, `gpu_health_status` |
//! | `DCGM_FI_DEV_FB_FREE`, `_FB_USED`, `_FB_RESERVED` | `fb_free_mib`, `fb_used_mib`, `fb_reserved_mib` |
//! | `DCGM_FI_DEV_PCIE_REPLAY_COUNTER` | `pcie_replay_total` |
//! | `DCGM_FI_DEV_ECC_{SBE,DBE}_{VOL,AGG}_TOTAL` | `ecc_{sbe,dbe}_{volatile,aggregate}_total` |
//! | `DCGM_FI_DEV_RETIRED_{SBE,DBE,PENDING}` | `retired_pages_{sbe,dbe,pending}` |
//! | `DCGM_FI_DEV_{UNCORRECTABLE,CORRECTABLE}_REMAPPED_ROWS`, `_ROW_REMAP_FAILURE`, `_ROW_REMAP_PENDING` | `remapped_rows_{uncorrectable,correctable}`, `row_remap_failure`, `row_remap_pending` |
//! | `DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL` | `nvlink_bandwidth_total` |
//! | `DCGM_FI_DEV_NVLINK_{CRC_FLIT,CRC_DATA,REPLAY,RECOVERY}_ERROR_COUNT_TOTAL` | `nvlink_{crc_flit,crc_data,replay,recovery}_errors_total` |
//! | `DCGM_FI_DEV_{POWER,THERMAL,SYNC_BOOST,BOARD_LIMIT,LOW_UTIL,RELIABILITY}_VIOLATION` | `{power,thermal,sync_boost,board_limit,low_util,reliability}_violation_us` |
//! | `DCGM_FI_PROF_GR_ENGINE_ACTIVE`, `_SM_ACTIVE`, `_SM_OCCUPANCY`, `_PIPE_TENSOR_ACTIVE`, `_DRAM_ACTIVE` | `gr_engine_active`, `sm_active`, `sm_occupancy`, `tensor_active`, `dram_active` (ratios, 0–1) |
//! | `DCGM_FI_PROF_PIPE_FP64_ACTIVE`, `_FP32_`, `_FP16_` | `fp64_active`, `fp32_active`, `fp16_active` |
//! | `DCGM_FI_PROF_PCIE_{TX,RX}_BYTES`, `DCGM_FI_PROF_NVLINK_{TX,RX}_BYTES` | `pcie_{tx,rx}_bytes`, `nvlink_{tx,rx}_bytes` |
//! | device plugin `duty_cycle`, `duty_cycle_gpu_node` | `duty_cycle` (percent) |
//! | device plugin `tensorcore_utilization`, `memory_bandwidth_utilization` | `tensorcore_util`, `memory_bandwidth_util` (percent) |
//! | device plugin `memory_used`, `memory_total` (and `*_gpu_node`) | `accelerator_memory_used_bytes`, `accelerator_memory_total_bytes` |
//! | `vllm:num_requests_running`, TGI `tgi_batch_current_size` | `requests_running` |
//! | `vllm:num_requests_waiting`, TGI `tgi_queue_size` | `requests_waiting` |
//! | `vllm:kv_cache_usage_perc`, `vllm:gpu_cache_usage_perc` | `kv_cache_usage` (ratio, 0–1) |
//! | `vllm:num_preemptions_total` | `preemptions_total` |
//! | `vllm:prompt_tokens_total`, `vllm:generation_tokens_total` | `prompt_tokens_total`, `generation_tokens_total` |
//! | `vllm:request_success_total`, TGI `tgi_request_success` | `requests_succeeded_total` |
//! | TGI `tgi_request_count`, `tgi_request_failure` | `requests_total`, `requests_failed_total` |
//! | `vllm:time_to_first_token_seconds_{bucket,sum,count}` | `ttft_seconds_{bucket,sum,count}` |
//! | `vllm:inter_token_latency_seconds_*`, `vllm:time_per_output_token_seconds_*` (its deprecated alias) | `inter_token_seconds_*` |
//! | `vllm:e2e_request_latency_seconds_*`, TGI `tgi_request_duration_*` | `request_seconds_*` (end to end) |
//! | `vllm:request_queue_time_seconds_*`, TGI `tgi_request_queue_duration_*` | `queue_seconds_*` |
//! | TGI `tgi_request_inference_duration_*` | `inference_seconds_*` |
//! | TGI `tgi_request_mean_time_per_token_duration_*` (each request's mean) | `time_per_output_token_seconds_*` |
//! | TGI `tgi_request_generated_tokens_*`, `tgi_request_input_length_*` | `generated_tokens_per_request_*`, `prompt_tokens_per_request_*` |
//!
//! The engines' labels (`model_name`, `finished_reason`, `engine`, TGI's `method`,
//! `err`) stay in `labels`; their other metrics keep their own names.
//!
//! **Serving rates and quantiles** ([`serving`]): per series (scope + engine family +
//! labels but `le`), within one input or stream, each scrape after the first also gives
//! rows derived over the interval since the previous one, dated at the newer scrape,
//! same layer, source, scope and labels (with `__name__` the engine's family name):
//! - counters: `<name without _total>_per_second` — `preemptions_per_second`,
//!   `prompt_tokens_per_second`, `generation_tokens_per_second`,
//!   `requests_succeeded_per_second`, `requests_per_second`, `requests_failed_per_second`;
//! - latency histograms (`ttft_seconds`, `inter_token_seconds`, `request_seconds`,
//!   `queue_seconds`, `inference_seconds`, `time_per_output_token_seconds`):
//!   `<base>_observations` (count delta), and when it is above 0 `<base>_p50`, `_p95`,
//!   `_p99` (Prometheus' `histogram_quantile` interpolation over the bucket deltas) and
//!   `<base>_mean` (sum delta / count delta);
//! - TGI's token histograms: `generation_tokens_per_second`, `prompt_tokens_per_second`
//!   from their `_sum`.
//!
//! A counter or bucket that drops starts the series over (no row for that interval);
//! the raw samples are stored as always. In SQL:
//! `SELECT time, pod, value FROM metrics WHERE metric = 'ttft_seconds_p95' AND namespace = 'llm' ORDER BY time`.
//!
//! **Events** (layer infrastructure, source `dcgm`, same scope as the sample; per series
//! = node + GPU + MIG instance `GPU_I_ID`, remembered within one input; the first sample
//! of a series counts only when nonzero):
//! - `DCGM_FI_DEV_XID_ERRORS` changing to a nonzero code → kind `xid`, reason = the code,
//!   attrs `xid`, `meaning`, `category` (`gpu_failure`, `gpu_memory_error`,
//!   `nvlink_error`, `application`, `other`), `metric`, `previous` (when known), plus
//!   the sample's remaining labels; severity from the Xid catalog.
//! - the slowdown bits of the throttle mask changing (idle, application-clock,
//!   display-clock and sync-boost bits are not slowdowns) → kind `clock_throttle` (to nonzero) or
//!   `clock_throttle_cleared` (to zero), reason = the `throttle` class (`thermal`,
//!   `power`, `hw_slowdown`, `none`), attrs `throttle`, `reasons` (bit names), `power`
//!   and `thermal` (`true`/`false`: the bits decoded once, here, for the cause rules;
//!   see [`whyslow_schemas::nvidia::ThrottleReasons`]), `mask` and `previous_mask` (hex),
//!   `metric`, plus the remaining labels.
//!
//! `event_id` is a hash of (source, node, device, metric, time, value).

pub mod adapter;
pub mod gpu_events;
pub mod names;
pub mod serving;
pub mod text;

use whyslow_schemas::builders::{EventRow, MetricRow, Scope};

use crate::decode::lines::decode_lines;
use crate::decode::{Decoder, Format, Hints, Origin, Output};
use gpu_events::{Change, StateGauge, StateMemory};
use names::Family;
use text::{Line, Sample};
use whyslow_schemas::time::{self, Nanos};

/// Decodes Prometheus text / OpenMetrics / prometheus-kafka-adapter records.
#[derive(Debug, Default)]
pub struct PrometheusDecoder {
    sample: Sample,
    scrape_time: Option<Nanos>,
    states: StateMemory,
    serving: serving::ServingMemory,
    /// The input's path and the pod its file is named after, if any (`note_path`).
    file_pod: Option<(String, Option<String>)>,
}

impl PrometheusDecoder {
    /// A decoder with no scrape time and no remembered state.
    pub fn new() -> Self {
        Self::default()
    }
}

/// Where the scope columns of a sample come from: indices into its labels.
#[derive(Debug, Default, Clone, Copy)]
struct ScopeLabels {
    node: Option<usize>,
    kubernetes_node: Option<usize>,
    hostname: Option<usize>,
    gpu: Option<usize>,
    accelerator_id: Option<usize>,
    namespace: Option<usize>,
    exported_namespace: Option<usize>,
    pod: Option<usize>,
    exported_pod: Option<usize>,
    cluster: Option<usize>,
    mig_instance: Option<usize>,
    /// A label that names the owning workload (see `workload_label`).
    workload: Option<usize>,
    owner_kind: Option<usize>,
    owner_name: Option<usize>,
}

impl ScopeLabels {
    fn find(sample: &Sample) -> Self {
        let mut s = ScopeLabels::default();
        for (i, (k, _)) in sample.labels().enumerate() {
            let slot = match k {
                "node" => &mut s.node,
                "kubernetes_node" => &mut s.kubernetes_node,
                "Hostname" | "hostname" => &mut s.hostname,
                "gpu" => &mut s.gpu,
                "accelerator_id" => &mut s.accelerator_id,
                "namespace" => &mut s.namespace,
                "exported_namespace" => &mut s.exported_namespace,
                "pod" => &mut s.pod,
                "exported_pod" => &mut s.exported_pod,
                "cluster" => &mut s.cluster,
                "workload" | "job_name" | "deployment" | "statefulset" | "jobset_name" => {
                    &mut s.workload
                }
                "owner_kind" => &mut s.owner_kind,
                "owner_name" => &mut s.owner_name,
                "GPU_I_ID" => &mut s.mig_instance,
                _ => continue,
            };
            slot.get_or_insert(i);
        }
        s
    }
}

/// A bit set of label indices that became scope columns (labels past 64 always stay).
#[derive(Debug, Default, Clone, Copy)]
struct Used(u64);

impl Used {
    fn take(&mut self, i: Option<usize>) -> Option<usize> {
        if let Some(i) = i.filter(|&i| i < 64) {
            self.0 |= 1 << i;
        }
        i
    }
    fn has(self, i: usize) -> bool {
        i < 64 && self.0 & (1 << i) != 0
    }
}

/// The workload a sample names: a `workload` label, kube-state-metrics' object labels
/// (`job_name`, `deployment`, `statefulset`, JobSet's `jobset_name`), or `owner_name` when
/// `owner_kind` is a `Job` (`kube_pod_owner`). Pods of Deployments are owned by
/// ReplicaSets, which are not workloads: those are left to the k8s inventory.
fn workload_label<'s>(s: &'s Sample, idx: ScopeLabels, used: &mut Used) -> Option<&'s str> {
    if let Some(i) = used.take(idx.workload) {
        return Some(s.label(i).1);
    }
    match (idx.owner_kind.map(|i| s.label(i).1), idx.owner_name) {
        (Some("Job" | "JobSet"), Some(i)) => Some(s.label(i).1),
        _ => None,
    }
}

fn event_id(source: &str, scope: &Scope<'_>, metric: &str, time_ns: i64, value: f64) -> String {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for part in [Some(source), scope.node, scope.device, Some(metric)] {
        h.update(part.unwrap_or("").as_bytes());
        h.update(&[0x1f]);
    }
    h.update(&time_ns.to_le_bytes());
    h.update(&value.to_bits().to_le_bytes());
    format!("{:016x}", h.digest())
}

/// A `dcgm-exporter` counter list line (`DCGM_FI_DEV_SM_CLOCK, gauge, help`): it
/// configures the exporter and is not a scrape.
fn is_counter_list_line(line: &str) -> bool {
    let mut parts = line.split(',');
    let field = parts.next().unwrap_or("").trim();
    let kind = parts.next().unwrap_or("").trim();
    field.starts_with("DCGM_")
        && matches!(
            kind,
            "gauge" | "counter" | "label" | "histogram" | "summary"
        )
}

impl PrometheusDecoder {
    /// Reads one line; `Ok(true)` when it became rows.
    fn decode_line(&mut self, line: &str, hints: &Hints, out: &mut Output) -> Result<bool, String> {
        if adapter::looks_like_json(line) {
            adapter::parse_record(line.trim(), &mut self.sample)?;
        } else {
            match text::parse_line(line, &mut self.sample) {
                Ok(Line::Blank | Line::Comment) => return Ok(false),
                Ok(Line::ScrapeTime(t)) => {
                    self.scrape_time = None;
                    let ns = time::parse_rfc3339(t)
                        .map_err(|_| format!("unreadable '# whyslow-scrape-time:' value '{t}'"))?;
                    self.scrape_time = Some(ns);
                    return Ok(false);
                }
                Ok(Line::Sample) => {}
                Err(e) if is_counter_list_line(line) => {
                    let _ = e;
                    return Err(
                        "a dcgm-exporter counter list line (field, type, help): it configures \
                                the exporter and is not a metrics scrape"
                            .into(),
                    );
                }
                Err(e) => return Err(format!("not a Prometheus sample: {e}")),
            }
        }
        self.emit(hints, out)?;
        Ok(true)
    }

    /// Reads one sample another format carries (an OTLP data point): `fill` writes it into
    /// the cleared buffer, then it becomes a row like a scraped one. On an error the
    /// sample stays readable through [`PrometheusDecoder::sample`].
    pub fn decode_sample(
        &mut self,
        fill: impl FnOnce(&mut Sample),
        hints: &Hints,
        out: &mut Output,
    ) -> Result<(), String> {
        self.sample.clear();
        fill(&mut self.sample);
        self.emit(hints, out)
    }

    /// Reads which pod the input's file is named after, once per file.
    fn note_path(&mut self, hints: &Hints) {
        let Some(path) = hints.path.as_deref() else {
            self.file_pod = None;
            return;
        };
        if self.file_pod.as_ref().is_none_or(|(p, _)| p != path) {
            let pod = crate::decode::container_log::generated_pod_from_file_name(path);
            self.file_pod = Some((path.to_string(), pod));
        }
    }

    /// The sample last read.
    pub fn sample(&self) -> &Sample {
        &self.sample
    }

    /// Appends the sample in the buffer as a row (and an event when a state changed).
    fn emit(&mut self, hints: &Hints, out: &mut Output) -> Result<(), String> {
        let s = &self.sample;
        let time_ns = s.timestamp.or(self.scrape_time).or(hints.default_time_ns).ok_or(
            "sample has no timestamp and nothing dates it: add a '# whyslow-scrape-time: <RFC 3339>' \
             line before the scrape, or pass --time",
        )?;
        let name = s.name();
        let idx = ScopeLabels::find(s);
        let family = Family::of(name, idx.accelerator_id.is_some());
        let mut used = Used::default();
        let value_of = |i: Option<usize>| i.map(|i| s.label(i).1);

        let node = match (
            used.take(idx.node.or(idx.kubernetes_node)),
            hints.node.as_deref(),
        ) {
            (Some(i), _) => Some(s.label(i).1),
            (None, Some(n)) => Some(n),
            (None, None) => value_of(used.take(idx.hostname)),
        };
        let device_label = match family {
            Family::DevicePlugin => idx.accelerator_id,
            _ => idx.gpu,
        };
        let scope = Scope {
            cluster: value_of(used.take(idx.cluster)).or(hints.cluster.as_deref()),
            node,
            device: value_of(used.take(device_label)),
            namespace: value_of(used.take(idx.exported_namespace.or(idx.namespace))),
            workload: workload_label(s, idx, &mut used),
            pod: value_of(used.take(idx.exported_pod.or(idx.pod))).or_else(|| {
                // An engine serving in a pod does not label its own metrics (the scraper
                // adds the target's labels): a scrape saved as the engine gave it names
                // its pod by `--pod`, else by the file it was saved to.
                let file = self.file_pod.as_ref().and_then(|(_, p)| p.as_deref());
                matches!(family, Family::Vllm | Family::Tgi)
                    .then(|| hints.pod.as_deref().or(file))
                    .flatten()
            }),
            run_id: None,
        };
        let normalized = names::normalized(family, name);
        let metric = normalized.unwrap_or(name);
        let kept = s
            .labels()
            .enumerate()
            .filter(move |(i, _)| !used.has(*i))
            .map(|(_, kv)| kv);
        let original = normalized.map(|_| ("__name__", name));
        let row = MetricRow {
            time_ns,
            layer: family.layer(),
            source: family.source(),
            metric,
            value: s.value,
            scope,
            rank: None,
            step: None,
        };
        out.metrics.append(&row, kept.clone().chain(original));

        if let Some(serving_name) = names::serving(family, name) {
            let cx = serving::Context {
                time_ns,
                scope,
                layer: family.layer(),
                source: family.source(),
            };
            self.serving
                .observe(serving_name, s, cx, kept.clone(), &mut out.metrics);
        }

        if family != Family::Dcgm {
            return Ok(());
        }
        let Some(gauge) = StateGauge::of(name) else {
            return Ok(());
        };
        let instance = value_of(idx.mig_instance);
        let Some(change) = self
            .states
            .observe(gauge, scope.node, scope.device, instance, s.value)
        else {
            return Ok(());
        };
        let id = event_id(family.source(), &scope, metric, time_ns, s.value);
        let kind = change.kind();
        let mut ev = EventRow {
            time_ns,
            event_id: &id,
            layer: family.layer(),
            source: family.source(),
            kind,
            severity: change.severity(),
            scope,
            reason: None,
            message: None,
        };
        match change {
            Change::Xid {
                code,
                info,
                previous,
            } => {
                let code_s = code.to_string();
                let message = format!("Xid {code}: {} ({name})", info.meaning);
                let prev = previous.map(|p| p.to_string());
                ev.reason = Some(&code_s);
                ev.message = Some(&message);
                let attrs = [
                    ("xid", code_s.as_str()),
                    ("meaning", info.meaning),
                    ("category", info.category.as_str()),
                    ("metric", metric),
                ];
                let prev = prev.as_deref().map(|p| ("previous", p));
                out.events
                    .append(&ev, attrs.into_iter().chain(prev).chain(kept));
            }
            Change::Throttle { mask, previous } => {
                let (class, _) = mask.class();
                let decoded = mask.attrs();
                let mask_s = format!("0x{:x}", mask.0);
                let message = if kind == "clock_throttle" {
                    format!(
                        "clocks throttled ({class}): {} [{name} = {mask_s}]",
                        mask.names()
                    )
                } else {
                    format!("clock throttling ended [{name} = {mask_s}]")
                };
                let prev = previous.map(|p| format!("0x{p:x}"));
                ev.reason = Some(class);
                ev.message = Some(&message);
                let decoded = decoded.iter().map(|(k, v)| (*k, v.as_ref()));
                let attrs = [("mask", mask_s.as_str()), ("metric", metric)];
                let prev = prev.as_deref().map(|p| ("previous_mask", p));
                out.events
                    .append(&ev, decoded.chain(attrs).chain(prev).chain(kept));
            }
        }
        Ok(())
    }
}

impl Decoder for PrometheusDecoder {
    fn format(&self) -> Format {
        Format::Prometheus
    }

    fn decode(&mut self, bytes: &[u8], origin: &Origin<'_>, hints: &Hints, out: &mut Output) {
        self.note_path(hints);
        decode_lines(bytes, origin, Format::Prometheus, out, |line, out| {
            self.decode_line(line, hints, out)
        });
    }

    fn finish(&mut self, _hints: &Hints, _out: &mut Output) {
        self.scrape_time = None;
        self.states.clear();
        self.serving.clear();
    }
}

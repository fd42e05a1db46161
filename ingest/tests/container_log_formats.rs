//! The container-log decoder on each way clusters ship container output — CRI files
//! under `/var/log/pods`, Fluent Bit / Vector records, `kubectl logs --timestamps`,
//! Kafka messages holding many lines — and on the multi-line and framework cases no
//! sample covers: NCCL watchdog timeouts, torchrun restarts, tracebacks, partial CRI
//! lines. The lines are written here in the shapes PyTorch, torchrun, Hugging Face and
//! the kubelet print them (the real logs that show these shapes live in GitHub issues,
//! whose text is not under a licence we can copy; see the shared SOURCES.md).

use std::collections::BTreeMap;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{Float64Type, Int32Type, Int64Type};
use whyslow_ingest::decode::container_log::ContainerLogDecoder;
use whyslow_ingest::decode::{Decoder, Hints, Origin, Output};
use whyslow_schemas::tables::{StoredTime, stored_to_ns};
use whyslow_schemas::time::format_rfc3339;

#[derive(Debug)]
struct Row {
    time: String,
    id: String,
    name: String,
    source: String,
    value: f64,
    step: Option<i64>,
    rank: Option<i32>,
    node: Option<String>,
    namespace: Option<String>,
    workload: Option<String>,
    pod: Option<String>,
    reason: Option<String>,
    message: Option<String>,
    map: BTreeMap<String, String>,
}

impl Row {
    fn get(&self, k: &str) -> Option<&str> {
        self.map.get(k).map(String::as_str)
    }
}

struct Decoded {
    events: Vec<Row>,
    metrics: Vec<Row>,
    counts: whyslow_ingest::Counts,
}

fn opt(b: &RecordBatch, c: &str, i: usize) -> Option<String> {
    let a = b.column_by_name(c)?.as_string::<i32>();
    a.is_valid(i).then(|| a.value(i).to_string())
}

fn rows(b: &RecordBatch, name_col: &str, map_col: &str) -> Vec<Row> {
    let time = b
        .column_by_name("time")
        .unwrap()
        .as_primitive::<StoredTime>();
    let map = b.column_by_name(map_col).unwrap().as_map();
    (0..b.num_rows())
        .map(|i| {
            let entries = map.value(i);
            let (k, v) = (
                entries.column(0).as_string::<i32>(),
                entries.column(1).as_string::<i32>(),
            );
            let int64 = b
                .column_by_name("step")
                .map(|c| c.as_primitive::<Int64Type>().clone());
            let int32 = b
                .column_by_name("rank")
                .map(|c| c.as_primitive::<Int32Type>().clone());
            Row {
                time: format_rfc3339(stored_to_ns(time.value(i))),
                id: opt(b, "event_id", i).unwrap_or_default(),
                name: opt(b, name_col, i).unwrap_or_default(),
                source: opt(b, "source", i).unwrap_or_default(),
                value: b
                    .column_by_name("value")
                    .map_or(f64::NAN, |c| c.as_primitive::<Float64Type>().value(i)),
                step: int64.filter(|a| a.is_valid(i)).map(|a| a.value(i)),
                rank: int32.filter(|a| a.is_valid(i)).map(|a| a.value(i)),
                node: opt(b, "node", i),
                namespace: opt(b, "namespace", i),
                workload: opt(b, "workload", i),
                pod: opt(b, "pod", i),
                reason: opt(b, "reason", i),
                message: opt(b, "message", i),
                map: (0..entries.len())
                    .map(|j| (k.value(j).to_string(), v.value(j).to_string()))
                    .collect(),
            }
        })
        .collect()
}

/// Feeds `records` (file lines, or whole Kafka messages) and finishes the input.
fn decode(records: &[&str], hints: &Hints, kafka: bool) -> Decoded {
    let mut d = ContainerLogDecoder::new();
    let mut out = Output::new(0);
    let path = hints.path.clone().unwrap_or_else(|| "-".to_string());
    for (i, r) in records.iter().enumerate() {
        let origin = if kafka {
            Origin::Kafka {
                topic: "logs",
                partition: 0,
                offset: i as i64,
            }
        } else {
            Origin::File {
                path: &path,
                line: i as u64 + 1,
            }
        };
        d.decode(r.as_bytes(), &origin, hints, &mut out);
    }
    d.finish(hints, &mut out);
    assert!(out.counts.balances(), "{:?}", out.counts);
    assert_eq!(out.counts.records, records.len() as u64);
    let (e, m) = (out.events.finish(), out.metrics.finish());
    assert_eq!(
        (out.counts.events, out.counts.metrics),
        (e.num_rows() as u64, m.num_rows() as u64)
    );
    Decoded {
        events: rows(&e, "kind", "attrs"),
        metrics: rows(&m, "metric", "labels"),
        counts: out.counts,
    }
}

fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

const POD_PATH: &str = "/var/log/pods/llm_finetune-gemma-l4-0-vcxpz_0f1e2d3c-5a6b-4c7d-8e9f-0123456789ab/trainer/0.log";

fn pod_hints() -> Hints {
    Hints {
        path: Some(POD_PATH.to_string()),
        node: Some("gke-gpu-7".to_string()),
        ..Hints::default()
    }
}

#[test]
fn cri_file_with_hugging_face_json_logs() {
    // The seed scenario's fine-tuning job: Hugging Face JSON logs inside CRI framing.
    let text = r#"2026-11-29T10:15:02.123456789Z stderr F {"name": "transformers.trainer", "message": "Saving model checkpoint to /data/ft/checkpoint-10", "timestamp": "2026-11-29T10:15:02.120Z", "level": "INFO"}
2026-11-29T10:15:03.000000000Z stdout F {'loss': 1.8731, 'grad_norm': 0.91, 'learning_rate': 1.9e-05, 'epoch': 0.25}
2026-11-29T10:31:40.500000000Z stderr F {"name": "transformers.trainer", "message": "Continuing training from global step 10", "timestamp": "2026-11-29T10:31:40.5Z", "level": "INFO"}
2026-11-29T10:31:40.600000000Z stderr F {"name": "__main__", "message": "Resuming from checkpoint /data/ft/checkpoint-10", "timestamp": "2026-11-29T10:31:40.6Z", "level": "INFO"}
2026-11-29T10:31:41.000000000Z stdout F nothing a rule reads
"#;
    let d = decode(&lines(text), &pod_hints(), false);
    assert_eq!(
        (d.counts.produced, d.counts.skipped, d.counts.rejected),
        (4, 1, 0)
    );
    let saved = &d.events[0];
    assert_eq!(
        (saved.name.as_str(), saved.source.as_str()),
        ("checkpoint_saved", "huggingface")
    );
    assert_eq!(
        (saved.get("step"), saved.get("path")),
        (Some("10"), Some("/data/ft/checkpoint-10"))
    );
    // The CRI stamp dates the line; the scope comes from the kubelet path and the pod name.
    // Stored in µs, as every time column (tables.md): the CRI stamp's last digits go.
    assert_eq!(saved.time, "2026-11-29T10:15:02.123456Z");
    assert_eq!(saved.namespace.as_deref(), Some("llm"));
    assert_eq!(saved.pod.as_deref(), Some("finetune-gemma-l4-0-vcxpz"));
    assert_eq!(saved.workload.as_deref(), Some("finetune-gemma-l4"));
    assert_eq!(saved.node.as_deref(), Some("gke-gpu-7"));
    assert_eq!(
        (
            saved.get("container"),
            saved.get("stream"),
            saved.get("rank")
        ),
        (Some("trainer"), Some("stderr"), Some("0"))
    );
    assert_eq!(
        saved.message.as_deref(),
        Some("Saving model checkpoint to /data/ft/checkpoint-10")
    );
    assert_eq!(d.events[1].name, "checkpoint_restored");
    assert_eq!(d.events[1].get("step"), Some("10"));
    assert_eq!(d.events[2].name, "checkpoint_restored");
    assert_eq!(d.events[2].get("path"), Some("/data/ft/checkpoint-10"));
    assert_eq!(d.events.len(), 3);
    let loss = d.metrics.iter().find(|m| m.name == "train_loss").unwrap();
    assert_eq!(
        (loss.value, loss.rank, loss.get("epoch")),
        (1.8731, Some(0), Some("0.25"))
    );
    assert_eq!(d.metrics.len(), 4);
    // Re-reading the same input gives the same event ids.
    let again = decode(&lines(text), &pod_hints(), false);
    let ids = |d: &Decoded| d.events.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&d), ids(&again));
    assert_eq!(
        ids(&d)
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len(),
        3
    );
}

#[test]
fn a_hugging_face_arguments_dump_gives_one_event_per_parameter() {
    // `Training/evaluation parameters {training_args}` as plain lines (the parameters on
    // lines of their own), then as one JSON record whose message keeps the newlines.
    let text = r#"2026-11-29T10:00:01.000000000Z stderr F [INFO|run_clm.py:250] 2026-11-29 10:00:01,000 >> Training/evaluation parameters TrainingArguments(
2026-11-29T10:00:01.000000000Z stderr F _n_gpu=1,
2026-11-29T10:00:01.000000000Z stderr F gradient_checkpointing=True,
2026-11-29T10:00:01.000000000Z stderr F learning_rate=2e-05,
2026-11-29T10:00:01.000000000Z stderr F )
2026-11-29T10:00:02.000000000Z stdout F nothing a rule reads
2026-11-29T11:00:01.000000000Z stderr F {"name": "__main__", "message": "Training/evaluation parameters TrainingArguments(\n_n_gpu=1,\ngradient_checkpointing=False,\n)", "timestamp": "2026-11-29T11:00:01.000Z", "level": "INFO"}
"#;
    let d = decode(&lines(text), &pod_hints(), false);
    let params: Vec<(String, Option<&str>, Option<&str>)> = d
        .events
        .iter()
        .map(|e| (e.time.clone(), e.get("param"), e.get("value")))
        .collect();
    assert_eq!(
        params,
        [
            (
                "2026-11-29T10:00:01Z".to_string(),
                Some("_n_gpu"),
                Some("1")
            ),
            (
                "2026-11-29T10:00:01Z".to_string(),
                Some("gradient_checkpointing"),
                Some("True")
            ),
            (
                "2026-11-29T10:00:01Z".to_string(),
                Some("learning_rate"),
                Some("2e-05")
            ),
            (
                "2026-11-29T11:00:01Z".to_string(),
                Some("_n_gpu"),
                Some("1")
            ),
            (
                "2026-11-29T11:00:01Z".to_string(),
                Some("gradient_checkpointing"),
                Some("False")
            ),
        ]
    );
    assert!(d.events.iter().all(|e| e.name == "config_param"
        && e.source == "huggingface"
        && e.workload.as_deref() == Some("finetune-gemma-l4")));
    let ids: std::collections::HashSet<_> = d.events.iter().map(|e| e.id.clone()).collect();
    assert_eq!(ids.len(), 5, "one id per parameter");
    assert_eq!(d.counts.rejected, 0);
}

#[test]
fn a_serving_launchers_args_dump_gives_one_event_per_field() {
    // TGI 2.x's `{:#?}` dump, one field per line (a nested value over three), then TGI
    // 1.x's `{:?}` dump on one line; the lines after each are read as any.
    let text = r#"2026-11-29T10:00:01.000000000Z stdout F 2026-11-29T10:00:01.123456Z  INFO text_generation_launcher: Args {
2026-11-29T10:00:01.000000000Z stdout F     model_id: "mistralai/Mistral-7B-Instruct-v0.3",
2026-11-29T10:00:01.000000000Z stdout F     quantize: Some(
2026-11-29T10:00:01.000000000Z stdout F         BitsandbytesNf4,
2026-11-29T10:00:01.000000000Z stdout F     ),
2026-11-29T10:00:01.000000000Z stdout F     max_batch_size: None,
2026-11-29T10:00:01.000000000Z stdout F }
2026-11-29T10:00:02.000000000Z stdout F 2026-11-29T10:00:02.000000Z  INFO text_generation_launcher: Starting download process.
2026-11-29T11:00:01.000000000Z stdout F 2026-11-29T11:00:01.000000Z  INFO text_generation_launcher: Args { model_id: "mistralai/Mistral-7B-Instruct-v0.3", quantize: None, max_batch_size: None }
"#;
    let d = decode(&lines(text), &pod_hints(), false);
    let params: Vec<(&str, Option<&str>, Option<&str>)> = d
        .events
        .iter()
        .map(|e| (&e.time[11..19], e.get("param"), e.get("value")))
        .collect();
    let model = Some("\"mistralai/Mistral-7B-Instruct-v0.3\"");
    assert_eq!(
        params,
        [
            ("10:00:01", Some("model_id"), model),
            ("10:00:01", Some("quantize"), Some("Some(BitsandbytesNf4)")),
            ("10:00:01", Some("max_batch_size"), Some("None")),
            ("11:00:01", Some("model_id"), model),
            ("11:00:01", Some("quantize"), Some("None")),
            ("11:00:01", Some("max_batch_size"), Some("None")),
        ]
    );
    assert!(
        d.events
            .iter()
            .all(|e| e.name == "config_param" && e.source == "tgi")
    );
    assert_eq!(d.counts.rejected, 0);
}

#[test]
fn cri_partial_lines_join_their_full_line() {
    let text = "2026-11-29T10:15:02.000000001Z stdout P completed step: 7, seconds: 5.6\n\
                2026-11-29T10:15:02.000000002Z stdout P 68, TFLOP/s/device: 134.9, Tokens/s/device: 8671.9\n\
                2026-11-29T10:15:02.000000003Z stdout F 46, total_weights: 196608, loss: 10.542\n";
    let d = decode(&lines(text), &pod_hints(), false);
    assert_eq!((d.counts.produced, d.counts.skipped), (1, 2));
    let step = d
        .metrics
        .iter()
        .find(|m| m.name == "step_time_seconds")
        .unwrap();
    assert_eq!(
        (step.value, step.step, step.time.as_str()),
        (5.668, Some(7), "2026-11-29T10:15:02Z")
    );
    let tokens = d
        .metrics
        .iter()
        .find(|m| m.name == "tokens_per_second")
        .unwrap();
    assert_eq!(tokens.value, 8671.946);
}

#[test]
fn nccl_watchdog_timeout_is_one_event_per_rank_and_sequence() {
    // PyTorch prints the watchdog line, then repeats it in the exception it throws.
    let text = "\
[rank1]:[E1129 10:40:12.345678901 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.
[rank1]:[E1129 10:40:12.346000000 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank 1] Exception (either an error or timeout) detected by watchdog at work: 1580, last enqueued NCCL work: 1580, last completed NCCL work: 1579.
[rank1]:[E1129 10:40:12.346100000 ProcessGroupNCCL.cpp:630] [Rank 1] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.
[rank1]:terminate called after throwing an instance of 'c10::DistBackendError'
[rank1]:  what():  [PG ID 0 PG GUID 0(default_pg) Rank 1] Process group watchdog thread terminated with exception: [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.
[rank0]:[E1129 10:40:13.000000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) ran for 600999 milliseconds before timing out.
";
    let hints = Hints {
        pod: Some("bert-worker-1".to_string()),
        namespace: Some("ml".to_string()),
        // 2026-11-18: the year of the glog-style stamps.
        default_time_ns: Some(1_795_000_000_000_000_000),
        ..Hints::default()
    };
    let d = decode(&lines(text), &hints, false);
    let timeouts: Vec<&Row> = d
        .events
        .iter()
        .filter(|e| e.name == "collective_timeout")
        .collect();
    assert_eq!(timeouts.len(), 2, "{:?}", d.events);
    let t = timeouts[0];
    assert_eq!(
        (t.get("rank"), t.get("op_type"), t.get("seq_num")),
        (Some("1"), Some("ALLREDUCE"), Some("1580"))
    );
    assert_eq!(
        (t.get("timeout_ms"), t.get("elapsed_ms")),
        (Some("600000"), Some("600060"))
    );
    assert_eq!(t.time, "2026-11-29T10:40:12.345678Z");
    assert_eq!(
        (t.reason.as_deref(), t.source.as_str()),
        (Some("ALLREDUCE"), "pytorch")
    );
    assert_eq!(t.workload.as_deref(), Some("bert"));
    assert_eq!(timeouts[1].get("rank"), Some("0"));
    assert_eq!(timeouts[1].get("elapsed_ms"), Some("600999"));
    let nccl: Vec<&Row> = d.events.iter().filter(|e| e.name == "nccl_error").collect();
    assert_eq!(nccl.len(), 1);
    assert_eq!(nccl[0].get("rank"), Some("1"));
    assert_eq!(d.events.len(), 3);
}

#[test]
fn torchrun_restarts_and_failures() {
    let text = "\
2026-11-29T11:00:00.000000000Z INFO:torch.distributed.elastic.agent.server.api:[default] Starting worker group
2026-11-29T11:20:00.000000000Z WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 71 closing signal SIGTERM
2026-11-29T11:20:01.000000000Z INFO:torch.distributed.elastic.agent.server.api:[default] Worker group FAILED. 3/3 attempts left; will restart worker group
2026-11-29T11:20:01.500000000Z INFO:torch.distributed.elastic.agent.server.api:[default] Stopping worker group
2026-11-29T11:20:02.000000000Z INFO:torch.distributed.elastic.agent.server.api:[default] Starting worker group
2026-11-29T11:40:00.000000000Z Traceback (most recent call last):
2026-11-29T11:40:00.000000000Z   File \"/usr/local/bin/torchrun\", line 8, in <module>
2026-11-29T11:40:00.000000000Z     sys.exit(main())
2026-11-29T11:40:00.000000000Z torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
2026-11-29T11:40:00.000000000Z ============================================================
2026-11-29T11:40:00.000000000Z train.py FAILED
";
    let hints = Hints {
        pod: Some("pretrain-0-x7k2p".to_string()),
        ..Hints::default()
    };
    let d = decode(&lines(text), &hints, false);
    let kinds: Vec<&str> = d.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "worker_group_started",
            "worker_group_restart",
            "worker_group_started",
            "run_failed"
        ]
    );
    let restart = &d.events[1];
    assert_eq!(
        (restart.get("attempts_left"), restart.get("max_restarts")),
        (Some("3"), Some("3"))
    );
    assert_eq!(restart.time, "2026-11-29T11:20:01Z");
    let failed = &d.events[3];
    assert_eq!(
        failed.get("exception_type"),
        Some("torch.distributed.elastic.multiprocessing.errors.ChildFailedError")
    );
    assert_eq!(failed.time, "2026-11-29T11:40:00Z");
    assert_eq!(
        (failed.workload.as_deref(), failed.get("rank")),
        (Some("pretrain"), Some("0"))
    );
}

#[test]
fn tracebacks_become_one_event_with_their_exception() {
    let text = "\
2026-11-29T12:00:00.000000000Z stderr F [rank3]:Traceback (most recent call last):
2026-11-29T12:00:00.000000100Z stderr F [rank3]:  File \"/app/train.py\", line 212, in <module>
2026-11-29T12:00:00.000000200Z stderr F [rank3]:    loss.backward()
2026-11-29T12:00:00.000000300Z stderr F [rank3]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.10 GiB of which 1.21 GiB is free.
2026-11-29T12:00:00.500000000Z stderr F [rank2]:Traceback (most recent call last):
2026-11-29T12:00:00.500000100Z stderr F [rank2]:  File \"/app/train.py\", line 212, in <module>
2026-11-29T12:00:00.500000200Z stderr F [rank2]:torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, unhandled system error
";
    let d = decode(&lines(text), &pod_hints(), false);
    let kinds: Vec<&str> = d.events.iter().map(|e| e.name.as_str()).collect();
    // Each rank's stream holds its own traceback; both end with the input, in time order.
    assert_eq!(kinds, ["cuda_oom", "nccl_error"]);
    let oom = &d.events[0];
    assert_eq!(
        (oom.get("rank"), oom.get("tried_to_allocate")),
        (Some("3"), Some("2.00 GiB"))
    );
    assert_eq!(oom.get("exception_type"), Some("torch.OutOfMemoryError"));
    assert_eq!(
        oom.time, "2026-11-29T12:00:00Z",
        "the last line's stamp, in µs"
    );
    assert!(
        oom.message
            .as_deref()
            .unwrap()
            .starts_with("torch.OutOfMemoryError: CUDA out of memory.")
    );
    assert_eq!(
        (d.events[1].get("rank"), d.events[1].reason.as_deref()),
        (Some("2"), Some("torch.distributed.DistBackendError"))
    );
    assert_eq!(d.counts.rejected, 0);
}

#[test]
fn fluent_bit_and_vector_records() {
    let fluent = r#"{"date":1764411302.5,"log":"completed step: 41, seconds: 5.702, TFLOP/s/device: 134.1, Tokens/s/device: 8619.6, total_weights: 196608, loss: 3.217\n","stream":"stdout","time":"2026-11-29T10:15:02.5Z","kubernetes":{"pod_name":"maxtext-run-slice-job-0-1-q9x4z","namespace_name":"tpu","pod_id":"5b0c","labels":{"jobset.sigs.k8s.io/jobset-name":"maxtext-run","batch.kubernetes.io/job-completion-index":"1"},"host":"gke-tpu-v5p-3","container_name":"jax-tpu"}}"#;
    let vector = r#"{"message":"Worker group FAILED. 2/3 attempts left; will restart worker group","timestamp":"2026-11-29T10:16:00.000000Z","stream":"stderr","kubernetes":{"pod_name":"bert-master-0","pod_namespace":"ml","pod_node_name":"gpu-node-4","container_name":"pytorch","pod_labels":{"training.kubeflow.org/job-name":"bert","training.kubeflow.org/replica-index":"0"}}}"#;
    let d = decode(&[fluent, vector], &Hints::default(), true);
    assert_eq!((d.counts.produced, d.counts.rejected), (2, 0));
    let step = d
        .metrics
        .iter()
        .find(|m| m.name == "step_time_seconds")
        .unwrap();
    assert_eq!(
        (step.value, step.step, step.rank),
        (5.702, Some(41), Some(1))
    );
    assert_eq!(step.workload.as_deref(), Some("maxtext-run"));
    assert_eq!(
        (step.namespace.as_deref(), step.node.as_deref()),
        (Some("tpu"), Some("gke-tpu-v5p-3"))
    );
    assert_eq!(step.time, "2026-11-29T10:15:02.500Z");
    assert_eq!(step.get("container"), Some("jax-tpu"));
    let restart = &d.events[0];
    assert_eq!(restart.name, "worker_group_restart");
    assert_eq!(
        (restart.workload.as_deref(), restart.node.as_deref()),
        (Some("bert"), Some("gpu-node-4"))
    );
    assert_eq!(
        (restart.namespace.as_deref(), restart.get("rank")),
        (Some("ml"), Some("0"))
    );
}

#[test]
fn kafka_message_with_many_lines_is_one_record() {
    let msg = "2026-11-29T10:15:02.000000000Z stdout F {'loss': 2.5, 'epoch': 0.1}\n\
               2026-11-29T10:15:09.000000000Z stdout F {'loss': 2.4, 'epoch': 0.2}\n";
    let d = decode(&[msg], &pod_hints(), true);
    assert_eq!((d.counts.records, d.counts.produced), (1, 1));
    assert_eq!(
        d.metrics.iter().filter(|m| m.name == "train_loss").count(),
        2
    );
    // A message with one truncated JSON record is rejected whole, nothing half-written.
    let bad = "{\"log\":\"completed step: 1, seconds: 1.0\",\"time\":\"2026-11-29T10:15:02Z\"}\n{\"log\":\"trunc";
    let d = decode(&[bad], &Hints::default(), true);
    assert_eq!((d.counts.rejected, d.metrics.len()), (1, 0));
}

#[test]
fn kubectl_logs_timestamps_and_prefix() {
    let text = "\
2026-11-29T10:00:00.000000000Z [titan] 2026-11-29 10:00:00,000 - root - INFO - Loading the checkpoint from ./outputs/checkpoint/step-500.
2026-11-29T10:00:09.000000000Z [titan] 2026-11-29 10:00:09,100 - root - INFO - Finished loading the checkpoint in 9.10 seconds.
2026-11-29T10:00:30.000000000Z [titan] 2026-11-29 10:00:30,000 - root - INFO - \x1b[31mstep: 510  \x1b[32mloss:  3.1234  \x1b[33mmemory: 60.12GiB(63.30%)  \x1b[34mtps: 5,120  \x1b[36mtflops: 240.50  \x1b[35mmfu: 24.32%\x1b[39m
";
    let hints = Hints {
        pod: Some("titan-0-bq7kz".to_string()),
        namespace: Some("research".to_string()),
        ..Hints::default()
    };
    let d = decode(&lines(text), &hints, false);
    let restored: Vec<&Row> = d
        .events
        .iter()
        .filter(|e| e.name == "checkpoint_restored")
        .collect();
    // `Loading the checkpoint from` is not `Loading checkpoint`: only the finish line counts.
    assert_eq!(restored.len(), 1);
    assert_eq!(restored[0].get("seconds"), Some("9.10"));
    let tps = d
        .metrics
        .iter()
        .find(|m| m.name == "tokens_per_second")
        .unwrap();
    assert_eq!(
        (tps.value, tps.step, tps.rank, tps.source.as_str()),
        (5120.0, Some(510), Some(0), "torchtitan")
    );
    assert_eq!(tps.namespace.as_deref(), Some("research"));
    let prefixed =
        "[pod/llama-7d9f8b6c5d-x2x9k/server] Recompiling function forward in /app/model.py:88";
    let d = decode(
        &[prefixed],
        &Hints {
            default_time_ns: Some(0),
            ..Hints::default()
        },
        false,
    );
    assert_eq!(d.events[0].name, "recompile");
    assert_eq!(
        (d.events[0].pod.as_deref(), d.events[0].workload.as_deref()),
        (Some("llama-7d9f8b6c5d-x2x9k"), Some("llama"))
    );
    assert_eq!(d.events[0].get("container"), Some("server"));
}

#[test]
fn lines_that_cannot_be_dated_are_skipped_and_counted() {
    let d = decode(
        &[
            "Saving model checkpoint to /x/checkpoint-5",
            "{'loss': 1.0}",
        ],
        &Hints::default(),
        false,
    );
    assert_eq!(
        (
            d.counts.skipped,
            d.counts.rejected,
            d.events.len(),
            d.metrics.len()
        ),
        (2, 0, 0, 0)
    );
}

/// A Slurm job's output under Slurm's default name (`slurm-%j.out`): its lines are the
/// job's (the workload is the job id, as slurmctld and sacct name it), not a pod's.
#[test]
fn a_slurm_output_file_names_its_job() {
    let hints = Hints {
        path: Some("/scratch/llm/slurm-48213.out".to_string()),
        ..Hints::default()
    };
    let d = decode(
        &[
            "[rank0]:[titan] 2026-12-05 01:30:21,175 - root - INFO - step: 2720  loss:  2.8032  memory: 61.82GiB(78.06%)  tps: 2,564  tflops: 103.71  mfu: 10.49%",
        ],
        &hints,
        false,
    );
    assert!(!d.metrics.is_empty());
    for m in &d.metrics {
        assert_eq!(
            (m.workload.as_deref(), m.pod.as_deref()),
            (Some("48213"), None)
        );
    }
}

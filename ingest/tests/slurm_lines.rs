//! The slurm decoder on slurmctld log lines and `sacct --parsable2` output.
//!
//! There are no permissively licensed real slurmctld logs (Slurm is GPL-2.0; see the
//! shared SOURCES.md, "Not copied"), so these lines are written here from slurmctld's
//! messages as ping_nodes.c, node_mgr.c, job_mgr.c and preempt.c print them, with
//! slurmctld's default `LogTimeFormat=iso8601_ms` stamps. The sacct output follows
//! `sacct --parsable2 --format=JobID,JobName,Partition,State,Start,End,NodeList,ExitCode`.

use std::collections::BTreeMap;

use arrow::array::{Array, AsArray, RecordBatch};
use whyslow_ingest::decode::slurm::SlurmDecoder;
use whyslow_ingest::decode::{Decoder, Hints, Origin, Output};
use whyslow_schemas::tables::{StoredTime, stored_to_ns};
use whyslow_schemas::time::format_rfc3339;

#[derive(Debug)]
struct Ev {
    time: String,
    layer: String,
    kind: String,
    node: Option<String>,
    workload: Option<String>,
    reason: Option<String>,
    attrs: BTreeMap<String, String>,
}

struct Decoded {
    events: Vec<Ev>,
    counts: whyslow_ingest::Counts,
    dead: Vec<String>,
}

fn opt(b: &RecordBatch, c: &str, i: usize) -> Option<String> {
    let a = b.column_by_name(c).unwrap().as_string::<i32>();
    a.is_valid(i).then(|| a.value(i).to_string())
}

fn decode(records: &[&str], kafka: bool) -> Decoded {
    let mut d = SlurmDecoder::new();
    let mut out = Output::new(0);
    let hints = Hints {
        cluster: Some("hpc".to_string()),
        ..Hints::default()
    };
    for (i, r) in records.iter().enumerate() {
        let origin = if kafka {
            Origin::Kafka {
                topic: "slurm",
                partition: 0,
                offset: i as i64,
            }
        } else {
            Origin::File {
                path: "slurmctld.log",
                line: i as u64 + 1,
            }
        };
        d.decode(r.as_bytes(), &origin, &hints, &mut out);
    }
    d.finish(&hints, &mut out);
    assert!(out.counts.balances());
    assert_eq!(out.counts.records, records.len() as u64);
    let b = out.events.finish();
    assert_eq!(out.counts.events, b.num_rows() as u64);
    let time = b
        .column_by_name("time")
        .unwrap()
        .as_primitive::<StoredTime>();
    let attrs = b.column_by_name("attrs").unwrap().as_map();
    let events = (0..b.num_rows())
        .map(|i| {
            let e = attrs.value(i);
            let (k, v) = (
                e.column(0).as_string::<i32>(),
                e.column(1).as_string::<i32>(),
            );
            assert_eq!(opt(&b, "source", i).as_deref(), Some("slurm"));
            assert_eq!(opt(&b, "cluster", i).as_deref(), Some("hpc"));
            Ev {
                time: format_rfc3339(stored_to_ns(time.value(i))),
                layer: opt(&b, "layer", i).unwrap(),
                kind: opt(&b, "kind", i).unwrap(),
                node: opt(&b, "node", i),
                workload: opt(&b, "workload", i),
                reason: opt(&b, "reason", i),
                attrs: (0..e.len())
                    .map(|j| (k.value(j).to_string(), v.value(j).to_string()))
                    .collect(),
            }
        })
        .collect();
    let dead = out.dead.finish();
    let errors = dead.column_by_name("error").unwrap().as_string::<i32>();
    let dead = (0..dead.num_rows())
        .map(|i| errors.value(i).to_string())
        .collect();
    Decoded {
        events,
        counts: out.counts,
        dead,
    }
}

const CONTROLLER_LOG: &str = "\
[2026-11-29T10:15:02.123] error: Nodes gpu-[01-03,07] not responding
[2026-11-29T10:15:02.200] debug:  sched: Running job scheduler for full queue.
[2026-11-29T10:16:42.001] error: Nodes gpu-07 not responding, setting DOWN
[2026-11-29T10:16:42.010] Killing JobId=4242 on failed node gpu-07
[2026-11-29T10:16:42.020] requeue job JobId=4242 due to failure of node gpu-07
[2026-11-29T10:17:00.000] Node gpu-01 now responding
[2026-11-29T10:20:00.500] update_node: node gpu-03 reason set to: Xid 79 GPU fell off the bus
[2026-11-29T10:20:00.501] update_node: node gpu-03 state set to DRAINED
[2026-11-29T10:21:00.000] sched: Allocate JobId=4243 NodeList=gpu-[04-05] #CPUs=128 Partition=gpu
[2026-11-29T10:22:30.000] preempted JobId=4243 has been requeued to reclaim resources for JobId=4250
[2026-11-29T10:25:00.000] sched/backfill: _start_job: Started JobId=4250 in gpu on gpu-[04-05]
[2026-11-29T11:25:00.000] _job_complete: JobId=4250 WEXITSTATUS 0
[2026-11-29T11:25:00.001] _job_complete: JobId=4250 done
[2026-11-29T11:30:00.000] Time limit exhausted for JobId=4251
[2026-11-29T11:31:00.000] _job_complete: JobId=4252 WEXITSTATUS 1
[2026-11-29T11:32:00.000] validate_node_specs: Node gpu-09 unexpectedly rebooted boot_time=1764415900 last response=1764415800
";

#[test]
fn slurmctld_lines() {
    let d = decode(&CONTROLLER_LOG.lines().collect::<Vec<_>>(), false);
    assert_eq!((d.counts.records, d.counts.rejected), (16, 0));
    // The debug line and the bare `reason set to` line say nothing on their own.
    assert_eq!(d.counts.skipped, 3);
    let not_ready: Vec<&Ev> = d
        .events
        .iter()
        .filter(|e| e.kind == "node_not_ready")
        .collect();
    // gpu-01, 02, 03, 07 not responding; then gpu-07 DOWN.
    assert_eq!(not_ready.len(), 5);
    let nodes: Vec<&str> = not_ready.iter().filter_map(|e| e.node.as_deref()).collect();
    assert_eq!(nodes, ["gpu-01", "gpu-02", "gpu-03", "gpu-07", "gpu-07"]);
    assert_eq!(not_ready[0].time, "2026-11-29T10:15:02.123Z");
    assert_eq!(not_ready[0].layer, "infrastructure");
    assert_eq!(
        not_ready[0].attrs.get("state").map(String::as_str),
        Some("NOT_RESPONDING")
    );
    assert_eq!(
        not_ready[4].attrs.get("state").map(String::as_str),
        Some("DOWN")
    );
    let kinds: Vec<&str> = d.events.iter().skip(5).map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "node_failure",
            "requeued",
            "node_ready",
            "node_drained",
            "job_started",
            "job_started",
            "preempted",
            "job_started",
            "job_started",
            "job_finished",
            "job_timeout",
            "job_failed",
            "node_rebooted"
        ]
    );
    let requeued = d.events.iter().find(|e| e.kind == "requeued").unwrap();
    assert_eq!(
        (requeued.workload.as_deref(), requeued.node.as_deref()),
        (Some("4242"), Some("gpu-07"))
    );
    assert_eq!(requeued.layer, "orchestrator");
    let drained = d.events.iter().find(|e| e.kind == "node_drained").unwrap();
    assert_eq!(drained.node.as_deref(), Some("gpu-03"));
    assert_eq!(
        drained.reason.as_deref(),
        Some("Xid 79 GPU fell off the bus")
    );
    let preempted = d.events.iter().find(|e| e.kind == "preempted").unwrap();
    assert_eq!(preempted.workload.as_deref(), Some("4243"));
    assert_eq!(
        preempted.attrs.get("preemptor_job_id").map(String::as_str),
        Some("4250")
    );
    assert_eq!(
        preempted.attrs.get("action").map(String::as_str),
        Some("requeued")
    );
    let failed = d.events.iter().find(|e| e.kind == "job_failed").unwrap();
    assert_eq!(failed.attrs.get("exit_code").map(String::as_str), Some("1"));
    let started: Vec<&Ev> = d
        .events
        .iter()
        .filter(|e| e.kind == "job_started")
        .collect();
    assert_eq!(
        started[0].attrs.get("partition").map(String::as_str),
        Some("gpu")
    );
    assert_eq!(started[3].node.as_deref(), Some("gpu-05"));
}

const SACCT: &str = "\
JobID|JobName|Partition|State|Start|End|NodeList|ExitCode
4242|llama-pretrain|gpu|NODE_FAIL|2026-11-29T09:00:00|2026-11-29T10:16:42|gpu-[05-07]|0:0
4242.batch|batch||CANCELLED|2026-11-29T09:00:00|2026-11-29T10:16:42|gpu-05|0:15
4243|ft-gemma|gpu|PREEMPTED|2026-11-29T10:21:00|2026-11-29T10:22:30|gpu-[04-05]|0:0
4244|eval|gpu|OUT_OF_MEMORY|2026-11-29T10:30:00|2026-11-29T10:31:10|gpu-08|0:125
4245|sweep|gpu|CANCELLED by 1000|2026-11-29T10:40:00|2026-11-29T10:45:00|gpu-09|0:0
4246|queued|gpu|PENDING|Unknown|Unknown|None assigned|0:0
4247|tiny|gpu|COMPLETED|2026-11-29T11:00:00|2026-11-29T11:05:00|gpu-01|0:0
4248|flaky|gpu|FAILED|2026-11-29T11:00:00|2026-11-29T11:01:00|gpu-02|1:0
4249|long|gpu|TIMEOUT|2026-11-29T11:00:00|2026-11-29T12:00:00|gpu-03|0:0
4250_3|array|gpu|REQUEUED|2026-11-29T11:10:00|2026-11-29T11:12:00|gpu-04|0:0
";

#[test]
fn sacct_parsable2() {
    let d = decode(&SACCT.lines().collect::<Vec<_>>(), false);
    assert_eq!((d.counts.records, d.counts.rejected), (11, 0));
    // Header, the step row and the pending job say nothing.
    assert_eq!(d.counts.skipped, 3);
    let kinds: Vec<(&str, &str)> = d
        .events
        .iter()
        .map(|e| (e.workload.as_deref().unwrap(), e.kind.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("4242", "job_started"),
            ("4242", "job_started"),
            ("4242", "job_started"),
            ("4242", "node_failure"),
            ("4243", "job_started"),
            ("4243", "job_started"),
            ("4243", "preempted"),
            ("4244", "job_started"),
            ("4244", "oom_killed"),
            ("4245", "job_started"),
            ("4245", "job_cancelled"),
            ("4247", "job_started"),
            ("4247", "job_finished"),
            ("4248", "job_started"),
            ("4248", "job_failed"),
            ("4249", "job_started"),
            ("4249", "job_timeout"),
            ("4250_3", "job_started"),
            ("4250_3", "requeued"),
        ]
    );
    let node_fail = &d.events[3];
    // A multi-node job's failure names no single node: its nodes stay in attrs.
    assert_eq!(
        (node_fail.node.as_deref(), node_fail.layer.as_str()),
        (None, "infrastructure")
    );
    assert_eq!(
        node_fail.attrs.get("node_list").map(String::as_str),
        Some("gpu-[05-07]")
    );
    assert_eq!(node_fail.time, "2026-11-29T10:16:42Z");
    assert_eq!(
        node_fail.attrs.get("job_name").map(String::as_str),
        Some("llama-pretrain")
    );
    assert_eq!(d.events[0].node.as_deref(), Some("gpu-05"));
    assert_eq!(d.events[0].time, "2026-11-29T09:00:00Z");
    let preempted = &d.events[6];
    assert_eq!(
        (preempted.layer.as_str(), preempted.reason.as_deref()),
        ("orchestrator", Some("PREEMPTED"))
    );
    let oom = &d.events[8];
    assert_eq!(
        (
            oom.node.as_deref(),
            oom.attrs.get("exit_code").map(String::as_str)
        ),
        (Some("gpu-08"), Some("0:125"))
    );
    assert_eq!(
        d.events[10].attrs.get("state").map(String::as_str),
        Some("CANCELLED by 1000")
    );
}

#[test]
fn bad_input_goes_to_dead_letters_whole() {
    let d = decode(
        &[
            "4242|x|gpu|FAILED",
            "JobID|State|Start|End",
            "1|FAILED|2026-11-29T10:00:00",
            "2|FAILED|yesterday|",
        ],
        false,
    );
    assert_eq!((d.counts.rejected, d.counts.skipped), (3, 1));
    assert!(d.dead[0].contains("no header line"), "{}", d.dead[0]);
    assert!(
        d.dead[1].contains("3 fields but its header has 4"),
        "{}",
        d.dead[1]
    );
    assert!(
        d.dead[2].contains("unreadable sacct time 'yesterday'"),
        "{}",
        d.dead[2]
    );
    let d = decode(
        &["[2026-11-29T10:15:02.123] error: Nodes gpu-[01-03 not responding"],
        false,
    );
    assert_eq!(d.counts.rejected, 1);
    assert!(
        d.dead[0].starts_with("slurmctld.log:1: unbalanced brackets"),
        "{}",
        d.dead[0]
    );
}

#[test]
fn kafka_message_holds_a_whole_sacct_dump() {
    let d = decode(&[SACCT], true);
    assert_eq!((d.counts.records, d.counts.produced), (1, 1));
    assert_eq!(d.events.len(), 19);
    // One bad row rejects the message whole: nothing of it is written.
    let bad = format!("{SACCT}4251|x|gpu|FAILED|2026-11-29T10:00:00\n");
    let d = decode(&[&bad], true);
    assert_eq!((d.counts.rejected, d.events.len()), (1, 0));
}

/// Every row of a line carries the line's text: a 4 KB line naming 16,384 nodes would
/// write 64 MB, and is one dead letter instead; the same nodes on a line of ordinary length
/// are a row each, but not 64 times over in one message.
#[test]
fn a_long_line_over_a_large_hostlist_is_refused_before_it_is_copied_per_node() {
    let pad = "x".repeat(4096);
    let long = format!(
        "[2026-11-29T10:15:02.123] error: Nodes gpu[00000-16383] not responding, setting DOWN {pad}"
    );
    let d = decode(&[&long], false);
    assert!(d.events.is_empty());
    assert_eq!(d.dead.len(), 1);
    assert!(
        d.dead[0].contains("16384 rows") && d.dead[0].contains("byte limit"),
        "{}",
        d.dead[0]
    );
    let short =
        "[2026-11-29T10:15:02.123] error: Nodes gpu[00000-16383] not responding, setting DOWN";
    let d = decode(&[short], false);
    assert_eq!(d.events.len(), 16384);
    assert!(d.dead.is_empty());
    // The limit is the record's: a Kafka message of 64 such lines would write 64 times as
    // much, and is one dead letter.
    let message = vec![short; 64].join("\n");
    let d = decode(&[&message], true);
    assert!(d.events.is_empty());
    assert_eq!(d.dead.len(), 1);
    assert!(d.dead[0].contains("byte limit"), "{}", d.dead[0]);
}

//! The kernel-log decoder on every real sample of `fixtures/samples/xid-kernel-logs/` and
//! node-problem-detector's kernel-log-generator problems, and on the other line formats
//! (journalctl short-iso and json, RFC 5424/3164, dmesg -T, /dev/kmsg) with edge cases.

use std::collections::HashMap;
use std::path::PathBuf;

use arrow::array::{Array, AsArray, RecordBatch};
use whyslow_ingest::decode::kmsg::KmsgDecoder;
use whyslow_ingest::decode::{Decoder, Hints, Origin, Output};
use whyslow_schemas::tables::{StoredTime, stored_to_ns};
use whyslow_schemas::time::{format_rfc3339, parse_rfc3339};

fn sample(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/samples")
        .join(rel)
}

fn feed_lines(text: &str, path: &str, hints: &Hints) -> Output {
    let mut d = KmsgDecoder::new();
    let mut out = Output::new(0);
    for (i, line) in text.split_terminator('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        d.decode(
            line.as_bytes(),
            &Origin::File {
                path,
                line: i as u64 + 1,
            },
            hints,
            &mut out,
        );
    }
    d.finish(hints, &mut out);
    assert!(out.counts.balances(), "{:?}", out.counts);
    out
}

fn hints_for(rel: &str) -> Hints {
    Hints {
        path: Some(sample(rel).to_string_lossy().into_owned()),
        ..Hints::default()
    }
}

fn feed_file(rel: &str, hints: &Hints) -> Output {
    let text = std::fs::read_to_string(sample(rel)).unwrap();
    feed_lines(&text, rel, hints)
}

/// The lines a markdown excerpt quotes (`> …`), without the quote marks.
fn quoted_lines(rel: &str) -> String {
    let text = std::fs::read_to_string(sample(rel)).unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("> "))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[derive(Debug, Clone)]
struct Ev {
    time: i64,
    kind: String,
    reason: String,
    severity: String,
    node: Option<String>,
    device: Option<String>,
    message: String,
    attrs: HashMap<String, String>,
}

fn strings(b: &RecordBatch, col: &str) -> Vec<Option<String>> {
    let a = b.column_by_name(col).unwrap().as_string::<i32>();
    (0..a.len())
        .map(|i| a.is_valid(i).then(|| a.value(i).to_string()))
        .collect()
}

fn events(out: &mut Output) -> Vec<Ev> {
    let b = out.events.finish();
    let time = b
        .column_by_name("time")
        .unwrap()
        .as_primitive::<StoredTime>();
    let s = |c| strings(&b, c);
    let (kind, reason, sev, node, device, msg) = (
        s("kind"),
        s("reason"),
        s("severity"),
        s("node"),
        s("device"),
        s("message"),
    );
    let m = b.column_by_name("attrs").unwrap().as_map();
    (0..b.num_rows())
        .map(|i| {
            let e = m.value(i);
            let (k, v) = (
                e.column(0).as_string::<i32>(),
                e.column(1).as_string::<i32>(),
            );
            Ev {
                time: stored_to_ns(time.value(i)),
                kind: kind[i].clone().unwrap(),
                reason: reason[i].clone().unwrap(),
                severity: sev[i].clone().unwrap(),
                node: node[i].clone(),
                device: device[i].clone(),
                message: msg[i].clone().unwrap(),
                attrs: (0..k.len())
                    .map(|j| (k.value(j).to_string(), v.value(j).to_string()))
                    .collect(),
            }
        })
        .collect()
}

fn count(ev: &[Ev], kind: &str, reason: &str) -> usize {
    ev.iter()
        .filter(|e| e.kind == kind && e.reason == reason)
        .count()
}

fn dead(out: &mut Output) -> Vec<String> {
    strings(&out.dead.finish(), "error")
        .into_iter()
        .flatten()
        .collect()
}

#[test]
fn every_kernel_log_sample_ingests_without_rejections() {
    let dir = sample("xid-kernel-logs");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    let mut seen = 0;
    for f in files.iter().filter(|f| f.ends_with(".log")) {
        let rel = format!("xid-kernel-logs/{f}");
        let mut out = feed_file(&rel, &hints_for(&rel));
        let c = out.counts;
        assert_eq!(c.rejected, 0, "{f}: {:?}", dead(&mut out));
        assert_eq!(c.metrics, 0);
        seen += 1;
    }
    assert_eq!(seen, 8);
}

#[test]
fn xid13_storm_counts_and_fields() {
    let rel = "xid-kernel-logs/gpud-dmesg-decode-iso-xid13-storm-122KB.log";
    let mut out = feed_file(rel, &hints_for(rel));
    let ev = events(&mut out);
    // SOURCES.md: 629 Xid 13 lines and 7 Xid 43 lines.
    assert_eq!(count(&ev, "xid", "13"), 629);
    assert_eq!(count(&ev, "xid", "43"), 7);
    assert_eq!(ev.len(), 636);
    let first = &ev[0];
    assert_eq!(format_rfc3339(first.time), "2025-01-21T02:21:33.498559Z");
    assert_eq!(
        first.node.as_deref(),
        Some("gpud-dmesg-decode-iso-xid13-storm-122KB")
    );
    assert_eq!(first.device.as_deref(), Some("0000:38:00"));
    assert_eq!(first.attrs["pci_bus_id"], "00000000:38:00.0");
    assert_eq!(first.attrs["level"], "warn");
    assert_eq!(first.attrs["category"], "application");
    assert_eq!(
        first.attrs["text"],
        "Graphics SM Warp Exception on (GPC 8, TPC 5, SM 0): Out Of Range Address"
    );
    assert!(!first.attrs.contains_key("pid"));
    let x43 = ev.iter().find(|e| e.reason == "43").unwrap();
    assert_eq!(
        (x43.attrs["pid"].as_str(), x43.attrs["process"].as_str()),
        ("2815167", "pt_main_thread")
    );
    assert!(first.message.starts_with("NVRM: Xid (PCI:0000:38:00): 13,"));
    // Each line is its own event: ids are distinct.
    let b: std::collections::HashSet<_> = ev.iter().map(|e| (e.time, e.message.clone())).collect();
    assert_eq!(b.len(), 636);
}

#[test]
fn memory_errors_and_oom_kills() {
    let rel = "xid-kernel-logs/gpud-dmesg-time-format-iso-peermem-and-xid.log";
    let mut out = feed_file(rel, &hints_for(rel));
    let ev = events(&mut out);
    assert_eq!(
        (
            count(&ev, "xid", "48"),
            count(&ev, "xid", "63"),
            count(&ev, "xid", "94")
        ),
        (1, 1, 9)
    );
    assert_eq!(ev.len(), 11, "the nvidia-peermem lines are skipped");
    let dbe = ev.iter().find(|e| e.reason == "48").unwrap();
    assert_eq!(
        (dbe.severity.as_str(), dbe.attrs["category"].as_str()),
        ("critical", "gpu_memory_error")
    );
    assert_eq!(dbe.attrs["meaning"], "Double Bit ECC Error (DBE)");

    let rel = "xid-kernel-logs/gpud-dmesg-iso-xid-13-43-and-oom.log";
    let mut out = feed_file(rel, &hints_for(rel));
    let ev = events(&mut out);
    assert_eq!((count(&ev, "xid", "13"), count(&ev, "xid", "43")), (16, 1));
    let oom: Vec<&Ev> = ev.iter().filter(|e| e.kind == "oom_killed").collect();
    assert_eq!(
        oom.len(),
        6,
        "the reaper line is a detail; every kill line is one kill"
    );
    let pids: Vec<Option<&str>> = oom
        .iter()
        .map(|e| e.attrs.get("pid").map(String::as_str))
        .collect();
    assert_eq!(
        pids,
        [
            None,
            Some("123"),
            Some("456"),
            Some("123"),
            Some("863987"),
            None
        ]
    );
    let pod = oom[4];
    assert_eq!(pod.attrs["pod_uid"], "a8697f49-441d-4d4f-90d2-6d8e1fa3bbe7");
    assert_eq!(pod.attrs["process"], "node");
    assert_eq!(pod.reason, "CONSTRAINT_MEMCG");
    assert_eq!(
        (
            oom[1].attrs["uid"].as_str(),
            oom[1].attrs["process"].as_str()
        ),
        ("48", "httpd")
    );
    assert_eq!(oom[5].reason, "OTHER_CONSTRAINT");

    let rel = "xid-kernel-logs/gpud-dmesg-iso-libnccl-segfault.log";
    let mut out = feed_file(rel, &hints_for(rel));
    let ev = events(&mut out);
    assert_eq!(ev.len(), 2);
    assert_eq!(
        (
            ev[0].kind.as_str(),
            ev[0].attrs["library"].as_str(),
            ev[0].attrs["pid"].as_str()
        ),
        ("segfault", "libnccl.so.2", "2536443")
    );
}

#[test]
fn gsp_timeouts_in_dmesg_ctime_carry_the_gpu_uuid() {
    let rel = "xid-kernel-logs/gpud-dmesg-ctime-xid-119-gsp-timeout-h100.log";
    let mut out = feed_file(rel, &hints_for(rel));
    let ev = events(&mut out);
    assert_eq!(count(&ev, "xid", "119"), 5);
    assert_eq!(ev.len(), 5);
    let first = &ev[0];
    assert_eq!(format_rfc3339(first.time), "2025-02-23T16:24:18Z");
    assert_eq!(
        (first.severity.as_str(), first.attrs["category"].as_str()),
        ("critical", "gpu_failure")
    );
    assert_eq!(
        first.attrs["uuid"],
        "GPU-509665ad-b600-ac93-3616-d754b23d636d"
    );
    assert_eq!(first.attrs["process"], "nvidia-smi");
    assert_eq!(ev[3].attrs["process"], "cache_mgr_main");
}

#[test]
fn raw_dev_kmsg_records_and_boot_time() {
    for f in [
        "gpud-dev-kmsg-raw-nvswitch.log",
        "gpud-dev-kmsg-raw-nvidia-peermem.log",
    ] {
        let rel = format!("xid-kernel-logs/{f}");
        let mut out = feed_file(&rel, &hints_for(&rel));
        assert_eq!(
            (out.counts.rejected, out.counts.events),
            (0, 0),
            "{f}: nothing in them is a fault"
        );
        assert_eq!(out.counts.skipped, out.counts.records);
        assert!(events(&mut out).is_empty());
    }
    // A fault in /dev/kmsg form is dated from the boot time, or rejected without one.
    let line = "3,4011,57631398464,-;NVRM: Xid (PCI:0000:8a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n";
    let mut out = feed_lines(line, "kmsg", &Hints::default());
    assert_eq!(out.counts.rejected, 1);
    assert!(dead(&mut out)[0].contains("57631.398464 s after boot"));
    let boot = parse_rfc3339("2026-11-29T00:00:00Z").unwrap();
    let hints = Hints {
        boot_time_ns: Some(boot),
        node: Some("gke-gpu-7".into()),
        ..Hints::default()
    };
    let mut out = feed_lines(line, "kmsg", &hints);
    let ev = events(&mut out);
    assert_eq!(ev[0].time, boot + 57_631_398_464_000);
    assert_eq!(
        (ev[0].node.as_deref(), ev[0].attrs["level"].as_str()),
        (Some("gke-gpu-7"), "err")
    );
}

#[test]
fn fabric_manager_log_is_not_kernel_log() {
    let rel = "xid-kernel-logs/gpud-nvidia-fabricmanager.log";
    let mut out = feed_file(rel, &hints_for(rel));
    // Even its "[ERROR] detected NVSwitch non-fatal error" line: skipped by design.
    assert_eq!((out.counts.events, out.counts.rejected), (0, 0));
    assert_eq!(out.counts.skipped, out.counts.records);
    assert!(events(&mut out).is_empty());
}

#[test]
fn markdown_excerpts_quoted_lines() {
    let rel = "xid-kernel-logs/gpud-docs-dmesg-ctime-xid-13-109-excerpt.md";
    let mut out = feed_lines(&quoted_lines(rel), rel, &hints_for(rel));
    let ev = events(&mut out);
    assert_eq!(
        (count(&ev, "xid", "13"), count(&ev, "xid", "109"), ev.len()),
        (3, 1, 4)
    );
    assert_eq!(format_rfc3339(ev[3].time), "2024-08-30T11:43:14Z");
    assert_eq!(
        ev[3].attrs["text"],
        "Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005"
    );

    // Plain dmesg stamps: relative to boot.
    let rel = "xid-kernel-logs/gpud-docs-xid79-with-nvswitch-sxid-20034-excerpt.md";
    let text = quoted_lines(rel);
    let mut out = feed_lines(&text, rel, &hints_for(rel));
    assert_eq!(
        out.counts.rejected, 6,
        "the six fault lines need a boot time"
    );
    assert!(
        dead(&mut out)
            .iter()
            .all(|r| r.contains("pass --boot-time"))
    );
    let mut hints = hints_for(rel);
    hints.boot_time_ns = Some(parse_rfc3339("2026-01-01T00:00:00Z").unwrap());
    let mut out = feed_lines(&text, rel, &hints);
    assert_eq!(out.counts.rejected, 0);
    let ev = events(&mut out);
    assert_eq!(count(&ev, "xid", "79"), 1);
    assert_eq!(count(&ev, "gpu_fallen_off_bus", "fallen_off_the_bus"), 1);
    assert_eq!(
        count(&ev, "sxid", "20034"),
        4,
        "headline SXid lines; Severity/Data lines are details"
    );
    let x79 = ev.iter().find(|e| e.kind == "xid").unwrap();
    assert_eq!(
        x79.attrs["uuid"],
        "GPU-b6c3b2be-c55b-d076-fa0e-d464e4c7e08b"
    );
    assert_eq!(
        x79.time,
        hints.boot_time_ns.unwrap() + 6_781_741_548_779_000
    );
    let links: Vec<&str> = ev
        .iter()
        .filter(|e| e.kind == "sxid")
        .map(|e| e.attrs["link"].as_str())
        .collect();
    assert_eq!(links, ["48", "63", "37", "62"]);
    assert!(
        ev.iter()
            .filter(|e| e.kind == "sxid")
            .all(|e| e.severity == "critical" && e.attrs["category"] == "nvlink_error")
    );
}

#[test]
fn node_problem_detector_generator_problems() {
    let want: [(&str, &[(&str, usize)]); 8] = [
        ("oom_kill.log", &[("oom_killed", 1)]),
        ("docker_hung.log", &[("hung_task", 1)]),
        ("aufs_umount_hung.log", &[("hung_task", 1)]),
        ("null_pointer.log", &[("kernel_oops", 1)]),
        ("divide_zero.log", &[("kernel_oops", 1)]),
        ("readonly_filesystem.log", &[("filesystem_readonly", 1)]),
        ("unregister_netdevice.log", &[]),
        ("au_opts_verify.log", &[]),
    ];
    let mtime = parse_rfc3339("2026-11-29T10:00:00Z").unwrap();
    for (f, kinds) in want {
        let rel = format!("node-problem-detector/kernel-log-generator-problems/{f}");
        let mut hints = hints_for(&rel);
        hints.default_time_ns = Some(mtime); // the runner passes the file's mtime
        let mut out = feed_file(&rel, &hints);
        assert_eq!(out.counts.rejected, 0, "{f}");
        let ev = events(&mut out);
        let total: usize = kinds.iter().map(|(_, n)| n).sum();
        assert_eq!(ev.len(), total, "{f}: {ev:?}");
        for (k, n) in kinds {
            assert_eq!(ev.iter().filter(|e| e.kind == *k).count(), *n, "{f}");
        }
        for e in &ev {
            assert_eq!(e.time, mtime);
            assert_eq!(e.node.as_deref(), Some(f.trim_end_matches(".log")));
        }
    }
    let rel = "node-problem-detector/kernel-log-generator-problems/docker_hung.log";
    let mut hints = hints_for(rel);
    hints.default_time_ns = Some(mtime);
    let ev = events(&mut feed_file(rel, &hints));
    assert_eq!(
        (
            ev[0].attrs["process"].as_str(),
            ev[0].attrs["pid"].as_str(),
            ev[0].attrs["blocked_seconds"].as_str()
        ),
        ("docker", "20744", "120")
    );
    // With nothing to date them, the fault lines are rejected (and nothing else is).
    let mut out = feed_file(
        "node-problem-detector/kernel-log-generator-problems/oom_kill.log",
        &Hints::default(),
    );
    assert_eq!(out.counts.rejected, 2, "both lines of the kill");
    assert!(dead(&mut out)[0].contains("pass --time"));
}

#[test]
fn syslog_journal_and_rfc5424_lines() {
    let text = "\
2026-11-29T10:15:02.123456+00:00 gke-gpu-7 kernel: NVRM: Xid (PCI:0000:8a:00): 79, pid=1234, name=python3, GPU has fallen off the bus.
2026-11-29T10:15:03+0000 gke-gpu-7 kernel: mlx5_core 0000:8a:00.0 ens8f0np0: Link down
2026-11-29T10:15:09+0000 gke-gpu-7 kernel: mlx5_core 0000:8a:00.0 ens8f0np0: Link up
2026-11-29T10:15:10+0000 gke-gpu-7 systemd[1]: Started session 1.
Nov 29 10:16:00 gke-gpu-8 kernel: [ 1234.567890] pcieport 0000:00:01.0: AER: Uncorrected (Non-Fatal) error received: 0000:01:00.0
Nov 29 10:16:01 gke-gpu-8 kernel: pcieport 0000:00:01.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer
<4>1 2026-11-29T10:17:00.5Z gke-gpu-9 kernel - - - mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 5: be00000000800400
{\"__REALTIME_TIMESTAMP\":\"1764411480000000\",\"_HOSTNAME\":\"gke-gpu-10\",\"SYSLOG_IDENTIFIER\":\"kernel\",\"PRIORITY\":\"3\",\"MESSAGE\":\"INFO: task python3:4242 blocked for more than 600 seconds.\"}
{\"__REALTIME_TIMESTAMP\":\"1764411481000000\",\"_HOSTNAME\":\"gke-gpu-10\",\"MESSAGE\":[79,117,116,32,111,102,32,109,101,109,111,114,121,58,32,75,105,108,108,101,100,32,112,114,111,99,101,115,115,32,55,32,40,112,121,41]}
[Sat Nov 29 10:18:00 2025] NVRM: Xid (PCI:0000:8a:00): 74, pid=1, name=x, NVLink: fatal error detected
kern  :err   : [Sat Nov 29 10:18:01 2025] NVRM: Xid (PCI:0000:8a:00): 94, pid=1, name=x, Contained: SM (0x1).
";
    let hints = Hints {
        default_time_ns: Some(parse_rfc3339("2025-12-01T00:00:00Z").unwrap()),
        node: Some("fallback".into()),
        ..Hints::default()
    };
    let mut out = feed_lines(text, "syslog", &hints);
    let c = out.counts;
    assert_eq!(
        (c.records, c.rejected, c.events),
        (11, 0, 9),
        "{:?}",
        dead(&mut out)
    );
    let ev = events(&mut out);
    let got: Vec<(&str, &str, Option<&str>)> = ev
        .iter()
        .map(|e| (e.kind.as_str(), e.reason.as_str(), e.node.as_deref()))
        .collect();
    assert_eq!(
        got,
        [
            ("xid", "79", Some("gke-gpu-7")),
            ("nic_link_down", "link_down", Some("gke-gpu-7")),
            ("nic_link_up", "link_up", Some("gke-gpu-7")),
            ("pcie_aer", "non_fatal", Some("gke-gpu-8")),
            ("mce", "machine_check", Some("gke-gpu-9")),
            ("hung_task", "blocked", Some("gke-gpu-10")),
            ("oom_killed", "out_of_memory", Some("gke-gpu-10")),
            ("xid", "74", Some("fallback")),
            ("xid", "94", Some("fallback")),
        ]
    );
    assert_eq!(format_rfc3339(ev[0].time), "2026-11-29T10:15:02.123456Z");
    assert_eq!(
        (ev[0].attrs["pid"].as_str(), ev[0].attrs["process"].as_str()),
        ("1234", "python3")
    );
    assert_eq!(
        (
            ev[1].attrs["interface"].as_str(),
            ev[1].attrs["pci"].as_str()
        ),
        ("ens8f0np0", "0000:8a:00.0")
    );
    assert_eq!(
        format_rfc3339(ev[3].time),
        "2026-11-29T10:16:00Z",
        "RFC 3164 year: nearest the last dated line"
    );
    assert_eq!(ev[3].attrs["source"], "0000:01:00.0");
    assert_eq!(format_rfc3339(ev[4].time), "2026-11-29T10:17:00.500Z");
    assert_eq!(ev[4].attrs["level"], "warn");
    assert_eq!(
        (
            format_rfc3339(ev[5].time).as_str(),
            ev[5].attrs["level"].as_str()
        ),
        ("2025-11-29T10:18:00Z", "err")
    );
    assert_eq!(ev[6].attrs["process"], "py");
    assert_eq!(
        (ev[7].severity.as_str(), ev[7].attrs["category"].as_str()),
        ("error", "nvlink_error")
    );
    assert_eq!(ev[8].attrs["level"], "err");
}

#[test]
fn broken_input() {
    let hints = Hints {
        default_time_ns: Some(1),
        ..Hints::default()
    };
    let mut d = KmsgDecoder::new();
    let mut out = Output::new(0);
    let origin = Origin::File { path: "x", line: 1 };
    // Not text.
    d.decode(b"\xff\xfe\x00NVRM: Xid", &origin, &hints, &mut out);
    // A huge line with a fault at its end, and garbage that is text.
    let huge = format!(
        "{} NVRM: Xid (PCI:0000:8a:00): 79, GPU has fallen off the bus.",
        "x".repeat(1 << 20)
    );
    d.decode(huge.as_bytes(), &origin, &hints, &mut out);
    d.decode(b"{\"MESSAGE\": 17}", &origin, &hints, &mut out);
    d.decode(b"<999999999999>1 - - - - -", &origin, &hints, &mut out);
    d.decode(b"2026-11-29T10:15:02,1+00:00", &origin, &hints, &mut out);
    d.decode(b"NVRM: Xid (PCI:0000:8a:00", &origin, &hints, &mut out);
    let c = out.counts;
    assert_eq!(
        (c.records, c.rejected, c.events),
        (6, 2, 1),
        "{:?}",
        dead(&mut out)
    );
    let reasons = dead(&mut out);
    assert!(reasons.iter().any(|r| r.contains("not UTF-8 text")));
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("not a journalctl -o json record"))
    );

    // A Kafka message with several lines is one record.
    let msg = "2026-11-29T10:15:02+0000 n1 kernel: NVRM: Xid (PCI:0000:8a:00): 79, x\n2026-11-29T10:15:03+0000 n1 kernel: hello\n";
    let mut out = Output::new(0);
    d.decode(
        msg.as_bytes(),
        &Origin::Kafka {
            topic: "kmsg",
            partition: 0,
            offset: 7,
        },
        &Hints::default(),
        &mut out,
    );
    assert_eq!(
        (out.counts.records, out.counts.produced, out.counts.events),
        (1, 1, 1)
    );
}

#[test]
fn rfc3164_year_comes_from_the_time_hint_when_nothing_else_dates_the_input() {
    let hints = Hints {
        default_time_ns: Some(parse_rfc3339("2026-01-03T00:00:00Z").unwrap()),
        ..Hints::default()
    };
    let mut out = feed_lines(
        "Dec 31 23:59:59 n1 kernel: INFO: task x:1 blocked for more than 120 seconds.\n",
        "s",
        &hints,
    );
    assert_eq!(
        format_rfc3339(events(&mut out)[0].time),
        "2025-12-31T23:59:59Z"
    );
}

#[test]
fn auto_detection_reads_the_kernel_log_samples_as_kmsg() {
    use whyslow_ingest::decode::Format;
    use whyslow_ingest::decode::auto::detect;
    let dir = sample("xid-kernel-logs");
    let mut got = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".log") {
            got.push((detect(&std::fs::read(dir.join(&name)).unwrap()), name));
        }
    }
    got.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(got.len(), 8);
    // The Fabric Manager log too: its lines are then skipped by the kmsg decoder.
    for (f, name) in &got {
        assert_eq!(*f, Some(Format::Kmsg), "{name}");
    }
}

//! Decoder of kernel and system logs: finds the hardware and host faults that explain
//! slowdowns (NVIDIA Xid / SXid, GPU bus loss, ECC, NIC link flaps, OOM kills, hung
//! tasks, PCIe AER, machine checks, segfaults, oopses) and turns each into an event
//! (layer infrastructure, source `kernel`). Every other line is skipped by design and
//! counted; only lines that cannot be read are rejected.
//!
//! **Line formats** (see [`frame`] and [`journal`]): ISO-dated syslog and `journalctl -o
//! short-iso[-precise]` (`TIME HOST IDENT: MSG`), `journalctl -o json`, RFC 5424, RFC 3164
//! (no year: the one nearest the last dated line of the input, else `--time`/the file's
//! mtime, else now), `dmesg --time-format iso`
//! (with or without `--decode`'s `kern  :warn  : `), `dmesg -T`/`--ctime` (local time,
//! read as UTC), plain `dmesg` and raw `/dev/kmsg` records (time since boot, which needs
//! `Hints::boot_time_ns`), and bare messages (`dmesg -t`).
//!
//! **Time.** A line's own time; for boot-relative stamps boot time + offset; for a line
//! with none, the time of the last dated line of the same input, else
//! `Hints::default_time_ns` (`--time` or the file's mtime). A *recognized* line that
//! still has no time (boot-relative without `--boot-time`, or undated with nothing to
//! date it) is rejected with the reason; unrecognized lines are skipped whatever their
//! time.
//!
//! **Skips by design**: unrecognized messages, blank lines, continuation lines (a leading
//! space: `/dev/kmsg` dictionaries, call traces), detail lines of something already
//! reported (an SXid's `Data {…}` / `Severity …` lines, AER and MCE detail lines, the
//! OOM reaper), a second line naming the same OOM-killed pid of the same node within
//! 60 s, the `NVRM: GPU at PCI:…: GPU-<uuid>` identity line (remembered: later Xids of
//! that PCI address on the same node carry `uuid`), and NVIDIA Fabric Manager's own log
//! lines (`[Feb 25 2025 13:59:45] [INFO] …`), which are not kernel log. Bytes that are
//! not UTF-8 are rejected.
//!
//! **Scope.** `node` = the line's host field, else `--node`, else the input file's name
//! without its extension. What is remembered across lines (GPU identities, the last OOM
//! kill) is kept per node, so one decoder fed many nodes' lines (a Kafka topic) reads
//! each node as a decoder per node file would; it is bounded (see `NodeMemory`).
//! `device` = the PCI address as the line writes it, for GPU and NVSwitch events.
//!
//! **Events** (`reason` in brackets; every event has attrs `text` and, where the format
//! gives it, `level`):
//! - `xid` [the code]: `xid`, `pci`, `pci_bus_id` (NVML form `00000000:8A:00.0`, as
//!   dcgm-exporter's label), `pid`, `process`, `meaning`, `category` (`gpu_failure`,
//!   `gpu_memory_error`, `nvlink_error`, `application`, `other`), `uuid` (when an
//!   identity line named it); severity from the catalog in [`xid`].
//! - `sxid` [the code]: `sxid`, `pci`, `pci_bus_id`, `switch`, `fatal`, `link`, `category`
//!   = `nvlink_error`; critical when fatal, else warning.
//! - `gpu_fallen_off_bus` [`fallen_off_the_bus`], `ecc_error` [`uncorrectable`]: `pci`,
//!   `pci_bus_id`, `category`.
//! - `nic_link_down` [`link_down`] / `nic_link_up` [`link_up`]: `driver`, `interface`,
//!   `pci`, `speed`.
//! - `oom_killed` [constraint, e.g. `CONSTRAINT_MEMCG`, else `out_of_memory`/`oom_kill`]:
//!   `pid`, `process`, `uid`, `constraint`, `total_vm`, `anon_rss`, `cgroup`, `pod_uid`,
//!   `container_id`.
//! - `hung_task` [`blocked`]: `process`, `pid`, `blocked_seconds`.
//! - `pcie_aer` [`corrected`/`non_fatal`/`fatal`]: `port`, `aer_severity`, `source`,
//!   `pci_bus_id`.
//! - `mce` [`machine_check`/`events_logged`/`fatal`]: `cpu`, `bank`, `status`.
//! - `segfault` [`segfault`]: `process`, `pid`, `address`, `library`.
//! - `kernel_oops` [`null_pointer`/`divide_error`/`general_protection_fault`/`kernel_bug`],
//!   `soft_lockup`, `kernel_panic`, `filesystem_readonly` [`read_only_remount`]
//!   (`filesystem`).
//!
//! `event_id` is a hash of (`kernel`, node, time, message): the same line ingested twice
//! is the same event.

pub mod frame;
pub mod journal;
pub mod rules;

use std::borrow::Cow;
use std::collections::HashMap;

use whyslow_schemas::Layer;
use whyslow_schemas::builders::{EventRow, Scope};

use crate::decode::{Decoder, Format, Hints, Origin, Output};
use frame::{Shape, When};
use rules::Outcome;
use whyslow_schemas::time::{self, Nanos};

/// GPU identities remembered per node at most (a node has 8 or 16 GPUs; NVSwitches and
/// re-enumerated devices add a few).
const MAX_GPUS_PER_NODE: usize = 64;
/// Nodes remembered at most; past it the node seen least recently is forgotten.
const MAX_NODES: usize = 16_384;
/// Lines naming the same OOM-killed pid within this window are one kill.
const OOM_FOLD_NS: i64 = 60_000_000_000;

/// What the decoder remembers about one node.
#[derive(Debug, Default)]
struct NodeState {
    /// GPU UUID by PCI address, from `NVRM: GPU at PCI:…` identity lines.
    gpu_uuids: HashMap<String, String>,
    /// The last OOM-killed pid and when.
    last_oom: Option<(u64, Nanos)>,
    /// When the node was last used, in lines decoded (to forget the stalest first).
    used: u64,
}

/// Per-node memory, bounded: at most [`MAX_NODES`] nodes (the least recently seen is
/// forgotten first: with a stream's churn of nodes, only long-gone ones) and
/// [`MAX_GPUS_PER_NODE`] identities per node (a node's identities are cleared when full).
/// Identities are not aged out by time: an Xid may come days after the driver named its
/// GPU at boot.
#[derive(Debug, Default)]
struct NodeMemory {
    nodes: HashMap<String, NodeState>,
    clock: u64,
}

impl NodeMemory {
    /// The state of `node` (`""` when the line names none), created if new.
    fn node(&mut self, node: &str) -> &mut NodeState {
        self.clock += 1;
        if !self.nodes.contains_key(node) && self.nodes.len() >= MAX_NODES {
            let stalest = self
                .nodes
                .iter()
                .min_by_key(|(_, s)| s.used)
                .map(|(k, _)| k.clone());
            if let Some(k) = stalest {
                self.nodes.remove(&k);
            }
        }
        let state = self.nodes.entry(node.to_string()).or_default();
        state.used = self.clock;
        state
    }

    /// The state of `node` if known, without touching it.
    fn get(&self, node: &str) -> Option<&NodeState> {
        self.nodes.get(node)
    }

    fn clear(&mut self) {
        self.nodes.clear();
    }
}

/// Decodes kernel and system log lines.
#[derive(Debug, Default)]
pub struct KmsgDecoder {
    last_time: Option<Nanos>,
    nodes: NodeMemory,
}

impl KmsgDecoder {
    /// A decoder with nothing remembered.
    pub fn new() -> Self {
        Self::default()
    }
}

/// The node a line belongs to when it names none: `--node`, else the file's name.
fn fallback_node(hints: &Hints) -> Option<&str> {
    if let Some(n) = hints.node.as_deref() {
        return Some(n);
    }
    let name = std::path::Path::new(hints.path.as_deref()?)
        .file_name()?
        .to_str()?;
    let name = name.strip_suffix(".gz").unwrap_or(name);
    let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
    (!stem.is_empty() && stem != "-").then_some(stem)
}

fn event_id(node: Option<&str>, time_ns: Nanos, message: &str) -> String {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(b"kernel\x1f");
    h.update(node.unwrap_or("").as_bytes());
    h.update(&[0x1f]);
    h.update(&time_ns.to_le_bytes());
    h.update(message.as_bytes());
    format!("{:016x}", h.digest())
}

impl KmsgDecoder {
    fn resolve(&self, when: When, hints: &Hints) -> Result<Nanos, String> {
        match when {
            When::At(ns) => Ok(ns),
            When::SinceBoot(rel) => match hints.boot_time_ns {
                Some(boot) => boot.checked_add(rel).ok_or_else(|| "time since boot out of range".to_string()),
                None => Err(format!(
                    "stamped {}.{:06} s after boot and no boot time is known: pass --boot-time",
                    rel / 1_000_000_000,
                    (rel % 1_000_000_000) / 1000
                )),
            },
            When::Unknown => hints
                .record_time_ns
                .or(self.last_time)
                .or(hints.default_time_ns)
                .ok_or_else(|| {
                "the line has no time and nothing dates it: pass --time (or ingest the file, whose mtime is used)"
                    .to_string()
            }),
        }
    }

    /// Reads one line; `Ok(true)` when it became an event.
    fn decode_line(&mut self, line: &str, hints: &Hints, out: &mut Output) -> Result<bool, String> {
        if line.trim().is_empty() {
            return Ok(false);
        }
        let year_ref = self
            .last_time
            .or(hints.default_time_ns)
            .unwrap_or_else(time::now_ns);
        let (when, host, level, message): (When, Option<Cow<'_, str>>, Option<&str>, Cow<'_, str>) =
            if journal::looks_like_json(line) {
                let e = journal::parse(line)?;
                let when = match (e.time_ns, e.since_boot_ns) {
                    (Some(ns), _) => When::At(ns),
                    (None, Some(rel)) => When::SinceBoot(rel),
                    (None, None) => When::Unknown,
                };
                (when, e.host, e.level, e.message)
            } else {
                let f = frame::frame(line, year_ref);
                if f.shape == Shape::FabricManager {
                    return Ok(false);
                }
                (
                    f.when,
                    f.host.map(Cow::Borrowed),
                    f.level,
                    Cow::Borrowed(f.message),
                )
            };
        if let When::At(ns) = when {
            self.last_time = Some(ns);
        }
        let finding = match rules::recognize(&message) {
            Outcome::Found(f) => f,
            Outcome::GpuIdentity { pci, uuid } => {
                let node = host.as_deref().or_else(|| fallback_node(hints));
                let gpus = &mut self.nodes.node(node.unwrap_or("")).gpu_uuids;
                if gpus.len() >= MAX_GPUS_PER_NODE && !gpus.contains_key(pci) {
                    gpus.clear();
                }
                gpus.insert(pci.to_string(), uuid.to_string());
                return Ok(false);
            }
            Outcome::Detail | Outcome::Nothing => return Ok(false),
        };
        let time_ns = self
            .resolve(when, hints)
            .map_err(|e| format!("a {} line that {e}", finding.kind))?;
        if let When::SinceBoot(_) = when {
            self.last_time = Some(time_ns);
        }
        let node = host.as_deref().or_else(|| fallback_node(hints));
        if let Some(pid) = finding.oom_pid {
            let last_oom = &mut self.nodes.node(node.unwrap_or("")).last_oom;
            if matches!(*last_oom, Some((p, t)) if p == pid && (time_ns - t).abs() <= OOM_FOLD_NS) {
                return Ok(false);
            }
            *last_oom = Some((pid, time_ns));
        }
        let scope = Scope {
            cluster: hints.cluster.as_deref(),
            node,
            device: finding.device,
            ..Scope::default()
        };
        let id = event_id(node, time_ns, &message);
        let row = EventRow {
            time_ns,
            event_id: &id,
            layer: Layer::Infrastructure,
            source: "kernel",
            kind: finding.kind,
            severity: finding.severity,
            scope,
            reason: Some(&finding.reason),
            message: Some(&message),
        };
        let uuid = match (finding.kind, finding.device) {
            ("xid", Some(pci)) => self
                .nodes
                .get(node.unwrap_or(""))
                .and_then(|n| n.gpu_uuids.get(pci))
                .map(|u| ("uuid", u.as_str())),
            _ => None,
        };
        let attrs = finding.attrs.iter().map(|(k, v)| (*k, v.as_ref()));
        out.events
            .append(&row, attrs.chain(uuid).chain(level.map(|l| ("level", l))));
        Ok(true)
    }
}

impl Decoder for KmsgDecoder {
    fn format(&self) -> Format {
        Format::Kmsg
    }

    fn decode(&mut self, bytes: &[u8], origin: &Origin<'_>, hints: &Hints, out: &mut Output) {
        crate::decode::lines::decode_lines(bytes, origin, Format::Kmsg, out, |line, out| {
            self.decode_line(line, hints, out)
        });
    }

    fn finish(&mut self, _hints: &Hints, _out: &mut Output) {
        self.last_time = None;
        self.nodes.clear();
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{Array, AsArray};

    use super::*;

    /// Feeds each line as its own Kafka message (keyed by `node` when given), as a stream
    /// topic shared by many nodes does; returns `(node, kind, uuid attr)` per event.
    fn stream(lines: &[(&str, Option<&str>)]) -> Vec<(String, String, Option<String>)> {
        let mut d = KmsgDecoder::new();
        let mut out = Output::new(0);
        for (i, (line, node)) in lines.iter().enumerate() {
            let hints = Hints {
                node: node.map(str::to_string),
                ..Hints::default()
            };
            let origin = Origin::Kafka {
                topic: "kernel",
                partition: 0,
                offset: i as i64,
            };
            d.decode(line.as_bytes(), &origin, &hints, &mut out);
        }
        assert!(out.counts.balances(), "{:?}", out.counts);
        let b = out.events.finish();
        let text = |c: &str| b.column_by_name(c).unwrap().as_string::<i32>().clone();
        let (node, kind) = (text("node"), text("kind"));
        let attrs = b.column_by_name("attrs").unwrap().as_map();
        (0..b.num_rows())
            .map(|i| {
                let e = attrs.value(i);
                let (k, v) = (
                    e.column(0).as_string::<i32>(),
                    e.column(1).as_string::<i32>(),
                );
                let uuid = (0..k.len())
                    .find(|&j| k.value(j) == "uuid")
                    .map(|j| v.value(j).to_string());
                (node.value(i).to_string(), kind.value(i).to_string(), uuid)
            })
            .collect()
    }

    const OOM: &str = "kernel: Out of memory: Killed process 4242 (python) total-vm:1234kB, anon-rss:512kB, file-rss:0kB";
    const IDENTITY: &str =
        "kernel: NVRM: GPU at PCI:0000:91:00: GPU-aaaaaaaa-0000-0000-0000-000000000000";
    const XID: &str = "kernel: NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.";

    #[test]
    fn oom_kills_of_one_pid_fold_per_node_only() {
        let at = |s: &str, host: &str, msg: &str| {
            format!("2026-11-29T10:00:{s}.000000+00:00 {host} {msg}")
        };
        let lines = [
            at("00", "node-a", OOM),
            at("10", "node-b", OOM),
            at("20", "node-a", OOM),
            at("30", "node-b", OOM),
        ];
        let fed: Vec<(&str, Option<&str>)> = lines.iter().map(|l| (l.as_str(), None)).collect();
        let got = stream(&fed);
        let nodes: Vec<&str> = got.iter().map(|(n, _, _)| n.as_str()).collect();
        assert_eq!(nodes, ["node-a", "node-b"], "{got:?}");
    }

    #[test]
    fn an_xid_carries_the_uuid_its_own_node_named() {
        let at = |host: &str, msg: &str| format!("2026-11-29T10:00:00.000000+00:00 {host} {msg}");
        let lines = [at("node-a", IDENTITY), at("node-b", XID), at("node-a", XID)];
        let fed: Vec<(&str, Option<&str>)> = lines.iter().map(|l| (l.as_str(), None)).collect();
        let got = stream(&fed);
        let want = [
            ("node-b".to_string(), "xid".to_string(), None),
            (
                "node-a".to_string(),
                "xid".to_string(),
                Some("GPU-aaaaaaaa-0000-0000-0000-000000000000".to_string()),
            ),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn lines_without_a_host_are_the_node_of_their_hint() {
        // `dmesg` lines carry no host: a kernel-log pipeline keys them by node.
        let identity = format!("[  12.000000] {}", IDENTITY.trim_start_matches("kernel: "));
        let xid = format!(
            "2026-11-29T10:00:05,000000+00:00 {}",
            XID.trim_start_matches("kernel: ")
        );
        let got = stream(&[
            (&identity, Some("node-a")),
            (&xid, Some("node-b")),
            (&xid, Some("node-a")),
        ]);
        let uuids: Vec<(&str, Option<&str>)> = got
            .iter()
            .map(|(n, _, u)| (n.as_str(), u.as_deref()))
            .collect();
        assert_eq!(
            uuids,
            [
                ("node-b", None),
                ("node-a", Some("GPU-aaaaaaaa-0000-0000-0000-000000000000"))
            ]
        );
    }

    #[test]
    fn node_memory_is_bounded() {
        let mut m = NodeMemory::default();
        for i in 0..MAX_NODES + 10 {
            m.node(&format!("node-{i}")).last_oom = Some((1, 0));
            // node-0 stays in use: the stalest others go first.
            m.node("node-0");
        }
        assert_eq!(m.nodes.len(), MAX_NODES);
        assert!(m.get("node-0").is_some());
        assert!(m.get("node-1").is_none());
        assert!(m.get(&format!("node-{}", MAX_NODES + 9)).is_some());

        let mut d = KmsgDecoder::new();
        let mut out = Output::new(0);
        let hints = Hints::default();
        for i in 0..MAX_GPUS_PER_NODE + 1 {
            let line = format!(
                "2026-11-29T10:00:00.000000+00:00 node-a kernel: NVRM: GPU at PCI:0000:{i:02x}:00: GPU-{i:08x}"
            );
            d.decode_line(&line, &hints, &mut out).unwrap();
        }
        let gpus = &d.nodes.get("node-a").unwrap().gpu_uuids;
        assert!(
            gpus.len() <= MAX_GPUS_PER_NODE && !gpus.is_empty(),
            "{}",
            gpus.len()
        );
    }
}

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
//! OOM reaper), a second line naming the same OOM-killed pid within 60 s, the
//! `NVRM: GPU at PCI:…: GPU-<uuid>` identity line (remembered: later Xids of that PCI
//! address carry `uuid`), and NVIDIA Fabric Manager's own log lines
//! (`[Feb 25 2025 13:59:45] [INFO] …`), which are not kernel log. Bytes that are not
//! UTF-8 are rejected.
//!
//! **Scope.** `node` = the line's host field, else `--node`, else the input file's name
//! without its extension. `device` = the PCI address as the line writes it, for GPU and
//! NVSwitch events.
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
pub mod lines;
pub mod rules;
pub mod xid;

use std::borrow::Cow;
use std::collections::HashMap;

use whyslow_schemas::Layer;
use whyslow_schemas::builders::{EventRow, Scope};

use crate::decode::{Decoder, Format, Hints, Origin, Output};
use crate::time::{self, Nanos};
use frame::{Shape, When};
use rules::Outcome;

/// GPU identities remembered per input at most.
const MAX_GPUS: usize = 4096;
/// Lines naming the same OOM-killed pid within this window are one kill.
const OOM_FOLD_NS: i64 = 60_000_000_000;

/// Decodes kernel and system log lines.
#[derive(Debug, Default)]
pub struct KmsgDecoder {
    last_time: Option<Nanos>,
    gpu_uuids: HashMap<String, String>,
    last_oom: Option<(u64, Nanos)>,
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
            When::Unknown => self.last_time.or(hints.default_time_ns).ok_or_else(|| {
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
                let when = e.time_ns.map_or(When::Unknown, When::At);
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
                if self.gpu_uuids.len() >= MAX_GPUS {
                    self.gpu_uuids.clear();
                }
                self.gpu_uuids.insert(pci.to_string(), uuid.to_string());
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
        if let Some(pid) = finding.oom_pid {
            if matches!(self.last_oom, Some((p, t)) if p == pid && (time_ns - t).abs() <= OOM_FOLD_NS)
            {
                return Ok(false);
            }
            self.last_oom = Some((pid, time_ns));
        }
        let node = host.as_deref().or_else(|| fallback_node(hints));
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
            ("xid", Some(pci)) => self.gpu_uuids.get(pci).map(|u| ("uuid", u.as_str())),
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
        lines::decode_lines(bytes, origin, Format::Kmsg, out, |line, out| {
            self.decode_line(line, hints, out)
        });
    }

    fn finish(&mut self, _hints: &Hints, _out: &mut Output) {
        self.last_time = None;
        self.gpu_uuids.clear();
        self.last_oom = None;
    }
}

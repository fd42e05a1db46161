//! What a kernel message means: the recognizers of NVIDIA Xid / SXid, GPU-off-the-bus and
//! ECC reports, NIC link changes, the OOM killer, hung tasks, PCIe AER, machine checks,
//! segfaults, kernel oopses, NFS servers not answering, block I/O errors and read-only
//! remounts. Each turns a message into a
//! [`Finding`] (kind, severity, reason, device, attrs); anything else is `None`.

use std::borrow::Cow;

use whyslow_schemas::Severity;

use whyslow_schemas::nvidia::{XidCategory, xid_info};

/// A recognized message.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding<'a> {
    pub kind: &'static str,
    pub severity: Severity,
    pub reason: Cow<'a, str>,
    /// The device the message is about (a GPU's PCI address as written).
    pub device: Option<&'a str>,
    pub attrs: Vec<(&'static str, Cow<'a, str>)>,
    /// The process an OOM kill names, for folding the several lines of one kill.
    pub oom_pid: Option<u64>,
}

impl<'a> Finding<'a> {
    fn new(kind: &'static str, severity: Severity, reason: impl Into<Cow<'a, str>>) -> Self {
        Finding {
            kind,
            severity,
            reason: reason.into(),
            device: None,
            attrs: Vec::new(),
            oom_pid: None,
        }
    }

    fn attr(&mut self, k: &'static str, v: impl Into<Cow<'a, str>>) -> &mut Self {
        self.attrs.push((k, v.into()));
        self
    }

    fn attr_opt(&mut self, k: &'static str, v: Option<&'a str>) -> &mut Self {
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            self.attrs.push((k, Cow::Borrowed(v)));
        }
        self
    }
}

/// What a message is about beyond a finding: the `NVRM: GPU at PCI:…: GPU-<uuid>` line
/// that names a GPU, which the decoder remembers to put the UUID on later Xids.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<'a> {
    Found(Finding<'a>),
    GpuIdentity {
        pci: &'a str,
        uuid: &'a str,
    },
    /// A detail line of something already reported (an SXid's data, an oom-kill's
    /// reaper line): skipped.
    Detail,
    Nothing,
}

fn has(msg: &str, needle: &str) -> bool {
    msg.contains(needle)
}

/// The text after the first `needle`. (`contains` first: its SIMD path is much cheaper
/// than building `find`'s searcher, and most lines hold no needle.)
fn after<'a>(msg: &'a str, needle: &str) -> Option<&'a str> {
    if !msg.contains(needle) {
        return None;
    }
    msg.find(needle).map(|i| &msg[i + needle.len()..])
}

/// Reads a message.
pub fn recognize(msg: &str) -> Outcome<'_> {
    if has(msg, "NVRM: ") {
        return nvrm(msg);
    }
    if let Some(rest) = after(msg, "SXid (") {
        return sxid(msg, rest);
    }
    if let Some(f) = nic_link(msg) {
        return Outcome::Found(f);
    }
    if (has(msg, "oom") || has(msg, "Kill") || has(msg, "out of memory"))
        && let Some(o) = oom(msg)
    {
        return o;
    }
    if let Some(f) = hung_task(msg) {
        return Outcome::Found(f);
    }
    if has(msg, "AER:") {
        return pcie_aer(msg);
    }
    if let Some(o) = machine_check(msg) {
        return o;
    }
    if let Some(f) = segfault(msg) {
        return Outcome::Found(f);
    }
    if let Some(f) = oops(msg) {
        return Outcome::Found(f);
    }
    if let Some(f) = storage(msg) {
        return Outcome::Found(f);
    }
    if let Some(fs) = msg.strip_suffix(": Remounting filesystem read-only") {
        let mut f = Finding::new("filesystem_readonly", Severity::Error, "read_only_remount");
        f.attr("filesystem", fs).attr("text", msg);
        return Outcome::Found(f);
    }
    Outcome::Nothing
}

/// Whether a token is a PCI address: `[dddd:]bb:dd[.f]` in hex.
pub fn is_pci(t: &str) -> bool {
    let parts: Vec<&str> = t.splitn(4, ':').collect();
    let hex = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_hexdigit());
    match parts.as_slice() {
        [dom, bus, dev] => {
            let dev = dev
                .split_once('.')
                .map_or(*dev, |(d, f)| if hex(f) { d } else { "" });
            (dom.len() == 4 || dom.len() == 8)
                && hex(dom)
                && bus.len() == 2
                && hex(bus)
                && dev.len() == 2
                && hex(dev)
        }
        _ => false,
    }
}

/// A PCI address in NVML's / dcgm-exporter's `pci_bus_id` form: `00000000:8A:00.0`.
pub fn nvml_bus_id(pci: &str) -> String {
    let mut parts = pci.split(':');
    let (dom, bus, dev) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
    );
    let (dev, func) = dev.split_once('.').unwrap_or((dev, "0"));
    format!("{:0>8}:{}:{}.{}", dom, bus, dev, func).to_ascii_uppercase()
}

fn first_pci(msg: &str) -> Option<&str> {
    msg.split([' ', '(', ')', ','])
        .map(|t| t.trim_end_matches(':'))
        .find(|t| is_pci(t))
}

/// `pid=123` / `pid='<unknown>'` style values: `None` for unknown.
fn known(v: &str) -> Option<&str> {
    let v = v.trim().trim_matches('\'');
    (!v.is_empty() && v != "<unknown>").then_some(v)
}

fn nvrm(msg: &str) -> Outcome<'_> {
    if let Some(rest) = after(msg, "NVRM: Xid (") {
        return xid(rest);
    }
    if let Some(rest) = after(msg, "NVRM: GPU at PCI:")
        && let Some((pci, uuid)) = rest.split_once(": ")
        && uuid.starts_with("GPU-")
    {
        return Outcome::GpuIdentity {
            pci,
            uuid: uuid.trim(),
        };
    }
    if has(msg, "has fallen off the bus") {
        let mut f = Finding::new(
            "gpu_fallen_off_bus",
            Severity::Critical,
            "fallen_off_the_bus",
        );
        if let Some(pci) = first_pci(msg) {
            f.device = Some(pci);
            f.attr("pci", pci).attr("pci_bus_id", nvml_bus_id(pci));
        }
        f.attr("category", XidCategory::GpuFailure.as_str())
            .attr("text", msg);
        return Outcome::Found(f);
    }
    let ecc = (has(msg, "ECC") || has(msg, "ecc")) && {
        let lower = msg.to_ascii_lowercase();
        lower.contains("uncorrectable ecc") || lower.contains("double bit ecc")
    };
    if ecc {
        let mut f = Finding::new("ecc_error", Severity::Critical, "uncorrectable");
        if let Some(pci) = first_pci(msg) {
            f.device = Some(pci);
            f.attr("pci", pci).attr("pci_bus_id", nvml_bus_id(pci));
        }
        f.attr("category", XidCategory::GpuMemoryError.as_str())
            .attr("text", msg);
        return Outcome::Found(f);
    }
    Outcome::Nothing
}

/// `PCI:0000:8a:00): 79, pid=…, name=…, text` (after `NVRM: Xid (`).
fn xid(rest: &str) -> Outcome<'_> {
    let Some((pci, tail)) = rest.split_once(')') else {
        return Outcome::Nothing;
    };
    let pci = pci.strip_prefix("PCI:").unwrap_or(pci);
    let Some(tail) = tail.strip_prefix(": ").or_else(|| tail.strip_prefix(":")) else {
        return Outcome::Nothing;
    };
    let tail = tail.trim_start();
    let n = tail.bytes().take_while(u8::is_ascii_digit).count();
    let Ok(code) = tail[..n].parse::<u32>() else {
        return Outcome::Nothing;
    };
    let code_s = &tail[..n];
    let mut details = tail[n..].trim_start_matches([',', ' ']);
    let mut pid = None;
    let mut name = None;
    if let Some(r) = details.strip_prefix("pid=") {
        let (v, r) = r.split_once(", ").unwrap_or((r, ""));
        pid = known(v);
        details = r;
    }
    if let Some(r) = details.strip_prefix("name=") {
        let (v, r) = r.split_once(", ").unwrap_or((r, ""));
        name = known(v);
        details = r;
    }
    let info = xid_info(code);
    let mut f = Finding::new("xid", info.severity, code_s);
    f.device = Some(pci);
    f.attr("xid", code_s)
        .attr("pci", pci)
        .attr("pci_bus_id", nvml_bus_id(pci))
        .attr_opt("pid", pid)
        .attr_opt("process", name)
        .attr("meaning", info.meaning)
        .attr("category", info.category.as_str())
        .attr_opt("text", Some(details.trim()));
    Outcome::Found(f)
}

/// `nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up`.
fn sxid<'a>(msg: &'a str, rest: &'a str) -> Outcome<'a> {
    let Some((pci, tail)) = rest.split_once("): ") else {
        return Outcome::Nothing;
    };
    let pci = pci.strip_prefix("PCI:").unwrap_or(pci);
    let n = tail.bytes().take_while(u8::is_ascii_digit).count();
    if n == 0 {
        return Outcome::Nothing;
    }
    let code = &tail[..n];
    let details = tail[n..].trim_start_matches([',', ' ']);
    if details.starts_with("Data {") || details.starts_with("Severity ") {
        return Outcome::Detail;
    }
    let switch = msg
        .split(": SXid")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .filter(|s| !s.is_empty());
    let fatal = details.starts_with("Fatal");
    let link =
        after(details, "Link ").map(|l| &l[..l.bytes().take_while(u8::is_ascii_digit).count()]);
    let mut f = Finding::new(
        "sxid",
        if fatal {
            Severity::Critical
        } else {
            Severity::Warning
        },
        code,
    );
    f.device = Some(pci);
    f.attr("sxid", code)
        .attr("pci", pci)
        .attr("pci_bus_id", nvml_bus_id(pci))
        .attr_opt("switch", switch)
        .attr("fatal", if fatal { "true" } else { "false" })
        .attr_opt("link", link)
        .attr("category", XidCategory::NvlinkError.as_str())
        .attr("text", details);
    Outcome::Found(f)
}

/// mlx5 / ConnectX and other NIC drivers: `mlx5_core 0000:8a:00.0 ens8f0np0: Link down`,
/// `ixgbe 0000:01:00.0 eth0: NIC Link is Up 10 Gbps, …`, `e1000e: eth0 NIC Link is Down`.
fn nic_link(msg: &str) -> Option<Finding<'_>> {
    const DOWN: [&str; 3] = ["Link down", "Link is Down", "link down"];
    const UP: [&str; 3] = ["Link up", "Link is Up", "link up"];
    let ends_word = |rest: &str| {
        rest.bytes()
            .next()
            .is_none_or(|c| !c.is_ascii_alphanumeric())
    };
    let find = |pats: &[&str]| {
        pats.iter().find_map(|p| {
            let i = after(msg, p).map(|rest| msg.len() - rest.len() - p.len())?;
            ends_word(&msg[i + p.len()..]).then_some((i, p.len()))
        })
    };
    let (kind, sev, (at, len)) = if let Some(d) = find(&DOWN) {
        ("nic_link_down", Severity::Warning, d)
    } else if let Some(u) = find(&UP) {
        ("nic_link_up", Severity::Info, u)
    } else {
        return None;
    };
    let head = &msg[..at];
    let mut tokens = head.split(' ').filter(|t| !t.is_empty());
    let driver = tokens.next().map(|t| t.trim_end_matches(':'))?;
    // Kernel link messages come from a driver: `driver [pci] [iface]: …`. Lines without
    // one (`IPv6: ADDRCONF …`, bonding) are not NIC link reports.
    if driver.contains('(') || driver.is_empty() || driver == "IPv6" {
        return None;
    }
    let pci = first_pci(head);
    let iface = head
        .split(' ')
        .filter(|t| t.ends_with(':'))
        .map(|t| t.trim_end_matches(':'))
        .rfind(|t| !t.is_empty() && *t != driver && !is_pci(t))
        .or_else(|| {
            // `e1000e: eth0 NIC Link is Up`: the interface follows the driver.
            let second = head.split(' ').filter(|t| !t.is_empty()).nth(1)?;
            (!is_pci(second) && !second.ends_with(':') && !second.contains('=')).then_some(second)
        });
    // `eth0: Link is Down`: the only token names the interface.
    let iface = iface
        .or_else(|| (head.split(' ').filter(|t| !t.is_empty()).count() == 1).then_some(driver));
    if pci.is_none() && iface.is_none() {
        return None;
    }
    let mut f = Finding::new(
        kind,
        sev,
        if kind == "nic_link_down" {
            "link_down"
        } else {
            "link_up"
        },
    );
    f.attr("driver", driver).attr_opt("interface", iface);
    if let Some(pci) = pci {
        f.attr("pci", pci);
    }
    let speed = msg[at + len..]
        .trim_start_matches([' ', ',', '-'])
        .split(',')
        .next()
        .map(str::trim);
    f.attr_opt(
        "speed",
        speed.filter(|s| s.bytes().next().is_some_and(|c| c.is_ascii_digit())),
    );
    f.attr("text", msg);
    Some(f)
}

/// The OOM killer's lines.
fn oom(msg: &str) -> Option<Outcome<'_>> {
    if has(msg, "oom_reaper: reaped process") || has(msg, "invoked oom-killer") {
        return Some(Outcome::Detail);
    }
    if let Some(list) = after(msg, "oom-kill:") {
        let mut f = Finding::new("oom_killed", Severity::Error, "oom_kill");
        let mut cgroup = None;
        for kv in list.split(',') {
            let Some((k, v)) = kv.split_once('=') else {
                continue;
            };
            match k.trim() {
                "constraint" => {
                    f.reason = Cow::Borrowed(v);
                    f.attr("constraint", v);
                }
                "task" => {
                    f.attr("process", v);
                }
                "pid" => {
                    f.oom_pid = v.parse().ok();
                    f.attr("pid", v);
                }
                "uid" => {
                    f.attr("uid", v);
                }
                "task_memcg" => cgroup = Some(v),
                "oom_memcg" if cgroup.is_none() => cgroup = Some(v),
                _ => {}
            }
        }
        if let Some(cg) = cgroup {
            cgroup_attrs(&mut f, cg);
        }
        f.attr("text", msg);
        return Some(Outcome::Found(f));
    }
    // `Out of memory: Killed process 1234 (python) total-vm:…`, `… Killed process 123, UID 48, (httpd)`,
    // `Memory cgroup out of memory: Killed process …`, and old kernels' `Kill process N (x) score S or sacrifice child`.
    let (rest, constraint) = if let Some(r) = after(msg, "Killed process ") {
        (r, None)
    } else if let Some(r) = after(msg, "Kill process ") {
        (r, None)
    } else {
        return None;
    };
    let constraint =
        constraint.or(has(msg, "Memory cgroup out of memory").then_some("CONSTRAINT_MEMCG"));
    let n = rest.bytes().take_while(u8::is_ascii_digit).count();
    if n == 0 {
        return None;
    }
    let pid = &rest[..n];
    let tail = &rest[n..];
    let process = tail
        .find('(')
        .and_then(|o| tail[o + 1..].find(')').map(|c| &tail[o + 1..o + 1 + c]));
    let uid = after(tail, "UID ").map(|u| &u[..u.bytes().take_while(u8::is_ascii_digit).count()]);
    let mut f = Finding::new(
        "oom_killed",
        Severity::Error,
        constraint.unwrap_or("out_of_memory"),
    );
    f.oom_pid = pid.parse().ok();
    f.attr("pid", pid)
        .attr_opt("process", process)
        .attr_opt("uid", uid);
    if let Some(c) = constraint {
        f.attr("constraint", c);
    }
    for (key, label) in [("total_vm", "total-vm:"), ("anon_rss", "anon-rss:")] {
        let v = after(tail, label).map(|v| v.split([',', ' ']).next().unwrap_or(""));
        f.attr_opt(key, v);
    }
    f.attr("text", msg);
    Some(Outcome::Found(f))
}

/// The pod UID and container ID a kubepods cgroup path names.
fn cgroup_attrs<'a>(f: &mut Finding<'a>, cg: &'a str) {
    f.attr("cgroup", cg);
    if let Some(i) = cg.find("kubepods") {
        let tail = &cg[i..];
        let pod = ["-pod", "/pod"].iter().find_map(|p| after(tail, p));
        if let Some(p) = pod {
            let n = p
                .bytes()
                .take_while(|c| c.is_ascii_hexdigit() || *c == b'_' || *c == b'-')
                .count();
            if n >= 32 {
                f.attr("pod_uid", p[..n].replace('_', "-"));
            }
        }
    }
    let last = cg.rsplit('/').next().unwrap_or("");
    let last = last.strip_suffix(".scope").unwrap_or(last);
    let id = ["cri-containerd-", "docker-", "crio-"]
        .iter()
        .find_map(|p| last.strip_prefix(p))
        .unwrap_or(last);
    if id.len() == 64 && id.bytes().all(|c| c.is_ascii_hexdigit()) {
        f.attr("container_id", id);
    }
}

/// `INFO: task umount.aufs:21568 blocked for more than 120 seconds.`
fn hung_task(msg: &str) -> Option<Finding<'_>> {
    let rest = after(msg, "task ")?;
    let (task, tail) = rest.split_once(" blocked for more than ")?;
    let (name, pid) = task.rsplit_once(':')?;
    let secs = tail.split(' ').next()?;
    let mut f = Finding::new("hung_task", Severity::Warning, "blocked");
    f.attr("process", name)
        .attr("pid", pid)
        .attr("blocked_seconds", secs)
        .attr("text", msg);
    Some(f)
}

/// `pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0` and the
/// Uncorrected (Non-Fatal) / (Fatal) forms; the detail lines that follow are skipped.
fn pcie_aer(msg: &str) -> Outcome<'_> {
    let Some(i) = msg
        .find("error received")
        .or_else(|| msg.find("error message received"))
    else {
        return Outcome::Detail;
    };
    let head = &msg[..i];
    let (class, sev) = if has(head, "Fatal") && !has(head, "Non-Fatal") {
        ("fatal", Severity::Critical)
    } else if has(head, "Uncorrect") {
        ("non_fatal", Severity::Error)
    } else {
        ("corrected", Severity::Warning)
    };
    let mut f = Finding::new("pcie_aer", sev, class);
    let port = first_pci(head);
    let source = msg[i..]
        .split([' ', ':'])
        .filter(|t| !t.is_empty())
        .find(|_| true);
    let source = after(&msg[i..], "received: ")
        .or_else(|| after(&msg[i..], "received from "))
        .map(|s| s.trim())
        .or(source);
    f.attr_opt("port", port).attr("aer_severity", class);
    if let Some(s) = source.filter(|s| is_pci(s)) {
        f.attr("source", s).attr("pci_bus_id", nvml_bus_id(s));
    }
    f.attr("text", msg);
    Outcome::Found(f)
}

/// `mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 5: be00000000800400`,
/// `mce: [Hardware Error]: Machine check events logged`, `Kernel panic - not syncing: Fatal machine check`.
fn machine_check(msg: &str) -> Option<Outcome<'_>> {
    if has(msg, "Fatal machine check") || has(msg, "Fatal Machine check") {
        let mut f = Finding::new("mce", Severity::Critical, "fatal");
        f.attr("text", msg);
        return Some(Outcome::Found(f));
    }
    if has(msg, "Machine check events logged") {
        let mut f = Finding::new("mce", Severity::Warning, "events_logged");
        f.attr("text", msg);
        return Some(Outcome::Found(f));
    }
    if let Some(rest) = after(msg, "Machine Check: ") {
        let mut f = Finding::new("mce", Severity::Error, "machine_check");
        let cpu =
            after(msg, "CPU ").map(|c| &c[..c.bytes().take_while(u8::is_ascii_digit).count()]);
        let bank =
            after(rest, "Bank ").map(|b| &b[..b.bytes().take_while(u8::is_ascii_digit).count()]);
        let status = after(rest, ": ").map(|s| s.split(' ').next().unwrap_or(""));
        f.attr_opt("cpu", cpu)
            .attr_opt("bank", bank)
            .attr_opt("status", status)
            .attr("text", msg);
        return Some(Outcome::Found(f));
    }
    if has(msg, "[Hardware Error]") {
        return Some(Outcome::Detail);
    }
    None
}

/// `pt_main_thread[2536443]: segfault at 7f79… ip … error 4 in libnccl.so.2[7f7c…]`.
fn segfault(msg: &str) -> Option<Finding<'_>> {
    let i = msg.find(": segfault at ")?;
    let who = msg[..i].rsplit(' ').next()?;
    let (process, pid) = match who.split_once('[') {
        Some((p, rest)) => (p, rest.strip_suffix(']')),
        None => (who, None),
    };
    let rest = &msg[i + ": segfault at ".len()..];
    let address = rest.split(' ').next();
    let library = after(rest, " in ").map(|l| l.split('[').next().unwrap_or(l));
    let mut f = Finding::new("segfault", Severity::Warning, "segfault");
    f.attr("process", process)
        .attr_opt("pid", pid)
        .attr_opt("address", address)
        .attr_opt("library", library)
        .attr("text", msg);
    Some(f)
}

/// Storage the node cannot reach or read: the NFS client's `nfs: server 10.0.0.2 not
/// responding, still trying` (or `…, timed out`) and `nfs: server 10.0.0.2 OK` as it
/// answers again; the block layer's `blk_update_request: I/O error, dev sda, sector …`
/// (`I/O error, dev nvme0n1, sector …` on newer kernels) and `Buffer I/O error on dev
/// sdb1, logical block …`.
fn storage(msg: &str) -> Option<Finding<'_>> {
    if let Some(rest) = after(msg, "nfs: server ") {
        let (server, tail) = rest.split_once(' ')?;
        let mut f = if tail.starts_with("not responding") {
            let mut f = Finding::new("nfs_error", Severity::Warning, "not_responding");
            if tail.contains("timed out") {
                f.reason = Cow::Borrowed("timed_out");
            }
            f
        } else if tail.trim_end() == "OK" {
            Finding::new("nfs_recovered", Severity::Info, "ok")
        } else {
            return None;
        };
        f.attr("server", server).attr("text", msg);
        return Some(f);
    }
    let disk = after(msg, "I/O error, dev ")
        .or_else(|| after(msg, "Buffer I/O error on dev "))
        .or_else(|| after(msg, "Buffer I/O error on device "))?;
    let disk = disk.split([',', ' ']).next().filter(|d| !d.is_empty())?;
    let mut f = Finding::new("io_error", Severity::Warning, "io_error");
    f.attr("disk", disk).attr("text", msg);
    Some(f)
}

/// Kernel oopses, soft lockups and panics (node-problem-detector's KernelOops rules).
fn oops(msg: &str) -> Option<Finding<'_>> {
    let (kind, sev, reason) = if has(msg, "Kernel panic - not syncing") {
        ("kernel_panic", Severity::Critical, "panic")
    } else if has(msg, "BUG: soft lockup") {
        ("soft_lockup", Severity::Warning, "soft_lockup")
    } else if msg.starts_with("BUG: unable to handle")
        || msg.starts_with("BUG: kernel NULL pointer")
    {
        ("kernel_oops", Severity::Error, "null_pointer")
    } else if msg.starts_with("divide error: ") {
        ("kernel_oops", Severity::Error, "divide_error")
    } else if msg.starts_with("general protection fault") {
        ("kernel_oops", Severity::Error, "general_protection_fault")
    } else if msg.starts_with("kernel BUG at ") {
        ("kernel_oops", Severity::Error, "kernel_bug")
    } else {
        return None;
    };
    let mut f = Finding::new(kind, sev, reason);
    f.attr("text", msg);
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(msg: &str) -> Finding<'_> {
        match recognize(msg) {
            Outcome::Found(f) => f,
            other => panic!("{msg}: {other:?}"),
        }
    }

    fn attr<'a>(f: &'a Finding<'_>, k: &str) -> Option<&'a str> {
        f.attrs
            .iter()
            .find(|(key, _)| *key == k)
            .map(|(_, v)| v.as_ref())
    }

    #[test]
    fn storage_errors() {
        let f = found("nfs: server 10.96.112.2 not responding, still trying");
        assert_eq!(
            (f.kind, f.reason.as_ref(), attr(&f, "server")),
            ("nfs_error", "not_responding", Some("10.96.112.2"))
        );
        let f = found("nfs: server filer-1.example.com not responding, timed out");
        assert_eq!((f.kind, f.reason.as_ref()), ("nfs_error", "timed_out"));
        let f = found("nfs: server 10.96.112.2 OK");
        assert_eq!((f.kind, f.severity), ("nfs_recovered", Severity::Info));
        let f = found(
            "blk_update_request: I/O error, dev sda, sector 1234567 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 0",
        );
        assert_eq!((f.kind, attr(&f, "disk")), ("io_error", Some("sda")));
        let f = found("I/O error, dev nvme0n1, sector 2048 op 0x0:(READ) flags 0x0");
        assert_eq!(attr(&f, "disk"), Some("nvme0n1"));
        let f = found("Buffer I/O error on dev sdb1, logical block 0, async page read");
        assert_eq!((f.kind, attr(&f, "disk")), ("io_error", Some("sdb1")));
        assert_eq!(
            recognize("nfs: server is a word in prose"),
            Outcome::Nothing
        );
    }

    #[test]
    fn xids() {
        let f = found(
            "NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
        );
        assert_eq!(
            (f.kind, f.reason.as_ref(), f.device, f.severity),
            ("xid", "79", Some("0000:91:00"), Severity::Critical)
        );
        assert_eq!(attr(&f, "pci_bus_id"), Some("00000000:91:00.0"));
        assert_eq!((attr(&f, "pid"), attr(&f, "process")), (None, None));
        assert_eq!(attr(&f, "text"), Some("GPU has fallen off the bus."));
        assert_eq!(attr(&f, "category"), Some("gpu_failure"));
        let f =
            found("NVRM: Xid (PCI:0000:38:00): 43, pid=2924364, name=pt_main_thread, Ch 00000008");
        assert_eq!(
            (attr(&f, "pid"), attr(&f, "process"), attr(&f, "text")),
            (Some("2924364"), Some("pt_main_thread"), Some("Ch 00000008"))
        );
        let f = found("NVRM: Xid (0000:01:00): 31, Ch 00000008, intr 10000000. MMU Fault");
        assert_eq!(
            (f.reason.as_ref(), attr(&f, "text")),
            ("31", Some("Ch 00000008, intr 10000000. MMU Fault"))
        );
        assert_eq!(attr(&f, "pci_bus_id"), Some("00000000:01:00.0"));
    }

    #[test]
    fn gpu_identity_sxid_and_bus_loss() {
        assert_eq!(
            recognize("NVRM: GPU at PCI:0000:91:00: GPU-b6c3b2be-c55b-d076-fa0e-d464e4c7e08b"),
            Outcome::GpuIdentity {
                pci: "0000:91:00",
                uuid: "GPU-b6c3b2be-c55b-d076-fa0e-d464e4c7e08b"
            }
        );
        let f = found("NVRM: GPU 0000:91:00.0: GPU has fallen off the bus.");
        assert_eq!(
            (f.kind, f.device),
            ("gpu_fallen_off_bus", Some("0000:91:00.0"))
        );
        let f = found(
            "nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up",
        );
        assert_eq!(
            (f.kind, f.reason.as_ref(), f.severity),
            ("sxid", "20034", Severity::Critical)
        );
        assert_eq!(
            (attr(&f, "switch"), attr(&f, "link"), attr(&f, "fatal")),
            (Some("nvidia-nvswitch1"), Some("48"), Some("true"))
        );
        assert_eq!(
            recognize("nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Data {0x1, 0x0}"),
            Outcome::Detail
        );
        assert_eq!(
            recognize(
                "nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Severity 1 Engine instance 60"
            ),
            Outcome::Detail
        );
        assert_eq!(
            recognize("nvidia-nvswitch2: open (major=510)"),
            Outcome::Nothing
        );
        assert_eq!(
            recognize("NVRM: GPU Board Serial Number: 1653723052734"),
            Outcome::Nothing
        );
    }

    #[test]
    fn nic_links() {
        let f = found("mlx5_core 0000:8a:00.0 ens8f0np0: Link down");
        assert_eq!(
            (
                f.kind,
                attr(&f, "driver"),
                attr(&f, "interface"),
                attr(&f, "pci")
            ),
            (
                "nic_link_down",
                Some("mlx5_core"),
                Some("ens8f0np0"),
                Some("0000:8a:00.0")
            )
        );
        let f = found("mlx5_core 0000:8a:00.0 ens8f0np0: Link up");
        assert_eq!(f.kind, "nic_link_up");
        let f = found("ixgbe 0000:01:00.0 eth0: NIC Link is Up 10 Gbps, Flow Control: RX/TX");
        assert_eq!(
            (f.kind, attr(&f, "interface"), attr(&f, "speed")),
            ("nic_link_up", Some("eth0"), Some("10 Gbps"))
        );
        let f = found("e1000e: eth0 NIC Link is Down");
        assert_eq!(
            (f.kind, attr(&f, "driver"), attr(&f, "interface")),
            ("nic_link_down", Some("e1000e"), Some("eth0"))
        );
        let f = found("eth0: Link is Down");
        assert_eq!(
            (f.kind, attr(&f, "interface")),
            ("nic_link_down", Some("eth0"))
        );
        assert_eq!(
            recognize("IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready"),
            Outcome::Nothing
        );
        assert_eq!(
            recognize("IPv6: ADDRCONF(NETDEV_UP): eth0: link is not ready"),
            Outcome::Nothing
        );
    }

    #[test]
    fn oom_kills() {
        let f = found(
            "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-containerd-3fc28fa1c647ceede9f6b340d0b16c9f1f663698972d22a52e296f291638e014.scope,mems_allowed=0-1,oom_memcg=/lxc/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-poda8697f49_441d_4d4f_90d2_6d8e1fa3bbe7.slice,task_memcg=/lxc/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-poda8697f49_441d_4d4f_90d2_6d8e1fa3bbe7.slice/cri-containerd-3fc28fa1c647ceede9f6b340d0b16c9f1f663698972d22a52e296f291638e014.scope,task=node,pid=863987,uid=0",
        );
        assert_eq!(
            (f.kind, f.reason.as_ref(), f.oom_pid),
            ("oom_killed", "CONSTRAINT_MEMCG", Some(863_987))
        );
        assert_eq!(
            (attr(&f, "process"), attr(&f, "pod_uid")),
            (Some("node"), Some("a8697f49-441d-4d4f-90d2-6d8e1fa3bbe7"))
        );
        assert_eq!(
            attr(&f, "container_id"),
            Some("3fc28fa1c647ceede9f6b340d0b16c9f1f663698972d22a52e296f291638e014")
        );
        let f = found(
            "Out of memory: Killed process 1234 (python) total-vm:1234kB, anon-rss:512kB, file-rss:0kB",
        );
        assert_eq!(
            (attr(&f, "pid"), attr(&f, "process"), attr(&f, "anon_rss")),
            (Some("1234"), Some("python"), Some("512kB"))
        );
        let f = found("Out of memory: Killed process 123, UID 48, (httpd).");
        assert_eq!(
            (attr(&f, "pid"), attr(&f, "uid"), attr(&f, "process")),
            (Some("123"), Some("48"), Some("httpd"))
        );
        let f = found(
            "Memory cgroup out of memory: Kill process 1012 (heapster) score 1035 or sacrifice child",
        );
        assert_eq!(
            (f.reason.as_ref(), f.oom_pid),
            ("CONSTRAINT_MEMCG", Some(1012))
        );
        let f = found("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),");
        assert_eq!((f.kind, f.oom_pid), ("oom_killed", None));
        assert_eq!(
            recognize("oom_reaper: reaped process 345646 (vector), now anon-rss:0kB"),
            Outcome::Detail
        );
    }

    #[test]
    fn hung_aer_mce_segfault_oops() {
        let f = found("INFO: task umount.aufs:21568 blocked for more than 120 seconds.");
        assert_eq!(
            (
                f.kind,
                attr(&f, "process"),
                attr(&f, "pid"),
                attr(&f, "blocked_seconds")
            ),
            ("hung_task", Some("umount.aufs"), Some("21568"), Some("120"))
        );
        let f = found(
            "pcieport 0000:00:01.0: AER: Uncorrected (Non-Fatal) error received: 0000:01:00.0",
        );
        assert_eq!(
            (f.kind, f.severity, attr(&f, "port"), attr(&f, "source")),
            (
                "pcie_aer",
                Severity::Error,
                Some("0000:00:01.0"),
                Some("0000:01:00.0")
            )
        );
        let f = found(
            "pcieport 0000:00:01.0: AER: Multiple Uncorrected (Fatal) error received: 0000:01:00.0",
        );
        assert_eq!(f.severity, Severity::Critical);
        assert_eq!(
            found("pcieport 0000:00:1c.0: AER: Corrected error received: 0000:00:1c.0").severity,
            Severity::Warning
        );
        assert_eq!(
            recognize(
                "pcieport 0000:00:1c.0: AER:   device [8086:a110] error status/mask=00000001/00002000"
            ),
            Outcome::Detail
        );
        let f = found("mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 5: be00000000800400");
        assert_eq!(
            (
                f.kind,
                attr(&f, "cpu"),
                attr(&f, "bank"),
                attr(&f, "status")
            ),
            ("mce", Some("3"), Some("5"), Some("be00000000800400"))
        );
        assert_eq!(
            found("mce: [Hardware Error]: Machine check events logged").reason,
            "events_logged"
        );
        assert_eq!(
            recognize("mce: [Hardware Error]: TSC 0 ADDR fef1a140"),
            Outcome::Detail
        );
        let f = found(
            "pt_main_thread[2536443]: segfault at 7f797fe00000 ip 00007f7c7ac69996 sp 00007f7c12fd7c30 error 4 in libnccl.so.2[7f7c7ac00000+d3d3000]",
        );
        assert_eq!(
            (attr(&f, "process"), attr(&f, "pid"), attr(&f, "library")),
            (
                Some("pt_main_thread"),
                Some("2536443"),
                Some("libnccl.so.2")
            )
        );
        assert_eq!(
            found("BUG: unable to handle kernel NULL pointer dereference at 0000000000000078").kind,
            "kernel_oops"
        );
        assert_eq!(found("divide error: 0000 [#1] SMP ").reason, "divide_error");
        assert_eq!(
            found("EXT4-fs (sda1): Remounting filesystem read-only").kind,
            "filesystem_readonly"
        );
        assert_eq!(
            recognize("unregister_netdevice: waiting for lo to become free. Usage count = 1"),
            Outcome::Nothing
        );
    }

    #[test]
    fn pci_forms() {
        assert!(is_pci("0000:8a:00.0") && is_pci("0000:38:00") && is_pci("00000000:31:00.0"));
        assert!(!is_pci("10:15:02") && !is_pci("0000:8a") && !is_pci("eth0"));
        assert_eq!(nvml_bus_id("0000:8a:00"), "00000000:8A:00.0");
    }
}

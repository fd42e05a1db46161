//! Rules that read one training-framework log line (PyTorch, torchrun, Hugging Face,
//! DeepSpeed, JAX/MaxText, torchtitan, Megatron-LM) into findings: events and metrics with their
//! attributes. Pure functions of the line; time, scope and multi-line state (tracebacks,
//! rendezvous blocks) are the decoder's business.

use whyslow_schemas::Severity;

/// A finding's producing system (`events.source` / `metrics.source`).
pub mod source {
    pub const PYTORCH: &str = "pytorch";
    pub const HUGGINGFACE: &str = "huggingface";
    pub const DEEPSPEED: &str = "deepspeed";
    pub const JAX: &str = "jax";
    pub const MAXTEXT: &str = "maxtext";
    pub const TORCHTITAN: &str = "torchtitan";
    /// Google's Orbax checkpointing library (JAX; MaxText and others save through it).
    pub const ORBAX: &str = "orbax";
    /// NVIDIA Megatron-LM (and the frameworks built on its training loop).
    pub const MEGATRON: &str = "megatron";
    /// The XLA/TSL profiler session that JAX and TensorFlow run (its traces open in
    /// XProf / TensorBoard's profile plugin).
    pub const XLA: &str = "xla";
    /// NVIDIA Nsight Systems' `nsys` command line.
    pub const NSIGHT: &str = "nsight";
    /// The vLLM serving engine (its stats log line).
    pub const VLLM: &str = "vllm";
    /// Hugging Face text-generation-inference's router (its per-request log line).
    pub const TGI: &str = "tgi";
    /// Hugging Face text-embeddings-inference's router (its per-request log line).
    pub const TEI: &str = "tei";
    pub const APP: &str = "app";
}

/// An event a line reports.
#[derive(Debug, Clone, PartialEq)]
pub struct EventFinding {
    pub kind: &'static str,
    pub severity: Severity,
    pub source: &'static str,
    /// The source's own code, where it has one (an exception type, an op type).
    pub reason: Option<String>,
    pub rank: Option<i32>,
    pub step: Option<i64>,
    pub attrs: Vec<(&'static str, String)>,
}

impl EventFinding {
    pub(super) fn new(kind: &'static str, severity: Severity, source: &'static str) -> Self {
        EventFinding {
            kind,
            severity,
            source,
            reason: None,
            rank: None,
            step: None,
            attrs: Vec::new(),
        }
    }

    pub(super) fn attr(mut self, key: &'static str, value: impl ToString) -> Self {
        self.attrs.push((key, value.to_string()));
        self
    }

    /// The value of attribute `key`, if the finding has it.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }

    fn attr_opt(self, key: &'static str, value: Option<impl ToString>) -> Self {
        match value {
            Some(v) => self.attr(key, v),
            None => self,
        }
    }
}

/// A numeric sample a line reports.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricFinding {
    pub metric: String,
    pub value: f64,
    pub source: &'static str,
    pub step: Option<i64>,
    pub labels: Vec<(&'static str, String)>,
}

/// What one line says.
#[derive(Debug, Clone, PartialEq)]
pub enum Finding {
    Event(EventFinding),
    Metric(MetricFinding),
}

fn metric(name: &str, value: f64, source: &'static str, step: Option<i64>) -> Finding {
    Finding::Metric(MetricFinding {
        metric: name.to_string(),
        value,
        source,
        step,
        labels: Vec::new(),
    })
}

fn labelled(mut f: Finding, key: &'static str, value: impl ToString) -> Finding {
    if let Finding::Metric(m) = &mut f {
        m.labels.push((key, value.to_string()));
    }
    f
}

/// The text after the first `pat`, if any.
fn after<'a>(s: &'a str, pat: &str) -> Option<&'a str> {
    s.find(pat).map(|i| &s[i + pat.len()..])
}

/// A number at the start of `s` (after spaces): digits with `,` thousands separators, a
/// fraction and an exponent are allowed.
fn leading_number(s: &str) -> Option<f64> {
    let s = s.trim_start();
    let end = s
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || c == ','
                || ((c == '-' || c == '+') && (i == 0 || s[..i].ends_with(['e', 'E'])))
                || ((c == 'e' || c == 'E') && i > 0))
        })
        .map_or(s.len(), |(i, _)| i);
    let t = s[..end].trim_end_matches([',', '.']);
    if t.contains(',') {
        t.replace(',', "").parse().ok()
    } else {
        t.parse().ok()
    }
}

fn leading_int(s: &str) -> Option<i64> {
    let s = s.trim_start();
    let end = s
        .bytes()
        .position(|c| !c.is_ascii_digit())
        .unwrap_or(s.len());
    s[..end].parse().ok()
}

fn num_after(s: &str, pat: &str) -> Option<f64> {
    after(s, pat).and_then(leading_number)
}

fn int_after(s: &str, pat: &str) -> Option<i64> {
    after(s, pat).and_then(leading_int)
}

/// A `[Rank N]`, `Rank N]` or `rank=N` mention inside a message.
pub fn rank_in_message(s: &str) -> Option<i32> {
    for pat in ["[Rank ", " Rank ", "global_rank=", "world_rank=", "[rank"] {
        if let Some(v) = int_after(s, pat) {
            return i32::try_from(v).ok();
        }
    }
    None
}

/// A token: the text up to the next whitespace, without quotes, backticks, a trailing
/// period or comma.
fn token(s: &str) -> &str {
    let s = s.trim_start().trim_start_matches(['\'', '"', '`']);
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    s[..end].trim_end_matches(['\'', '"', '`', '.', ',', '!', ':', ')'])
}

/// A training step named by a checkpoint path: `checkpoint-10`, `global_step100`,
/// `step-10`, `step_10`, `ckpt-10`, `…/checkpoints/100`, `epoch=0-step=100.ckpt`.
pub fn step_from_checkpoint_path(path: &str) -> Option<i64> {
    for pat in [
        "checkpoint-",
        "global_step",
        "step-",
        "step_",
        "step=",
        "ckpt-",
        "checkpoint_",
    ] {
        if let Some(i) = path.rfind(pat)
            && let Some(v) = leading_int(&path[i + pat.len()..])
        {
            return Some(v);
        }
    }
    let last = path.trim_end_matches('/').rsplit('/').next()?;
    if !last.is_empty() && last.bytes().all(|c| c.is_ascii_digit()) {
        return last.parse().ok();
    }
    None
}

/// `… in 12.34 seconds.` at the end of a line: the number as written.
fn seconds_at_end(l: &str) -> Option<&str> {
    let head = l
        .trim_end()
        .trim_end_matches('.')
        .strip_suffix(" seconds")?;
    head.rsplit(' ').next().filter(|n| n.parse::<f64>().is_ok())
}

/// How long a line says it took: the number in `… in 12.5s`, `in 12.5 s`, `in 12.5
/// seconds`, `in 12.5 sec` (the last ` in ` of the line), as written.
fn seconds_taken(l: &str) -> Option<&str> {
    let (_, tail) = l.rsplit_once(" in ")?;
    let tail = tail.trim_end().trim_end_matches(['.', ')']);
    let end = tail
        .bytes()
        .position(|c| !(c.is_ascii_digit() || c == b'.'))
        .unwrap_or(tail.len());
    let (num, unit) = tail.split_at(end);
    let ok = matches!(unit.trim_start(), "s" | "sec" | "secs" | "seconds");
    (ok && num.parse::<f64>().is_ok()).then_some(num)
}

/// A checkpoint report with the duration its line tells (`seconds`), if it tells one.
fn timed(mut f: Finding, seconds: Option<&str>) -> Finding {
    if let (Finding::Event(e), Some(s)) = (&mut f, seconds) {
        e.attrs.push(("seconds", s.to_string()));
    }
    f
}

fn checkpoint(
    kind: &'static str,
    source: &'static str,
    path: Option<&str>,
    step: Option<i64>,
) -> Finding {
    let step = step.or_else(|| path.and_then(step_from_checkpoint_path));
    let mut e = EventFinding::new(kind, Severity::Info, source).attr_opt("path", path);
    e.step = step;
    Finding::Event(e.attr_opt("step", step))
}

/// Orbax's own account of a checkpoint operation (`event_tracking.py`), one line per
/// process: `[process=0] [sync] Started save checkpoint @ <path>.` as it starts; `Finished
/// blocking save in 28.04 seconds. Continuing save @ <path>.` when training may go on (an
/// async save's background part does not hold it); for a sync operation `Finished save in
/// 28.14 seconds @ <path>` at its end. Each timed line carries its `seconds`, so each is
/// dated at the operation's start. An async operation's whole time (`Finished save
/// (blocking + background) in …`) is not training's and is not read. Loads are restores.
fn orbax_operation(l: &str, out: &mut Vec<Finding>) -> bool {
    if !l.contains("[process=") {
        return false;
    }
    let kind = |op: &str| match op {
        "save" => Some("checkpoint_saved"),
        "load" => Some("checkpoint_restored"),
        _ => None,
    };
    let push = |out: &mut Vec<Finding>, kind, path, seconds: Option<&str>| {
        out.push(timed(
            checkpoint(kind, source::ORBAX, Some(path), None),
            seconds,
        ));
        true
    };
    if let Some(rest) = after(l, "] Started ")
        && let Some((op, path)) = rest.split_once(" checkpoint @ ")
        && let Some(kind) = kind(op)
    {
        return push(out, kind, token(path), None);
    }
    if let Some(rest) = after(l, "] Finished blocking ")
        && let Some((op, rest)) = rest.split_once(" in ")
        && let Some(kind) = kind(op)
        && let Some((secs, rest)) = rest.split_once(" seconds. Continuing ")
        && let Some(path) = after(rest, " @ ")
        && secs.parse::<f64>().is_ok()
    {
        return push(out, kind, token(path), Some(secs));
    }
    if let Some(rest) = after(l, "] [sync] Finished ")
        && let Some((op, rest)) = rest.split_once(" in ")
        && let Some(kind) = kind(op)
        && let Some((secs, path)) = rest.split_once(" seconds @ ")
        && secs.parse::<f64>().is_ok()
    {
        return push(out, kind, token(path), Some(secs));
    }
    false
}

fn checkpoint_rules(l: &str, out: &mut Vec<Finding>) -> bool {
    if orbax_operation(l, out) {
        return true;
    }
    let hf = |p: &str| after(l, p).map(token).filter(|t| !t.is_empty());
    // Hugging Face Trainer / accelerate / DeepSpeed: logged when a save starts.
    if let Some(path) =
        hf("Saving model checkpoint to ").or_else(|| hf("Saving model checkpoint: "))
    {
        let src = if l.contains("[Torch]") || l.contains("engine.py") {
            source::DEEPSPEED
        } else {
            source::HUGGINGFACE
        };
        out.push(checkpoint("checkpoint_saved", src, Some(path), None));
        return true;
    }
    if let Some(path) = hf("Saving current state to ").or_else(|| hf("Saving checkpoint to ")) {
        out.push(checkpoint(
            "checkpoint_saved",
            source::HUGGINGFACE,
            Some(path),
            None,
        ));
        return true;
    }
    // `Model weights saved in <file>`: `save_pretrained`, which the Trainer and
    // `save_state` call after `Saving model checkpoint to` / `Saving current state to`
    // (read above), prints it when the weights are written. It is not a save of its own
    // but the end of one: a `checkpoint_save_done` lets the analyzers time the save
    // (`checkpoint_ops` pairs it with the save that began before it at the same step).
    if let Some(path) = hf("Model weights saved in ") {
        out.push(checkpoint(
            "checkpoint_save_done",
            source::HUGGINGFACE,
            Some(path),
            None,
        ));
        return true;
    }
    // accelerate's FSDP saver: `Saving model to <file or dir>` as a save starts, `Model
    // saved to …` as it ends (one save told twice is one save to the analyzers: they
    // merge saves a moment apart).
    if let Some(path) = hf("Saving model to ").or_else(|| hf("Model saved to ")) {
        out.push(timed(
            checkpoint("checkpoint_saved", source::HUGGINGFACE, Some(path), None),
            seconds_taken(l),
        ));
        return true;
    }
    // `Checkpoint restored from <path> in 12.5s`: logged when the restore ends; the
    // event keeps the log time and carries the duration (`seconds`) so that the
    // restore's start can be dated. accelerate's `load_state` says `Loading states from
    // <dir>` as it starts.
    if let Some(path) = hf("Checkpoint restored from ").or_else(|| hf("Loading states from ")) {
        let src = if l.contains("Loading states from ") {
            source::HUGGINGFACE
        } else {
            source::APP
        };
        out.push(timed(
            checkpoint("checkpoint_restored", src, Some(path), None),
            seconds_taken(l),
        ));
        return true;
    }
    // MaxText, once the save is made (`saved a checkpoint at step 100`; `Saved a checkpoint
    // at step 100.` in later versions, or `Started an asynchronous checkpoint save for step
    // 100` for a save that goes on in the background).
    if let Some(step) = int_after(l, "aved a checkpoint at step ")
        .or_else(|| int_after(l, "Started an asynchronous checkpoint save for step "))
    {
        out.push(checkpoint(
            "checkpoint_saved",
            source::MAXTEXT,
            None,
            Some(step),
        ));
        return true;
    }
    // DeepSpeed's checkpoint engine, as a save ends: `[Torch] Checkpoint global_step4000 is
    // ready now!` (its start is `Saving model checkpoint: …`, read above).
    if let Some(rest) = after(l, "Checkpoint ")
        && let Some((tag, _)) = rest.split_once(" is ready now!")
        && !tag.is_empty()
        && !tag.contains(char::is_whitespace)
    {
        out.push(checkpoint(
            "checkpoint_save_done",
            source::DEEPSPEED,
            None,
            step_from_checkpoint_path(tag),
        ));
        return true;
    }
    // Megatron-LM: `saving checkpoint at iteration     500 to <dir> in torch_dist format`
    // as a save starts, `  successfully saved checkpoint from iteration     500 to <dir> [
    // t 1/1, p 1/1 ]` as it ends (the pair times the save), ` loading checkpoint from
    // <dir> at iteration 2000` as a restore starts (its end is the first iteration after).
    for (said, kind) in [
        ("saving checkpoint at iteration ", "checkpoint_saved"),
        (
            "successfully saved checkpoint from iteration ",
            "checkpoint_save_done",
        ),
    ] {
        if let Some(rest) = after(l, said)
            && let Some(step) = leading_int(rest)
        {
            let path = after(rest, " to ").map(token);
            out.push(checkpoint(kind, source::MEGATRON, path, Some(step)));
            return true;
        }
    }
    if let Some(rest) = after(l, "loading checkpoint from ")
        && let Some(step) = int_after(rest, " at iteration ")
    {
        out.push(checkpoint(
            "checkpoint_restored",
            source::MEGATRON,
            Some(token(rest)),
            Some(step),
        ));
        return true;
    }
    // torchtitan reports the save's duration when it ends.
    if l.contains("Finished saving the checkpoint") {
        out.push(timed(
            checkpoint("checkpoint_saved", source::TORCHTITAN, None, None),
            seconds_at_end(l),
        ));
        return true;
    }
    if let Some(path) = hf("Restoring checkpoint from ") {
        out.push(checkpoint(
            "checkpoint_restored",
            source::MAXTEXT,
            Some(path),
            None,
        ));
        return true;
    }
    if let Some(step) = int_after(l, "Continuing training from global step ") {
        out.push(checkpoint(
            "checkpoint_restored",
            source::HUGGINGFACE,
            None,
            Some(step),
        ));
        return true;
    }
    if let Some(path) = hf("Resuming from checkpoint ")
        .or_else(|| hf("Resuming from checkpoint: "))
        .or_else(|| hf("Resuming training from checkpoint "))
        .or_else(|| hf("resume_from_checkpoint="))
    {
        out.push(checkpoint(
            "checkpoint_restored",
            source::HUGGINGFACE,
            Some(path),
            None,
        ));
        return true;
    }
    if l.contains("Finished loading the checkpoint") {
        out.push(timed(
            checkpoint("checkpoint_restored", source::TORCHTITAN, None, None),
            seconds_at_end(l),
        ));
        return true;
    }
    if !l.contains("Loading checkpoint shards")
        && let Some(path) = hf("Loading checkpoint from ").or_else(|| hf("Loading checkpoint "))
    {
        let src = if l.contains("[Torch]") {
            source::DEEPSPEED
        } else {
            source::APP
        };
        out.push(checkpoint("checkpoint_restored", src, Some(path), None));
        return true;
    }
    false
}

/// `Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE,
/// NumelIn=…, NumelOut=…, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.`
fn collective_timeout(l: &str) -> Option<Finding> {
    let rest = after(l, "Watchdog caught collective operation timeout")?;
    let work = after(rest, "WorkNCCL(").unwrap_or(rest);
    let op = after(work, "OpType=").map(|s| s.split([',', ')', ' ']).next().unwrap_or(""));
    let mut e = EventFinding::new("collective_timeout", Severity::Error, source::PYTORCH)
        .attr_opt("op_type", op)
        .attr_opt("seq_num", int_after(work, "SeqNum="))
        .attr_opt("timeout_ms", int_after(work, "Timeout(ms)="))
        .attr_opt("elapsed_ms", int_after(work, "ran for "))
        .attr_opt("numel_in", int_after(work, "NumelIn="))
        .attr_opt("numel_out", int_after(work, "NumelOut="));
    e.reason = op.map(str::to_string);
    e.rank = rank_in_message(l);
    Some(Finding::Event(e))
}

fn elastic_rules(l: &str, out: &mut Vec<Finding>) -> bool {
    if let Some(rest) =
        after(l, "Worker group FAILED.").or_else(|| after(l, "Worker group UNHEALTHY."))
    {
        // `3/3 attempts left; will restart worker group`
        let left = leading_int(rest);
        let max = after(rest, "/").and_then(leading_int);
        let state = if l.contains("UNHEALTHY.") {
            "UNHEALTHY"
        } else {
            "FAILED"
        };
        let e = EventFinding::new("worker_group_restart", Severity::Warning, source::PYTORCH)
            .attr("state", state)
            .attr_opt("attempts_left", left)
            .attr_opt("max_restarts", max);
        out.push(Finding::Event(e));
        return true;
    }
    if l.contains("] Starting worker group") || l.starts_with("Starting worker group") {
        out.push(Finding::Event(EventFinding::new(
            "worker_group_started",
            Severity::Info,
            source::PYTORCH,
        )));
        return true;
    }
    // A worker process the agent saw die: `failed (exitcode: 1) local_rank: 0 (pid: 231)
    // of binary: /usr/bin/python3` (torch/distributed/elastic/multiprocessing/api.py).
    if let Some(rest) = after(l, "failed (exitcode: ") {
        let e = EventFinding::new("worker_failed", Severity::Error, source::PYTORCH)
            .attr_opt("exitcode", leading_int(rest))
            .attr_opt("local_rank", int_after(rest, "local_rank: "));
        out.push(Finding::Event(e));
        return true;
    }
    if l.contains("Slice down event detected") {
        out.push(Finding::Event(EventFinding::new(
            "slice_down",
            Severity::Error,
            source::MAXTEXT,
        )));
        return true;
    }
    if let Some(rest) = after(l, "Elastic attempt ") {
        let e = EventFinding::new("worker_group_restart", Severity::Warning, source::MAXTEXT)
            .attr_opt("attempt", leading_int(rest))
            .attr_opt("max_attempts", int_after(rest, " out of "));
        out.push(Finding::Event(e));
        return true;
    }
    false
}

fn recompile_rules(l: &str, out: &mut Vec<Finding>) -> bool {
    if let Some(rest) = after(l, "Recompiling function ") {
        let function = token(rest);
        let e = EventFinding::new("recompile", Severity::Warning, source::PYTORCH)
            .attr("function", function)
            .attr_opt("location", after(rest, " in ").map(token));
        out.push(Finding::Event(e));
        return true;
    }
    for limit in [
        "hit config.recompile_limit",
        "hit config.cache_size_limit",
        "hit config.accumulated_recompile_limit",
    ] {
        if let Some(rest) = after(l, limit) {
            let e = EventFinding::new("recompile", Severity::Warning, source::PYTORCH)
                .attr("limit_hit", limit.trim_start_matches("hit config."))
                .attr_opt("limit", after(rest, "(").and_then(leading_int));
            out.push(Finding::Event(e));
            return true;
        }
    }
    // JAX with `jax_explain_cache_misses`: `TRACING CACHE MISS at … because: …`.
    if l.contains("TRACING CACHE MISS") {
        let e = EventFinding::new("recompile", Severity::Warning, source::JAX)
            .attr_opt("function", after(l, "for ").map(token));
        out.push(Finding::Event(e));
        return true;
    }
    // JAX with `jax_log_compiles`: `Finished XLA compilation of jit(train_step) in 1.23 sec`.
    if let Some(rest) = after(l, "Finished XLA compilation of ") {
        let e = EventFinding::new("compile", Severity::Info, source::JAX)
            .attr("function", token(rest))
            .attr_opt("seconds", num_after(rest, " in "));
        out.push(Finding::Event(e));
        return true;
    }
    false
}

/// Classifies a finished Python exception (`type`, `message`) into an event.
pub fn exception_event(exc_type: &str, message: &str) -> EventFinding {
    let text = format!("{exc_type}: {message}");
    let (kind, source) = if exc_type.ends_with("OutOfMemoryError") && text.contains("CUDA")
        || text.contains("CUDA out of memory")
    {
        ("cuda_oom", source::PYTORCH)
    } else if text.contains("Watchdog caught collective operation timeout") {
        ("collective_timeout", source::PYTORCH)
    } else if exc_type.ends_with("DistBackendError") || is_nccl_error(&text) {
        ("nccl_error", source::PYTORCH)
    } else if exc_type.ends_with("ChildFailedError") {
        ("run_failed", source::PYTORCH)
    } else if storage_errno(message).is_some() {
        ("storage_error", source::APP)
    } else {
        let src = if exc_type.starts_with("torch") {
            source::PYTORCH
        } else {
            source::APP
        };
        ("exception", src)
    };
    let mut e = EventFinding::new(kind, Severity::Error, source).attr("exception_type", exc_type);
    if kind == "collective_timeout"
        && let Some(Finding::Event(t)) = collective_timeout(message)
    {
        e.attrs.extend(t.attrs);
        e.rank = t.rank;
    }
    if kind == "cuda_oom"
        && let Some(rest) = after(message, "Tried to allocate ")
    {
        e.attrs.push(("tried_to_allocate", size_token(rest)));
    }
    e.reason = Some(exc_type.to_string());
    e.rank = e.rank.or_else(|| rank_in_message(message));
    e
}

/// `20.00 MiB` from `20.00 MiB. GPU 0 has …`.
fn size_token(s: &str) -> String {
    let mut parts = s.split_whitespace();
    match (parts.next(), parts.next()) {
        (Some(n), Some(u)) => format!("{n} {}", u.trim_end_matches(['.', ','])),
        (Some(n), None) => n.to_string(),
        _ => String::new(),
    }
}

fn is_nccl_error(l: &str) -> bool {
    l.contains("NCCL error")
        || l.contains("ncclUnhandledCudaError")
        || l.contains("ncclSystemError")
        || l.contains("ncclInternalError")
        || l.contains("ncclRemoteError")
        || l.contains("ncclInvalidUsage")
}

/// A file system failing its reader, by the errno's text as the C library and Python
/// print it: `Input/output error` (EIO: what a FUSE mount such as gcsfuse, an NFS or a
/// failing disk returns, `ReadFile: input/output error, …`, `OSError: [Errno 5]
/// Input/output error`) and `Stale file handle` (ESTALE, NFS).
fn storage_errno(l: &str) -> Option<&'static str> {
    if l.contains("nput/output error") {
        Some("EIO")
    } else if l.contains("Stale file handle") || l.contains("stale file handle") {
        Some("ESTALE")
    } else {
        None
    }
}

fn error_rules(l: &str, out: &mut Vec<Finding>) -> bool {
    if l.contains("CUDA out of memory") {
        let mut e = EventFinding::new("cuda_oom", Severity::Error, source::PYTORCH);
        if let Some(rest) = after(l, "Tried to allocate ") {
            e.attrs.push(("tried_to_allocate", size_token(rest)));
        }
        e.rank = rank_in_message(l);
        out.push(Finding::Event(e));
        return true;
    }
    if l.contains("terminate called after throwing an instance of")
        && l.contains("DistBackendError")
    {
        let mut e = EventFinding::new("nccl_error", Severity::Error, source::PYTORCH)
            .attr("exception_type", "c10::DistBackendError");
        e.reason = Some("DistBackendError".to_string());
        out.push(Finding::Event(e));
        return true;
    }
    if is_nccl_error(l) {
        let mut e = EventFinding::new("nccl_error", Severity::Error, source::PYTORCH);
        e.rank = rank_in_message(l);
        e.reason = after(l, "NCCL error").map(|_| "NCCL error".to_string());
        out.push(Finding::Event(e));
        return true;
    }
    if let Some(errno) = storage_errno(l) {
        out.push(Finding::Event(
            EventFinding::new("storage_error", Severity::Error, source::APP).attr("errno", errno),
        ));
        return true;
    }
    if let Some(rest) = after(l, "ChildFailedError") {
        out.push(Finding::Event(
            EventFinding::new("run_failed", Severity::Error, source::PYTORCH)
                .attr("exception_type", "ChildFailedError")
                .attr_opt(
                    "detail",
                    Some(rest.trim_start_matches(':').trim()).filter(|s| !s.is_empty()),
                ),
        ));
        return true;
    }
    false
}

/// MaxText, as an eval ends (it announces none as it starts): `eval metrics after step:
/// 999, loss=2.246, total_weights=412032`.
fn maxtext_eval(l: &str, out: &mut Vec<Finding>) -> bool {
    let Some(step) = int_after(l, "eval metrics after step: ") else {
        return false;
    };
    let mut e = EventFinding::new("eval_finished", Severity::Info, source::MAXTEXT)
        .attr("step", step)
        .attr_opt("loss", num_after(l, "loss="));
    e.step = Some(step);
    out.push(Finding::Event(e));
    true
}

/// How an evaluation is told in words as it starts: a custom loop's `Running validation at
/// step 1500 ...`, Hugging Face Trainer's `***** Running Evaluation *****`.
const EVAL_STARTS: [&str; 8] = [
    "running evaluation",
    "running validation",
    "starting evaluation",
    "starting validation",
    "start evaluation",
    "start validation",
    "begin evaluation",
    "begin validation",
];

/// Evaluations told in words: as one starts ([`EVAL_STARTS`]), and as one ends with how
/// long it took (`validation at step 1500 | val_loss 3.2914 | took 93.8s`).
fn eval_words(l: &str, out: &mut Vec<Finding>) -> bool {
    let t = l.trim_start_matches(['*', '=', '-', '>', ' ', '\t']);
    let starts = |p: &str| t.get(..p.len()).is_some_and(|h| h.eq_ignore_ascii_case(p));
    let step = int_after(t, " step ").or_else(|| int_after(t, " step: "));
    let kind = if EVAL_STARTS.iter().any(|p| starts(p)) {
        "eval_started"
    } else if ["validation", "evaluation", "eval "]
        .iter()
        .any(|p| starts(p))
        && let Some(rest) = after(t, "took ")
        && let Some(seconds) = leading_number(rest)
        && is_seconds_unit(rest)
    {
        let mut e = EventFinding::new("eval_finished", Severity::Info, source::APP)
            .attr("seconds", seconds);
        e.step = step;
        out.push(Finding::Event(e.attr_opt("step", step)));
        return true;
    } else {
        return false;
    };
    let mut e = EventFinding::new(kind, Severity::Info, source::APP);
    e.step = step;
    out.push(Finding::Event(e.attr_opt("step", step)));
    true
}

/// Whether the number `s` begins with is in seconds (`93.8s`, `12 sec`, `4 seconds`).
fn is_seconds_unit(s: &str) -> bool {
    let unit = s
        .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.')
        .trim_start();
    let word = unit
        .split(|c: char| !c.is_ascii_alphabetic())
        .next()
        .unwrap_or("");
    matches!(word, "s" | "sec" | "secs" | "second" | "seconds")
}

/// MaxText: `completed step: 9, seconds: 5.667, TFLOP/s/device: 134.924, Tokens/s/device:
/// 8672.758, total_weights: 196608, loss: 10.374`.
fn maxtext_step(l: &str, out: &mut Vec<Finding>) -> bool {
    let Some(rest) = after(l, "completed step: ") else {
        return false;
    };
    let Some(step) = leading_int(rest) else {
        return false;
    };
    let before = out.len();
    let s = Some(step);
    let device = |f: Finding| labelled(f, "per", "device");
    if let Some(v) = num_after(rest, "seconds: ") {
        out.push(metric("step_time_seconds", v, source::MAXTEXT, s));
    }
    if let Some(v) = num_after(rest, "TFLOP/s/device: ") {
        out.push(device(metric("tflops_per_second", v, source::MAXTEXT, s)));
    }
    if let Some(v) = num_after(rest, "Tokens/s/device: ") {
        out.push(device(metric("tokens_per_second", v, source::MAXTEXT, s)));
    }
    if let Some(v) = num_after(rest, "total_weights: ") {
        out.push(metric("total_weights", v, source::MAXTEXT, s));
    }
    if let Some(v) = num_after(rest, "loss: ") {
        out.push(metric("train_loss", v, source::MAXTEXT, s));
    }
    out.len() > before
}

/// Megatron-LM's training log, every `--log-interval` iterations on the last rank: `
/// [2026-11-21 06:05:21] iteration       10/   40000 | consumed samples:         3840 |
/// elapsed time per iteration (ms): 2686.6 | throughput per GPU (TFLOP/s/GPU): 119.0 |
/// learning rate: 1.000000E-06 | global batch size:   384 | lm loss: 2.988103E+00 | …`.
/// The elapsed time is the interval's mean per iteration: the step time at that iteration.
fn megatron_iteration(l: &str, out: &mut Vec<Finding>) -> bool {
    let Some(rest) = after(l, "iteration ") else {
        return false;
    };
    let Some(ms) = num_after(rest, "elapsed time per iteration (ms):") else {
        return false;
    };
    let Some(step) = leading_int(rest) else {
        return false;
    };
    let s = Some(step);
    out.push(metric(
        "step_time_seconds",
        ms / 1000.0,
        source::MEGATRON,
        s,
    ));
    if let Some(v) = num_after(rest, "lm loss:") {
        out.push(metric("train_loss", v, source::MEGATRON, s));
    }
    if let Some(v) = num_after(rest, "throughput per GPU (TFLOP/s/GPU):") {
        out.push(labelled(
            metric("tflops_per_second", v, source::MEGATRON, s),
            "per",
            "device",
        ));
    }
    true
}

/// torchtitan: `step: 20  loss: 11.83506  grad_norm:  9.6669  memory: 48.87GiB(51.44%)
/// tps: 4,376  tflops: 253.41  mfu: 25.62%`.
fn torchtitan_step(l: &str, out: &mut Vec<Finding>) -> bool {
    let Some(rest) = after(l, "step:") else {
        return false;
    };
    if !(l.contains("loss:") && (l.contains("tps:") || l.contains("memory:") || l.contains("mfu:")))
    {
        return false;
    }
    let Some(step) = leading_int(rest) else {
        return false;
    };
    let s = Some(step);
    let device = |f: Finding| labelled(f, "per", "device");
    for (pat, name, per_device) in [
        ("loss:", "train_loss", false),
        ("grad_norm:", "grad_norm", false),
        ("memory:", "memory_gib", true),
        ("tps:", "tokens_per_second", true),
        ("tflops:", "tflops_per_second", true),
        ("mfu:", "mfu_percent", true),
    ] {
        if let Some(v) = num_after(rest, pat) {
            let m = metric(name, v, source::TORCHTITAN, s);
            out.push(if per_device { device(m) } else { m });
        }
    }
    true
}

/// Hugging Face Trainer's logged dicts, printed with Python's repr:
/// `{'loss': 1.23, 'grad_norm': 0.5, 'learning_rate': 2e-05, 'epoch': 0.5}`,
/// `{'eval_loss': …, 'eval_runtime': …}`, `{'train_runtime': 165.12, …, 'train_loss': …}`.
/// Training dicts' `loss` becomes `train_loss`; the end-of-training summary (it has
/// `train_runtime`) becomes metrics of its own names, `train_loss` as
/// `train_loss_average` (its `epoch` only on the event), plus a `run_finished` event.
fn hf_dict(l: &str, out: &mut Vec<Finding>) -> bool {
    let t = l.trim();
    let Some(body) = t.strip_prefix("{'").and_then(|b| b.strip_suffix('}')) else {
        return false;
    };
    let mut pairs = Vec::new();
    for item in format!("'{body}").split(", '") {
        let Some((k, v)) = item.split_once("': ") else {
            return false;
        };
        let k = k.trim_start_matches('\'');
        if k.is_empty()
            || !k
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'/' || c == b'-')
        {
            return false;
        }
        pairs.push((k.to_string(), v.trim().to_string()));
    }
    let summary = pairs.iter().any(|(k, _)| k == "train_runtime");
    let epoch = pairs
        .iter()
        .find(|(k, _)| k == "epoch")
        .map(|(_, v)| v.clone());
    let before = out.len();
    for (k, v) in &pairs {
        let Ok(value) = v.parse::<f64>() else {
            continue;
        };
        // The summary's epoch says where the run ended, on its `run_finished`; as an
        // `epoch` metric it would be one more progress record, after the last.
        if summary && k == "epoch" {
            continue;
        }
        let name = match (k.as_str(), summary) {
            ("loss", _) => "train_loss",
            ("train_loss", true) => "train_loss_average",
            (other, _) => other,
        };
        let mut m = metric(name, value, source::HUGGINGFACE, None);
        if let (Some(e), false) = (&epoch, k == "epoch") {
            m = labelled(m, "epoch", e);
        }
        out.push(m);
    }
    if out.len() == before {
        return false;
    }
    if summary {
        let mut e = EventFinding::new("run_finished", Severity::Info, source::HUGGINGFACE);
        for (k, v) in pairs {
            if let Some(key) = SUMMARY_KEYS.iter().find(|s| **s == k) {
                e.attrs.push((key, v));
            }
        }
        out.push(Finding::Event(e));
    }
    true
}

const SUMMARY_KEYS: [&str; 6] = [
    "train_runtime",
    "train_samples_per_second",
    "train_steps_per_second",
    "total_flos",
    "train_loss",
    "epoch",
];

/// The example DeepSpeed/PyTorch training loops' `Train Epoch: 1 [40/2000 (16%)]\tLoss: 0.878906`.
fn train_epoch_line(l: &str, out: &mut Vec<Finding>) -> bool {
    let Some(rest) = l.trim_start().strip_prefix("Train Epoch: ") else {
        return false;
    };
    let Some(epoch) = leading_int(rest) else {
        return false;
    };
    let Some(loss) = num_after(rest, "Loss: ") else {
        return false;
    };
    let mut m = labelled(
        metric("train_loss", loss, source::APP, None),
        "epoch",
        epoch,
    );
    if let Some(progress) = after(rest, "[") {
        if let Some(done) = leading_int(progress) {
            m = labelled(m, "samples", done);
        }
        if let Some(total) = after(progress, "/").and_then(leading_int) {
            m = labelled(m, "samples_total", total);
        }
    }
    out.push(m);
    true
}

/// A custom loop's progress line of `|`-separated fields, the first naming the step:
/// `step     50 | epoch 0 | loss 7.8754 | lr 7.500e-06 | 0.914 s/it | 280.1 img/s/gpu`,
/// `step 3010 | loss 2.4698 | ppl 7.24 | tokens/s 52697`, `step 4220/20000 | … |
/// step_time 1.92s`. Read: the step, and of the
/// fields of two words (`name value` or `value unit`) the seconds per step (`s/it`,
/// `s/step`, `sec/step`; `it/s` inverted), the tokens per second (`tokens/s`, `tok/s`)
/// and the loss. A line with no such field is no progress line.
fn pipe_step_line(l: &str, out: &mut Vec<Finding>) -> bool {
    let mut fields = l.split('|');
    let Some(first) = fields.next() else {
        return false;
    };
    let mut words = first.split_whitespace().rev();
    let (Some(n), Some(name)) = (words.next(), words.next()) else {
        return false;
    };
    // (`step 4220/20000`: the step of the steps planned.)
    let Ok(step) = n.split('/').next().unwrap_or(n).parse::<i64>() else {
        return false;
    };
    if !name.trim_end_matches(':').eq_ignore_ascii_case("step") {
        return false;
    }
    let before = out.len();
    let s = Some(step);
    for field in fields {
        let mut w = field.split_whitespace();
        let (Some(a), Some(b), None) = (w.next(), w.next(), w.next()) else {
            continue;
        };
        let seconds = |v: &str| v.trim_end_matches('s').parse::<f64>().ok();
        let found = match (a.parse::<f64>(), b.parse::<f64>()) {
            // `0.914 s/it`
            (Ok(v), Err(_)) => match b {
                "s/it" | "s/step" | "sec/it" | "sec/step" => Some(("step_time_seconds", v)),
                "it/s" | "steps/s" if v > 0.0 => Some(("step_time_seconds", 1.0 / v)),
                "tokens/s" | "tok/s" | "tokens/sec" | "tok/sec" => Some(("tokens_per_second", v)),
                _ => None,
            },
            // `loss 7.8754`, `tokens/s 52697`, `step_time 0.91s`
            (Err(_), _) => match a.trim_end_matches(':') {
                "loss" | "train_loss" => b.parse().ok().map(|v| ("train_loss", v)),
                "tokens/s" | "tok/s" | "tokens/sec" | "tok/sec" | "tps" => {
                    b.parse().ok().map(|v| ("tokens_per_second", v))
                }
                "step_time" | "time/step" | "s/it" | "sec/step" => {
                    seconds(b).map(|v| ("step_time_seconds", v))
                }
                _ => None,
            },
            _ => None,
        };
        if let Some((name, v)) = found.filter(|(_, v)| v.is_finite()) {
            out.push(metric(name, v, source::APP, s));
        }
    }
    out.len() > before
}

/// DeepSpeed's throughput timer: `epoch=0/micro_step=10/global_step=10,
/// RunningAvgSamplesPerSec=29.5, CurrSamplesPerSec=30.1, MemAllocated=1.2GB, …`.
fn deepspeed_throughput(l: &str, out: &mut Vec<Finding>) -> bool {
    let Some(cur) = num_after(l, "CurrSamplesPerSec=") else {
        return false;
    };
    let step = int_after(l, "global_step=");
    out.push(metric("samples_per_second", cur, source::DEEPSPEED, step));
    if let Some(v) = num_after(l, "RunningAvgSamplesPerSec=") {
        out.push(metric(
            "samples_per_second_running_average",
            v,
            source::DEEPSPEED,
            step,
        ));
    }
    true
}

/// A tqdm progress bar: `100%|██████████| 40/40 [02:36<00:00,  4.10s/it]` or
/// `…, 2.54it/s]`. A bar cannot say whether it counts training steps, evaluation batches
/// or data items, so it becomes `progress_seconds_per_iteration` (tqdm's smoothed
/// seconds per iteration at iteration N, as `step`), labelled with the bar's total and
/// description, never `step_time_seconds`. Bars counting other units (`examples/s`) are
/// not read.
fn tqdm_bar(l: &str, out: &mut Vec<Finding>) -> bool {
    let Some(bar) = l.find("%|") else {
        return false;
    };
    let Some(counts) = l[bar..].find("| ").map(|i| &l[bar + i + 2..]) else {
        return false;
    };
    let Some(n) = leading_int(counts) else {
        return false;
    };
    let Some(total) = after(counts, "/").and_then(leading_int) else {
        return false;
    };
    let Some(rate_text) = after(counts, ", ") else {
        return false;
    };
    let Some(rate) = leading_number(rate_text) else {
        return false;
    };
    let unit = rate_text
        .trim_start()
        .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    let seconds = if unit.starts_with("s/it") {
        rate
    } else if unit.starts_with("it/s") && rate > 0.0 {
        1.0 / rate
    } else {
        return false;
    };
    let desc = l[..bar]
        .trim_end_matches(|c: char| c.is_ascii_digit() || c == ' ')
        .trim_end_matches(':')
        .trim();
    let mut m = labelled(
        metric(
            "progress_seconds_per_iteration",
            seconds,
            source::APP,
            Some(n),
        ),
        "total",
        total,
    );
    if !desc.is_empty() {
        m = labelled(m, "desc", desc);
    }
    out.push(m);
    true
}

/// Where a profiler says it saved a trace, as `profile_captured` with the path as `url`.
///
/// The XLA/TSL profiler (`save_profile.cc`, in jaxlib and TensorFlow) logs
/// `Collecting XSpace to repository: <logdir>/plugins/profile/<run>/<host>.xplane.pb`
/// as a capture (`jax.profiler.trace`, `stop_trace`, a profiler server's capture) is
/// written; XProf opens the `logdir` before `/plugins/profile/`, kept as `logdir`. How
/// long the capture ran is the decoder's business (it pairs the line with the stream's
/// `Profiler session started.`, see [`capture_began`]). PyTorch's profiler
/// (`tensorboard_trace_handler`, `export_chrome_trace`) writes no such line, so a
/// PyTorch trace reaches whyslow as an envelope `profile_captured` record instead.
fn profile_saved(l: &str) -> Option<Finding> {
    let path = token(after(l, "Collecting XSpace to repository: ")?);
    if path.is_empty() {
        return None;
    }
    let logdir = path
        .find("/plugins/profile/")
        .map(|i| &path[..i])
        .filter(|d| !d.is_empty());
    let e = EventFinding::new("profile_captured", Severity::Info, source::XLA)
        .attr("url", path)
        .attr("tool", "xprof")
        .attr_opt("logdir", logdir);
    Some(Finding::Event(e))
}

/// Whether a line says that a profile capture began: the XLA/TSL profiler's `Profiler
/// session started.` (`profiler_session.cc`), or `nsys profile`'s `Collecting data...`
/// as the profiled program starts.
pub fn capture_began(l: &str) -> bool {
    let t = l.trim();
    t.ends_with("Profiler session started.") || t == "Collecting data..."
}

/// The line `nsys profile` prints before the files it wrote, each on its own indented
/// line: `Generated:` then `    /home/u/example/report1.nsys-rep` (and `….sqlite` with
/// `--stats=true`).
pub const NSYS_GENERATED: &str = "Generated:";

/// A line of the file list under [`NSYS_GENERATED`]: indented, one path, no spaces.
pub fn nsys_listed_file(l: &str) -> Option<&str> {
    let t = l.trim();
    (l.starts_with([' ', '\t']) && !t.is_empty() && !t.contains(char::is_whitespace)).then_some(t)
}

/// The Nsight Systems report among the listed files (`.nsys-rep`), as `profile_captured`.
pub fn nsys_report(path: &str) -> Option<EventFinding> {
    path.ends_with(".nsys-rep").then(|| {
        EventFinding::new("profile_captured", Severity::Info, source::NSIGHT)
            .attr("url", path)
            .attr("tool", "nsight_systems")
    })
}

/// Reads one framework line (already stripped of container-runtime framing and of a
/// `[rankN]:` prefix) into `out`. Returns whether any rule matched.
pub fn classify(l: &str, out: &mut Vec<Finding>) -> bool {
    if let Some(f) = collective_timeout(l).or_else(|| profile_saved(l)) {
        out.push(f);
        return true;
    }
    checkpoint_rules(l, out)
        || elastic_rules(l, out)
        || recompile_rules(l, out)
        || error_rules(l, out)
        || maxtext_step(l, out)
        || maxtext_eval(l, out)
        || eval_words(l, out)
        || torchtitan_step(l, out)
        || megatron_iteration(l, out)
        || hf_dict(l, out)
        || train_epoch_line(l, out)
        || pipe_step_line(l, out)
        || deepspeed_throughput(l, out)
        || tqdm_bar(l, out)
        || super::engine_lines::vllm_stats(l, out)
        || super::request_lines::hf_router_success(l, out)
        || super::config_lines::config_dump(l, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(l: &str) -> Vec<Finding> {
        let mut v = Vec::new();
        classify(l, &mut v);
        v
    }

    fn event(l: &str) -> EventFinding {
        match one(l).into_iter().next() {
            Some(Finding::Event(e)) => e,
            other => panic!("no event for {l:?}: {other:?}"),
        }
    }

    fn attr<'a>(e: &'a EventFinding, k: &str) -> Option<&'a str> {
        e.get(k)
    }

    /// Orbax's `event_tracking.py` lines: a save's start, its blocking part and (sync)
    /// its whole, each timed one dated at the start by its `seconds`; an async save's
    /// background total is not training's time; loads are restores. MaxText's own line
    /// in both its wordings.
    #[test]
    fn orbax_and_maxtext_checkpoint_lines() {
        let p = "gs://ckpt/maxtext/run/checkpoints/4000";
        let e = event(&format!(
            "I1016 11:17:53.708346 139803377069361 event_tracking.py:70] [process=0] [sync] Started save checkpoint @ {p}."
        ));
        assert_eq!(
            (e.kind, e.source, e.get("path"), e.step, e.get("seconds")),
            ("checkpoint_saved", source::ORBAX, Some(p), Some(4000), None)
        );
        let e = event(&format!(
            "event_tracking.py:125] [process=2] [async] Finished blocking save in 2.15 seconds. Continuing save @ {p}."
        ));
        assert_eq!(
            (e.kind, e.get("path"), e.get("seconds")),
            ("checkpoint_saved", Some(p), Some("2.15"))
        );
        let e = event(&format!(
            "event_tracking.py:138] [process=3] [sync] Finished save in 214.25 seconds @ {p}"
        ));
        assert_eq!(
            (e.kind, e.get("seconds")),
            ("checkpoint_saved", Some("214.25"))
        );
        assert!(
            one(&format!(
                "[process=0] [async] Finished save (blocking + background) in 61.20 seconds @ {p}"
            ))
            .is_empty()
        );
        let e = event(&format!(
            "[process=0] [sync] Finished load in 48.10 seconds @ {p}"
        ));
        assert_eq!(
            (e.kind, e.get("seconds")),
            ("checkpoint_restored", Some("48.10"))
        );
        for l in [
            "saved a checkpoint at step 4000",
            "Saved a checkpoint at step 4000.",
            "Started an asynchronous checkpoint save for step 4000",
        ] {
            let e = event(l);
            assert_eq!(
                (e.kind, e.source, e.step),
                ("checkpoint_saved", source::MAXTEXT, Some(4000)),
                "{l}"
            );
        }
    }

    #[test]
    fn nccl_watchdog_forms() {
        let e = event(
            "[E321 10:45:12.123456789 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: \
             WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=1024, NumelOut=1024, Timeout(ms)=600000) ran for 600060 \
             milliseconds before timing out.",
        );
        assert_eq!(e.kind, "collective_timeout");
        assert_eq!(attr(&e, "op_type"), Some("ALLREDUCE"));
        assert_eq!(attr(&e, "seq_num"), Some("1580"));
        assert_eq!(attr(&e, "timeout_ms"), Some("600000"));
        assert_eq!(attr(&e, "elapsed_ms"), Some("600060"));
        assert_eq!(e.rank, Some(0));
        let e = event(
            "[PG ID 0 PG GUID 0(default_pg) Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, \
             OpType=_ALLGATHER_BASE, NumelIn=8, NumelOut=16, Timeout(ms)=1800000) ran for 1800029 milliseconds before timing out.",
        );
        assert_eq!(
            (e.rank, attr(&e, "op_type")),
            (Some(1), Some("_ALLGATHER_BASE"))
        );
    }

    /// The lines accelerate prints (its FSDP saver, `save_state`, `load_state`) and the
    /// restore line that states its own duration.
    #[test]
    fn accelerate_fsdp_saves_and_timed_restores() {
        for (line, path, step) in [
            (
                "Saving model to /ckpt/checkpoint-1200/pytorch_model_fsdp.bin",
                "/ckpt/checkpoint-1200/pytorch_model_fsdp.bin",
                Some(1200),
            ),
            (
                "Model saved to /ckpt/checkpoint-1200/pytorch_model_fsdp.bin",
                "/ckpt/checkpoint-1200/pytorch_model_fsdp.bin",
                Some(1200),
            ),
            (
                "Saving model to out/step_300/pytorch_model_fsdp_0",
                "out/step_300/pytorch_model_fsdp_0",
                Some(300),
            ),
            ("Model saved to /ckpt/final", "/ckpt/final", None),
        ] {
            let e = event(line);
            assert_eq!(
                (e.kind, e.source, attr(&e, "path"), e.step),
                ("checkpoint_saved", source::HUGGINGFACE, Some(path), step),
                "{line}"
            );
            assert_eq!(attr(&e, "seconds"), None);
        }
        // The weights line that follows a save marks its end, not a save of its own.
        let e = event("Model weights saved in out/checkpoints/checkpoint_3/pytorch_model.bin");
        assert_eq!(
            (e.kind, e.step, attr(&e, "path")),
            (
                "checkpoint_save_done",
                Some(3),
                Some("out/checkpoints/checkpoint_3/pytorch_model.bin")
            )
        );
        let e = event("Checkpoint restored from /ckpt/checkpoint-1200 in 12.5s");
        assert_eq!(
            (e.kind, e.step, attr(&e, "path"), attr(&e, "seconds")),
            (
                "checkpoint_restored",
                Some(1200),
                Some("/ckpt/checkpoint-1200"),
                Some("12.5")
            )
        );
        assert_eq!(attr(&e, "step"), Some("1200"));
        let e = event("Checkpoint restored from gs://b/run/checkpoints/400 in 3 seconds.");
        assert_eq!((e.step, attr(&e, "seconds")), (Some(400), Some("3")));
        let e = event("Checkpoint restored from /ckpt/latest");
        assert_eq!(
            (e.kind, e.step, attr(&e, "seconds")),
            ("checkpoint_restored", None, None)
        );
        let e = event("Loading states from /out/checkpoints/checkpoint_7");
        assert_eq!(
            (e.kind, e.source, e.step),
            ("checkpoint_restored", source::HUGGINGFACE, Some(7))
        );
        // `in` followed by anything but a duration adds no `seconds`.
        let e = event("Checkpoint restored from /ckpt/x in bucket b");
        assert_eq!(attr(&e, "seconds"), None);
    }

    #[test]
    fn checkpoints() {
        let e = event("Saving model checkpoint to /data/out/checkpoint-10");
        assert_eq!(
            (e.kind, e.step, attr(&e, "path")),
            (
                "checkpoint_saved",
                Some(10),
                Some("/data/out/checkpoint-10")
            )
        );
        let e = event("Restoring checkpoint from gs://bucket/run/checkpoints/100.");
        assert_eq!(
            (e.kind, e.step, e.source),
            ("checkpoint_restored", Some(100), "maxtext")
        );
        assert_eq!(attr(&e, "path"), Some("gs://bucket/run/checkpoints/100"));
        let e = event("Resuming from checkpoint /data/out/checkpoint-20");
        assert_eq!((e.kind, e.step), ("checkpoint_restored", Some(20)));
        let e = event(
            "Finished saving the checkpoint (or staging if async is enabled)in 12.34 seconds.",
        );
        assert_eq!(attr(&e, "seconds"), Some("12.34"));
        assert!(
            one("Loading checkpoint shards: 100%|██████████| 2/2 [00:03<00:00,  1.52s/it]")
                .iter()
                .all(|f| matches!(f, Finding::Metric(_)))
        );
    }

    /// The XLA/TSL profiler's save line (the wording of `save_profile.cc`, as in
    /// `fixtures/samples/profiles/`), and the nsys list's helpers.
    #[test]
    fn profile_lines() {
        let e = event(
            "I0000 00:00:1770735834.933187   11530 save_profile.cc:150] Collecting XSpace to repository: gs://b/run/plugins/profile/2026_02_10_15_03_54/host-0.xplane.pb",
        );
        assert_eq!(
            (e.kind, e.source, attr(&e, "url"), attr(&e, "logdir")),
            (
                "profile_captured",
                source::XLA,
                Some("gs://b/run/plugins/profile/2026_02_10_15_03_54/host-0.xplane.pb"),
                Some("gs://b/run")
            )
        );
        assert!(one("Collecting XSpace to repository: ").is_empty());
        assert!(capture_began(
            "I0000 00:00:1770735803.260207   11530 profiler_session.cc:132] Profiler session started."
        ));
        assert!(capture_began("Collecting data..."));
        assert!(!capture_began("Profiler session collecting data."));
        assert_eq!(
            nsys_listed_file("    /home/u/report1.nsys-rep"),
            Some("/home/u/report1.nsys-rep")
        );
        assert_eq!(
            nsys_listed_file("[1/1] [========================100%] report1.nsys-rep"),
            None
        );
        assert_eq!(nsys_listed_file("    a b"), None);
        assert!(nsys_report("/home/u/report1.sqlite").is_none());
        let e = nsys_report("/home/u/report1.nsys-rep").unwrap();
        assert_eq!(
            (e.kind, attr(&e, "tool")),
            ("profile_captured", Some("nsight_systems"))
        );
    }

    #[test]
    fn a_custom_loops_progress_line_of_fields() {
        let got = |l: &str| -> Vec<(String, f64, Option<i64>)> {
            one(l)
                .into_iter()
                .filter_map(|f| match f {
                    Finding::Metric(m) => Some((m.metric, m.value, m.step)),
                    Finding::Event(_) => None,
                })
                .collect()
        };
        assert_eq!(
            got(
                "step     50 | epoch 0 | loss 7.8754 | lr 7.500e-06 | 0.914 s/it | 280.1 img/s/gpu | grad_norm 1.148"
            ),
            vec![
                ("train_loss".to_string(), 7.8754, Some(50)),
                ("step_time_seconds".to_string(), 0.914, Some(50)),
            ]
        );
        assert_eq!(
            got("step 3010 | loss 2.4698 | ppl 7.24 | tokens/s 52697"),
            vec![
                ("train_loss".to_string(), 2.4698, Some(3010)),
                ("tokens_per_second".to_string(), 52697.0, Some(3010)),
            ]
        );
        assert_eq!(got("step: 7 | 2.00 it/s")[0].1, 0.5);
        assert_eq!(
            got(
                "train.py:212 - step 4220/20000 | loss 2.3133 | lr 1.79e-05 | step_time 1.92s | tokens/s 68435"
            ),
            vec![
                ("train_loss".to_string(), 2.3133, Some(4220)),
                ("step_time_seconds".to_string(), 1.92, Some(4220)),
                ("tokens_per_second".to_string(), 68435.0, Some(4220)),
            ]
        );
        // No field it reads, or no step first: nothing.
        assert!(one("step 12 | epoch 0 | lr 1e-4").is_empty());
        assert!(one("epoch 1 | loss 0.3 | 0.9 s/it").is_empty());
    }

    #[test]
    fn a_file_system_failing_its_reader() {
        let e = event(
            "ReadFile: input/output error, fh.reader.ReadAt: readFull: Error in reading object in22k/train/shard-13387.tar: googleapi: Error 503: We encountered an internal error. Please try again., backendError",
        );
        assert_eq!((e.kind, attr(&e, "errno")), ("storage_error", Some("EIO")));
        let e = exception_event("OSError", "[Errno 116] Stale file handle");
        assert_eq!(e.kind, "storage_error");
        assert!(one("input and output errors were logged to stderr").is_empty());
    }

    #[test]
    fn evaluations_told_in_words() {
        let e = event("Running validation at step 1500 ...");
        assert_eq!((e.kind, e.step), ("eval_started", Some(1500)));
        assert_eq!(event("***** Running Evaluation *****").kind, "eval_started");
        let e = event("validation at step 1500 | val_loss 3.2914 | val_ppl 9.10 | took 93.8s");
        assert_eq!(
            (e.kind, e.step, attr(&e, "seconds")),
            ("eval_finished", Some(1500), Some("93.8"))
        );
        // No duration, or not an evaluation: nothing.
        assert!(one("validation at step 1500 | val_loss 3.2914").is_empty());
        assert!(one("running the data pipeline took 3s").is_empty());
        assert!(one("validation took 3 steps").is_empty());
    }

    #[test]
    fn elastic_agent() {
        let e = event(
            "INFO:torch.distributed.elastic.agent.server.api:[default] Worker group FAILED. 3/3 attempts left; will restart worker group",
        );
        assert_eq!(
            (e.kind, attr(&e, "attempts_left"), attr(&e, "max_restarts")),
            ("worker_group_restart", Some("3"), Some("3"))
        );
        assert_eq!(
            event("[default] Starting worker group").kind,
            "worker_group_started"
        );
        let e = event(
            "E1129 09:50:00.900000000 1 site-packages/torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 0 (pid: 231) of binary: /usr/bin/python3",
        );
        assert_eq!(
            (e.kind, attr(&e, "exitcode"), attr(&e, "local_rank")),
            ("worker_failed", Some("1"), Some("0"))
        );
        let e = event("Elastic attempt 2 out of 10");
        assert_eq!(
            (attr(&e, "attempt"), attr(&e, "max_attempts")),
            (Some("2"), Some("10"))
        );
    }

    #[test]
    fn recompiles_and_errors() {
        let e = event("torch._dynamo hit config.recompile_limit (8)");
        assert_eq!((e.kind, attr(&e, "limit")), ("recompile", Some("8")));
        let e = event("[__recompiles] Recompiling function forward in /app/model.py:41");
        assert_eq!(attr(&e, "function"), Some("forward"));
        let e = event(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity",
        );
        assert_eq!(
            (e.kind, attr(&e, "tried_to_allocate")),
            ("cuda_oom", Some("20.00 MiB"))
        );
        assert_eq!(
            event("RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219")
                .kind,
            "nccl_error"
        );
        let e = exception_event(
            "torch.OutOfMemoryError",
            "CUDA out of memory. Tried to allocate 2.00 GiB.",
        );
        assert_eq!(
            (e.kind, attr(&e, "tried_to_allocate")),
            ("cuda_oom", Some("2.00 GiB"))
        );
        assert_eq!(exception_event("KeyError", "'x'").kind, "exception");
    }

    #[test]
    fn step_metrics() {
        let v = one(
            "completed step: 9, seconds: 5.667, TFLOP/s/device: 134.924, Tokens/s/device: 8672.758, total_weights: 196608, loss: 10.374",
        );
        assert_eq!(v.len(), 5);
        let Finding::Metric(m) = &v[0] else { panic!() };
        assert_eq!(
            (m.metric.as_str(), m.value, m.step),
            ("step_time_seconds", 5.667, Some(9))
        );
        let v = one(
            "step: 20  loss: 11.83506  grad_norm:  9.6669  memory: 48.87GiB(51.44%)  tps: 4,376  tflops: 253.41  mfu: 25.62%",
        );
        let tps = v.iter().find_map(|f| match f {
            Finding::Metric(m) if m.metric == "tokens_per_second" => Some(m.value),
            _ => None,
        });
        assert_eq!(tps, Some(4376.0));
        assert_eq!(v.len(), 6);
        let v = one("{'loss': 1.2345, 'grad_norm': 0.5, 'learning_rate': 2e-05, 'epoch': 0.5}");
        let Finding::Metric(m) = &v[0] else { panic!() };
        assert_eq!((m.metric.as_str(), m.value), ("train_loss", 1.2345));
        assert_eq!(v.len(), 4);
        let v = one(
            "{'train_runtime': 165.12, 'train_samples_per_second': 0.484, 'train_loss': 5.76, 'epoch': 1.0}",
        );
        assert!(
            matches!(v.last(), Some(Finding::Event(e)) if e.kind == "run_finished"
            && e.get("epoch") == Some("1.0"))
        );
        assert!(
            !v.iter()
                .any(|f| matches!(f, Finding::Metric(m) if m.metric == "epoch")),
            "the summary's epoch is not progress"
        );
        let v = one(" 20%|██        | 2/10 [00:00<00:03,  2.54it/s]");
        let Finding::Metric(m) = &v[0] else { panic!() };
        assert_eq!((m.step, (m.value * 1000.0).round()), (Some(2), 394.0));
        assert!(one("Map: 100%|██████████| 80/80 [00:00<00:00, 1361.10 examples/s]").is_empty());
        assert!(one("Nothing to see here").is_empty());
    }

    // Megatron-LM's own wording (`megatron/training/training.py`'s `training_log`,
    // `megatron/training/checkpointing.py`), as its last rank prints it.
    #[test]
    fn megatron_iterations_and_checkpoints_deepspeed_save_ends_maxtext_evals() {
        let v = one(
            " [2026-11-21 06:05:21] iteration       10/   40000 | consumed samples:         3840 | elapsed time per iteration (ms): 2686.6 | throughput per GPU (TFLOP/s/GPU): 119.0 | learning rate: 1.000000E-06 | global batch size:   384 | lm loss: 2.988103E+00 | loss scale: 1.0 | grad norm: 0.888 | number of skipped iterations:   0 | number of nan iterations:   0 |",
        );
        let got: Vec<(&str, f64, Option<i64>)> = v
            .iter()
            .filter_map(|f| match f {
                Finding::Metric(m) => Some((m.metric.as_str(), m.value, m.step)),
                Finding::Event(_) => None,
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("step_time_seconds", 2.6866, Some(10)),
                ("train_loss", 2.988103, Some(10)),
                ("tflops_per_second", 119.0, Some(10)),
            ]
        );
        let e = event(
            "saving checkpoint at iteration     500 to /mnt/azureblob/ckpt/gptneox-6b-sft in torch_dist format",
        );
        assert_eq!(
            (e.kind, e.step, attr(&e, "path"), e.source),
            (
                "checkpoint_saved",
                Some(500),
                Some("/mnt/azureblob/ckpt/gptneox-6b-sft"),
                source::MEGATRON
            )
        );
        let e = event(
            "  successfully saved checkpoint from iteration     500 to /mnt/azureblob/ckpt/gptneox-6b-sft [ t 1/1, p 1/1 ]",
        );
        assert_eq!((e.kind, e.step), ("checkpoint_save_done", Some(500)));
        let e =
            event(" loading checkpoint from /mnt/azureblob/ckpt/gptneox-6b-sft at iteration 2000");
        assert_eq!(
            (e.kind, e.step, attr(&e, "path")),
            (
                "checkpoint_restored",
                Some(2000),
                Some("/mnt/azureblob/ckpt/gptneox-6b-sft")
            )
        );
        let e = event(
            "[2026-12-04 10:12:02,513] [INFO] [torch_checkpoint_engine.py:33:commit] [Torch] Checkpoint global_step4000 is ready now!",
        );
        assert_eq!(
            (e.kind, e.step, e.source),
            ("checkpoint_save_done", Some(4000), source::DEEPSPEED)
        );
        let e = event("eval metrics after step: 999, loss=2.246, total_weights=412032");
        assert_eq!(
            (e.kind, e.step, attr(&e, "loss")),
            ("eval_finished", Some(999), Some("2.246"))
        );
        // The restore's end, the timers and the iteration's other words are not findings.
        for l in [
            "  successfully loaded checkpoint from /mnt/ckpt [ t 1/1, p 1/1 ] at iteration 2000",
            "    save-checkpoint ................................: (36282.89, 36302.89)",
            "[before the start of training step] datetime: 2026-11-21 08:01:59 ",
        ] {
            assert!(one(l).is_empty(), "{l}");
        }
    }
}

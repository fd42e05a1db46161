//! `--on-incident CMD`: runs a user's command with an incident's JSON on stdin, on a
//! thread of its own, so a slow or failing command never holds up ingest or analysis.
//! `CMD` is a shell command (`sh -c`), or a JSON array of arguments run as they are
//! (`["/hook", "--page"]`, the exec form of a Dockerfile's CMD: no shell needed, as in a
//! distroless image). The command runs in a process group of its own; its timeout covers
//! writing its input, and on timeout the whole group (and whatever it started) is killed.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tracing::{info, warn};

/// Incidents waiting for the command beyond this many are dropped (and logged).
const QUEUE: usize = 256;

/// One run of the command.
#[derive(Debug, Clone)]
pub struct HookCall {
    pub incident_id: String,
    pub status: String,
    pub cause: String,
    pub json: String,
}

/// Runs the command for each call, one at a time, in order.
pub struct HookRunner {
    tx: Option<SyncSender<HookCall>>,
    thread: Option<JoinHandle<()>>,
}

impl HookRunner {
    /// Starts the runner for `command` (see the module's doc for its two forms); each run
    /// may take up to `timeout` before it is killed.
    pub fn start(command: String, timeout: Duration) -> HookRunner {
        let (tx, rx) = mpsc::sync_channel(QUEUE);
        let thread = std::thread::Builder::new()
            .name("on-incident".into())
            .spawn(move || serve(&command, timeout, rx))
            .ok();
        if thread.is_none() {
            warn!("Could not start the --on-incident thread; the command will not run.");
        }
        HookRunner {
            tx: Some(tx),
            thread,
        }
    }

    /// Queues a run; never blocks.
    pub fn call(&self, call: HookCall) {
        let Some(tx) = &self.tx else { return };
        match tx.try_send(call) {
            Ok(()) => {}
            Err(TrySendError::Full(c)) => warn!(
                incident = %c.incident_id,
                "The --on-incident command is {QUEUE} incidents behind; this one is skipped."
            ),
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    /// Waits for the queued runs to finish.
    pub fn finish(&mut self) {
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for HookRunner {
    fn drop(&mut self) {
        self.finish();
    }
}

fn serve(command: &str, timeout: Duration, rx: Receiver<HookCall>) {
    for call in rx {
        match run_once(command, &call, timeout) {
            Ok(()) => info!(incident = %call.incident_id, "--on-incident command done."),
            Err(why) => warn!(
                incident = %call.incident_id,
                "The --on-incident command failed: {why}."
            ),
        }
    }
}

/// An `--on-incident` command that cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum BadCommand {
    /// It starts like a JSON array but is not one of strings.
    #[error("--on-incident '{command}' is not a JSON array of strings ({source})")]
    NotArray {
        command: String,
        #[source]
        source: serde_json::Error,
    },
    /// The array is empty or its program is.
    #[error("--on-incident '{command}' names no program")]
    NoProgram { command: String },
}

/// The program and arguments of `command`: a JSON array as it is, else `sh -c command`.
pub fn argv(command: &str) -> Result<Vec<String>, BadCommand> {
    if command.trim_start().starts_with('[') {
        let argv: Vec<String> =
            serde_json::from_str(command).map_err(|source| BadCommand::NotArray {
                command: command.to_string(),
                source,
            })?;
        if argv.first().is_none_or(|p| p.is_empty()) {
            return Err(BadCommand::NoProgram {
                command: command.to_string(),
            });
        }
        return Ok(argv);
    }
    Ok(vec!["sh".into(), "-c".into(), command.to_string()])
}

/// Runs the command once with the incident on stdin; the error says what went wrong.
fn run_once(command: &str, call: &HookCall, timeout: Duration) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    let argv = argv(command).map_err(|e| e.to_string())?;
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .env("WHYSLOW_INCIDENT_ID", &call.incident_id)
        .env("WHYSLOW_INCIDENT_STATUS", &call.status)
        .env("WHYSLOW_INCIDENT_CAUSE", &call.cause)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        // A group of its own (its id is the child's pid), killed whole on timeout.
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start `{}`: {e}", argv.join(" ")))?;
    // The input is written on a thread of its own, inside the timeout: a command that
    // never reads a large input cannot hold the runner before its clock starts.
    let writer = child.stdin.take().map(|mut stdin| {
        let json = call.json.clone();
        std::thread::spawn(move || {
            // A command that does not read its input is not an error.
            let _ = stdin.write_all(json.as_bytes());
            let _ = stdin.write_all(b"\n");
        })
    });
    let result = loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break Ok(()),
            Ok(Some(status)) => break Err(format!("it exited with {status}")),
            Ok(None) if Instant::now() >= deadline => {
                kill_group(child.id());
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!("it ran longer than {timeout:?} and was killed"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => break Err(format!("waiting for it failed: {e}")),
        }
    };
    if let Some(w) = writer {
        // The command exited or its group was killed: the pipe is closed (or drained),
        // so the write has ended or fails now. A child it left running that keeps the
        // pipe open without reading cannot hold us: we do not wait on the writer then.
        if w.is_finished() || result.is_err() {
            let _ = w.join();
        }
    }
    result
}

/// Kills every process of the group `pgid` (`kill -KILL -- -PGID`), with no `kill`
/// program needed.
fn kill_group(pgid: u32) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    // SAFETY: kill(2) takes plain integers and touches no memory of ours; a negative pid
    // names the process group the child leads (created with `process_group(0)`).
    let killed = unsafe { libc::kill(-pgid, libc::SIGKILL) };
    if killed != 0 {
        warn!(
            "Could not kill the --on-incident command's process group {pgid}: {}.",
            std::io::Error::last_os_error()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> HookCall {
        HookCall {
            incident_id: id.into(),
            status: "opened".into(),
            cause: "orchestrator.preemption".into(),
            json: format!("{{\"incident_id\":\"{id}\"}}"),
        }
    }

    #[test]
    fn the_command_gets_the_json_on_stdin_and_the_ids_in_its_environment() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("got");
        let cmd = format!(
            "cat >> {p}; echo \"$WHYSLOW_INCIDENT_STATUS $WHYSLOW_INCIDENT_CAUSE\" >> {p}",
            p = out.display()
        );
        let mut h = HookRunner::start(cmd, Duration::from_secs(10));
        h.call(call("a"));
        h.call(call("b"));
        h.finish();
        let got = std::fs::read_to_string(&out).unwrap();
        assert_eq!(
            got,
            "{\"incident_id\":\"a\"}\nopened orchestrator.preemption\n\
             {\"incident_id\":\"b\"}\nopened orchestrator.preemption\n"
        );
    }

    /// The exec form runs its program directly (no shell): here `tee`, which writes the
    /// incident to the file it is given.
    #[test]
    fn a_json_array_runs_without_a_shell() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("got");
        let cmd = serde_json::to_string(&["tee", out.to_str().unwrap()]).unwrap();
        assert_eq!(argv(&cmd).unwrap()[0], "tee");
        run_once(&cmd, &call("a"), Duration::from_secs(10)).unwrap();
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "{\"incident_id\":\"a\"}\n"
        );
        assert!(argv("[\"\"]").is_err());
        assert!(argv("[1, 2]").is_err());
        assert_eq!(argv("echo hi").unwrap(), ["sh", "-c", "echo hi"]);
    }

    #[test]
    fn failures_and_hangs_are_reported_not_fatal() {
        assert!(
            run_once("exit 3", &call("a"), Duration::from_secs(5))
                .unwrap_err()
                .contains("exit status: 3")
        );
        let started = Instant::now();
        let e = run_once("sleep 30", &call("a"), Duration::from_millis(200)).unwrap_err();
        assert!(e.contains("killed"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    /// The timeout kills what `sh` started too, and covers writing the input: a
    /// command that never reads a 1 MiB incident is killed on time.
    #[test]
    fn the_timeout_kills_the_whole_group_and_covers_stdin() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let cmd = format!("sleep 30 & echo $! > {}; wait", pidfile.display());
        let e = run_once(&cmd, &call("a"), Duration::from_millis(500)).unwrap_err();
        assert!(e.contains("killed"), "{e}");
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        let pid = pid.trim();
        // The background `sleep` is gone (killed with its group).
        let deadline = Instant::now() + Duration::from_secs(5);
        while std::path::Path::new(&format!("/proc/{pid}")).exists()
            && std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| !s.contains(") Z "))
        {
            assert!(
                Instant::now() < deadline,
                "sleep {pid} outlived the timeout"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut big = call("b");
        big.json = "x".repeat(1024 * 1024);
        let started = Instant::now();
        let e = run_once("sleep 30", &big, Duration::from_millis(300)).unwrap_err();
        assert!(e.contains("killed"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}

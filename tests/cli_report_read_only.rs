//! `whyslow report` on a store it cannot write (a read-only mount, a snapshot): the
//! report is printed in full and exits 0; asked to save its verdicts into the store's
//! `slowdowns`/`causes` tables (`--persist`), the one thing it could not do is said on
//! stderr.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

fn whyslow(store: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_whyslow"));
    c.arg("--store").arg(store).env_remove("WHYSLOW_STORE");
    c
}

/// A read-only view of `dir`: a read-only bind mount where the process may mount (root
/// on a Linux machine), otherwise `dir` itself with its write bits cleared (enough for a
/// user that is not root). `None` when neither makes it unwritable.
struct ReadOnly {
    path: PathBuf,
    mounted: bool,
}

impl ReadOnly {
    fn of(dir: &Path, scratch: &Path) -> Option<ReadOnly> {
        let mnt = scratch.join("ro");
        std::fs::create_dir_all(&mnt).ok()?;
        let mount = |args: &[&str]| {
            Command::new("mount")
                .args(args)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        let (src, dst) = (dir.to_str()?, mnt.to_str()?);
        let ro = if mount(&["--bind", src, dst]) {
            if mount(&["-o", "remount,bind,ro", dst]) {
                ReadOnly {
                    path: mnt,
                    mounted: true,
                }
            } else {
                let _ = Command::new("umount").arg(dst).status();
                return None;
            }
        } else {
            let _ = Command::new("chmod").args(["-R", "a-w", src]).status();
            ReadOnly {
                path: dir.to_path_buf(),
                mounted: false,
            }
        };
        // Only a store that really refuses a write tests anything.
        let probe = ro.path.join("probe");
        if std::fs::write(&probe, b"x").is_ok() {
            let _ = std::fs::remove_file(&probe);
            return None;
        }
        Some(ro)
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Command::new("umount").arg(&self.path).status();
        } else {
            let _ = Command::new("chmod")
                .args(["-R", "u+w"])
                .arg(&self.path)
                .status();
        }
    }
}

#[test]
fn a_read_only_store_gets_its_report_and_says_it_was_not_saved() {
    let scratch = tempfile::tempdir().unwrap();
    let store = scratch.path().join("store");
    let inputs = support::scenario_inputs("seed-preemption");
    let ingest = whyslow(&store)
        .arg("ingest")
        .args(&inputs)
        .output()
        .unwrap();
    assert!(ingest.status.success(), "{ingest:?}");
    // The same report from the writable store, for comparison (its verdicts not saved).
    let writable = whyslow(&store)
        .args(["report", "--format", "json"])
        .output()
        .unwrap();
    assert!(writable.status.success(), "{writable:?}");

    let Some(ro) = ReadOnly::of(&store, scratch.path()) else {
        // Root without the right to mount (a container without CAP_SYS_ADMIN) can write
        // anywhere: no read-only store can be made there, so there is nothing to test.
        eprintln!("skipped: this machine can make no read-only directory for root");
        return;
    };
    // A plain report only reads: nothing to say.
    let plain = whyslow(&ro.path)
        .args(["report", "--format", "json"])
        .output()
        .unwrap();
    assert!(plain.status.success(), "{plain:?}");
    assert!(plain.stderr.is_empty(), "{plain:?}");
    let out = whyslow(&ro.path)
        .args(["report", "--persist", "--format", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit {:?}: {stderr}", out.status);
    assert!(
        stderr.contains("is read-only") && stderr.contains("not updated"),
        "stderr: {stderr}"
    );
    let report = |b: &[u8]| -> serde_json::Value {
        let mut v: serde_json::Value = serde_json::from_slice(b).expect("report JSON");
        // The report names its store and the time it was made.
        for k in ["store", "generated_at"] {
            if let Some(o) = v.as_object_mut() {
                o.remove(k);
            }
        }
        v
    };
    let (ro_report, rw_report) = (report(&out.stdout), report(&writable.stdout));
    assert!(
        !ro_report["slowdowns"].as_array().unwrap().is_empty(),
        "the seed scenario's slowdowns are in the report"
    );
    assert_eq!(ro_report, rw_report);
}

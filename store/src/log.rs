//! The commit log that decides what is visible: numbered JSON entries (segments added and
//! removed, Kafka offsets) plus periodic checkpoints of the whole state.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use whyslow_schemas::Table;

use super::{SegmentInfo, StoreError, fsio};

/// The log directory under the root.
pub const LOG_DIR: &str = "_log";
const CHECKPOINT_SUFFIX: &str = ".checkpoint.json";
const ENTRY_SUFFIX: &str = ".json";

/// The next offset to read from one Kafka topic partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct KafkaOffset {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The offset of the first message not yet stored.
    pub next_offset: i64,
}

/// A segment as the log records it (paths relative to the root).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentEntry {
    /// The table name.
    pub table: String,
    /// Parquet file, relative to the root.
    pub path: String,
    /// Row-identity file, relative to the root.
    pub keys_path: String,
    /// `YYYY-MM-DD` of the partition, if the table has a time column.
    pub partition: Option<String>,
    pub rows: u64,
    pub bytes: u64,
    pub keys_bytes: u64,
    pub min_time_ns: Option<i64>,
    pub max_time_ns: Option<i64>,
    /// Smallest and largest leading key component in the key file (for dedupe pruning).
    pub key_min: i64,
    pub key_max: i64,
}

impl SegmentEntry {
    /// The public description, with absolute paths.
    pub fn info(&self, root: &Path, table: Table) -> SegmentInfo {
        SegmentInfo {
            path: root.join(&self.path),
            table,
            rows: self.rows,
            bytes: self.bytes,
            min_time_ns: self.min_time_ns,
            max_time_ns: self.max_time_ns,
            partition: self.partition.clone(),
            keys_path: root.join(&self.keys_path),
            keys_bytes: self.keys_bytes,
        }
    }
}

/// Files removed from the visible state, kept on disk until readers can no longer need them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tombstone {
    /// Relative path of the removed file.
    pub path: String,
    /// When the removal was committed (ms since the epoch).
    pub removed_ms: i64,
}

/// One log entry: what one commit changed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Entry {
    pub version: u64,
    pub timestamp_ms: i64,
    /// `commit`, `compact` or `replace`.
    pub operation: String,
    #[serde(default)]
    pub add: Vec<SegmentEntry>,
    /// Relative paths of the Parquet files no longer visible.
    #[serde(default)]
    pub remove: Vec<String>,
    #[serde(default)]
    pub offsets: Vec<KafkaOffset>,
}

/// The whole visible state, as stored in a checkpoint.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Checkpoint {
    version: u64,
    segments: Vec<SegmentEntry>,
    offsets: Vec<KafkaOffset>,
    tombstones: Vec<Tombstone>,
}

/// The visible state at one version.
#[derive(Debug, Clone, Default)]
pub struct State {
    pub version: u64,
    /// Live segments per table, in the order they were added.
    pub segments: BTreeMap<Table, Vec<SegmentEntry>>,
    pub offsets: BTreeMap<(String, i32), i64>,
    pub tombstones: Vec<Tombstone>,
    /// Version of the newest checkpoint read or written.
    pub checkpoint_version: u64,
}

fn entry_name(version: u64) -> String {
    format!("{version:020}{ENTRY_SUFFIX}")
}

fn checkpoint_name(version: u64) -> String {
    format!("{version:020}{CHECKPOINT_SUFFIX}")
}

/// Log files found in the log directory.
#[derive(Default)]
struct Listing {
    entries: BTreeMap<u64, PathBuf>,
    checkpoints: BTreeMap<u64, PathBuf>,
}

fn list(log_dir: &Path) -> Result<Listing, StoreError> {
    let mut out = Listing::default();
    let rd = match fs::read_dir(log_dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(StoreError::io("list", log_dir, e)),
    };
    for item in rd {
        let item = item.map_err(|e| StoreError::io("list", log_dir, e))?;
        let name = item.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(v) = name.strip_suffix(CHECKPOINT_SUFFIX).and_then(parse_version) {
            out.checkpoints.insert(v, item.path());
        } else if let Some(v) = name.strip_suffix(ENTRY_SUFFIX).and_then(parse_version) {
            out.entries.insert(v, item.path());
        }
    }
    Ok(out)
}

fn parse_version(s: &str) -> Option<u64> {
    if s.len() == 20 && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}

/// Whether a path from the log stays inside the store: relative, and made of plain
/// names only (no root, drive, `.` or `..`). A tampered entry naming `/etc/x` or
/// `../other/x` would otherwise be read by SQL and later deleted by vacuum.
pub fn is_inside_store(rel: &str) -> bool {
    use std::path::Component;
    !rel.is_empty()
        && !rel.contains('\\')
        && Path::new(rel)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
}

/// Refuses a log file (`log_path`) that names a path outside the store.
fn check_inside(rel: &str, log_path: &Path, what: &'static str) -> Result<(), StoreError> {
    if is_inside_store(rel) {
        return Ok(());
    }
    Err(StoreError::Corrupt {
        what,
        path: log_path.to_path_buf(),
        detail: format!("names the path '{rel}', which is not inside the store"),
    })
}

fn read_json<T: for<'de> Deserialize<'de>>(
    path: &Path,
    what: &'static str,
) -> Result<T, StoreError> {
    let bytes = fs::read(path).map_err(|e| StoreError::io("read", path, e))?;
    serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
        what,
        path: path.to_path_buf(),
        detail: e.to_string(),
    })
}

impl State {
    /// Replays the log of the store at `root` (a missing log is the empty state).
    pub fn load(root: &Path) -> Result<State, StoreError> {
        let log_dir = root.join(LOG_DIR);
        let listing = list(&log_dir)?;
        let mut state = State::default();
        // Newest readable checkpoint; checkpoints are published atomically, so an unreadable
        // one is damage, and an older checkpoint plus the entries after it still work.
        let mut last_err = None;
        for (&v, path) in listing.checkpoints.iter().rev() {
            match read_json::<Checkpoint>(path, "checkpoint")
                .and_then(|cp| State::from_checkpoint(cp, path))
            {
                Ok(cp) if cp.version == v => {
                    state = cp;
                    last_err = None;
                    break;
                }
                Ok(cp) => {
                    last_err = Some(StoreError::Corrupt {
                        what: "checkpoint",
                        path: path.clone(),
                        detail: format!("says version {} but is named {v}", cp.version),
                    })
                }
                Err(e) => last_err = Some(e),
            }
        }
        if let Some(e) = last_err {
            // No checkpoint was readable: only a complete log from version 1 can stand in.
            if !listing.entries.contains_key(&1) {
                return Err(e);
            }
        }
        let mut next = state.version + 1;
        if let Some((&first, _)) = listing.entries.range(next..).next()
            && first != next
        {
            return Err(StoreError::Corrupt {
                what: "log",
                path: log_dir,
                detail: format!("entry {next} is missing but entry {first} exists"),
            });
        }
        while let Some(path) = listing.entries.get(&next) {
            let entry: Entry = read_json(path, "log entry")?;
            if entry.version != next {
                return Err(StoreError::Corrupt {
                    what: "log entry",
                    path: path.clone(),
                    detail: format!("says version {} but is named {next}", entry.version),
                });
            }
            state.apply(&entry, path)?;
            next += 1;
        }
        Ok(state)
    }

    fn from_checkpoint(cp: Checkpoint, path: &Path) -> Result<State, StoreError> {
        let mut segments: BTreeMap<Table, Vec<SegmentEntry>> = BTreeMap::new();
        for s in &cp.segments {
            check_inside(&s.path, path, "checkpoint")?;
            check_inside(&s.keys_path, path, "checkpoint")?;
        }
        for t in &cp.tombstones {
            check_inside(&t.path, path, "checkpoint")?;
        }
        for s in cp.segments {
            if let Ok(t) = s.table.parse::<Table>() {
                segments.entry(t).or_default().push(s);
            }
        }
        Ok(State {
            version: cp.version,
            segments,
            offsets: cp
                .offsets
                .into_iter()
                .map(|o| ((o.topic, o.partition), o.next_offset))
                .collect(),
            tombstones: cp.tombstones,
            checkpoint_version: cp.version,
        })
    }

    /// Applies one entry (`path` names it in errors).
    pub fn apply(&mut self, entry: &Entry, path: &Path) -> Result<(), StoreError> {
        for s in &entry.add {
            check_inside(&s.path, path, "log entry")?;
            check_inside(&s.keys_path, path, "log entry")?;
        }
        for rel in &entry.remove {
            let mut found = None;
            for (t, segs) in self.segments.iter_mut() {
                if let Some(i) = segs.iter().position(|s| &s.path == rel) {
                    found = Some(segs.remove(i));
                    let _ = t;
                    break;
                }
            }
            if let Some(seg) = found {
                for p in [seg.path, seg.keys_path] {
                    self.tombstones.push(Tombstone {
                        path: p,
                        removed_ms: entry.timestamp_ms,
                    });
                }
            }
        }
        for s in &entry.add {
            let t: Table = s.table.parse().map_err(|e| StoreError::Corrupt {
                what: "log entry",
                path: path.to_path_buf(),
                detail: format!("{e}"),
            })?;
            self.segments.entry(t).or_default().push(s.clone());
        }
        for o in &entry.offsets {
            self.offsets
                .insert((o.topic.clone(), o.partition), o.next_offset);
        }
        self.version = entry.version;
        Ok(())
    }

    /// The live segments of `table`, oldest first.
    pub fn segments_of(&self, table: Table) -> impl Iterator<Item = &SegmentEntry> {
        self.segments.get(&table).into_iter().flatten()
    }

    /// Writes `entry` (whose version must be `self.version + 1`) durably as the next log
    /// file, then applies it.
    pub fn commit(&mut self, root: &Path, entry: &Entry) -> Result<(), StoreError> {
        let log_dir = root.join(LOG_DIR);
        fsio::create_dir_durable(&log_dir)?;
        let final_path = log_dir.join(entry_name(entry.version));
        let tmp = log_dir.join(format!(".tmp-{}", entry_name(entry.version)));
        let bytes = serde_json::to_vec(entry).map_err(|e| StoreError::Corrupt {
            what: "log entry",
            path: final_path.clone(),
            detail: format!("cannot serialize: {e}"),
        })?;
        fsio::write_synced(&tmp, &bytes)?;
        fsio::link_new(&tmp, &final_path)?;
        // Published: the state moves on even if the clean-up below fails.
        self.apply(entry, &final_path)?;
        fsio::remove_if_exists(&tmp)?;
        fsio::sync_dir(&log_dir)
    }

    /// Writes a checkpoint of the current state, then deletes log files older than the
    /// previous checkpoint (readers that listed the log before this one still find theirs).
    pub fn checkpoint(&mut self, root: &Path) -> Result<(), StoreError> {
        let log_dir = root.join(LOG_DIR);
        let cp = Checkpoint {
            version: self.version,
            segments: self.segments.values().flatten().cloned().collect(),
            offsets: self
                .offsets
                .iter()
                .map(|((topic, partition), &next_offset)| KafkaOffset {
                    topic: topic.clone(),
                    partition: *partition,
                    next_offset,
                })
                .collect(),
            tombstones: self.tombstones.clone(),
        };
        let final_path = log_dir.join(checkpoint_name(self.version));
        let tmp = log_dir.join(format!(".tmp-{}", checkpoint_name(self.version)));
        let bytes = serde_json::to_vec(&cp).map_err(|e| StoreError::Corrupt {
            what: "checkpoint",
            path: final_path.clone(),
            detail: format!("cannot serialize: {e}"),
        })?;
        fsio::write_synced(&tmp, &bytes)?;
        fsio::rename_durable(&tmp, &final_path)?;
        let previous = self.checkpoint_version;
        self.checkpoint_version = self.version;
        let listing = list(&log_dir)?;
        for (&v, p) in listing.entries.iter().chain(listing.checkpoints.iter()) {
            if v < previous {
                fsio::remove_if_exists(p)?;
            }
        }
        Ok(())
    }

    /// Every file the state still references (live segments and tombstones), relative.
    pub fn referenced_files(&self) -> std::collections::HashSet<String> {
        let mut out = std::collections::HashSet::new();
        for s in self.segments.values().flatten() {
            out.insert(s.path.clone());
            out.insert(s.keys_path.clone());
        }
        for t in &self.tombstones {
            out.insert(t.path.clone());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(path: &str, keys_path: &str) -> SegmentEntry {
        SegmentEntry {
            table: "events".into(),
            path: path.into(),
            keys_path: keys_path.into(),
            partition: None,
            rows: 1,
            bytes: 1,
            keys_bytes: 1,
            min_time_ns: None,
            max_time_ns: None,
            key_min: 0,
            key_max: 0,
        }
    }

    #[test]
    fn paths_must_stay_inside_the_store() {
        for ok in ["events/date=2026-11-29/a.parquet", "a.keys"] {
            assert!(is_inside_store(ok), "{ok}");
        }
        for bad in [
            "",
            "/etc/passwd",
            "../other/events/a.parquet",
            "events/../../x",
            "./events/a.parquet",
            "events\\..\\..\\x",
        ] {
            assert!(!is_inside_store(bad), "{bad}");
        }
    }

    /// A tampered log entry (or checkpoint) naming a path outside the store is refused
    /// as corrupt, naming the file, instead of being read and later vacuumed.
    #[test]
    fn a_tampered_entry_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let log_dir = dir.path().join(LOG_DIR);
        fs::create_dir_all(&log_dir).unwrap();
        let entry = Entry {
            version: 1,
            timestamp_ms: 0,
            operation: "commit".into(),
            add: vec![segment("../../etc/passwd", "events/a.keys")],
            ..Entry::default()
        };
        fs::write(
            log_dir.join(entry_name(1)),
            serde_json::to_vec(&entry).unwrap(),
        )
        .unwrap();
        let e = State::load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("not inside the store"), "{e}");
        let cp = Checkpoint {
            version: 1,
            segments: vec![segment("events/a.parquet", "/tmp/a.keys")],
            ..Checkpoint::default()
        };
        // Only the checkpoint: no complete log from version 1 stands in for it.
        fs::remove_file(log_dir.join(entry_name(1))).unwrap();
        fs::write(
            log_dir.join(checkpoint_name(1)),
            serde_json::to_vec(&cp).unwrap(),
        )
        .unwrap();
        let e = State::load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("not inside the store"), "{e}");
    }
}

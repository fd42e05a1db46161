//! What a store holds, read from its tables' Delta logs (live segments, files removed but
//! kept for readers, Kafka offsets), and how one change of the writer becomes Delta
//! commits: one per table it touches, ordered so that a crash between two of them leaves
//! nothing a re-run does not put right.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use deltalake_core::DeltaTable;
use deltalake_core::kernel::Transaction;
use futures::TryStreamExt;
use whyslow_schemas::Table;

use super::delta::{self, Change};
use super::location::Root;
use super::{SegmentInfo, StoreError};

/// The directory of the commit log of stores written before the tables became Delta
/// tables; a root holding it is refused.
pub const OLD_LOG_DIR: &str = "_log";

/// The table whose commits carry the Kafka offsets. Rows of other tables are committed
/// before it, so offsets never run ahead of the rows they produced.
pub const ANCHOR: Table = Table::Events;

/// The next offset to read from one Kafka topic partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KafkaOffset {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The offset of the first message not yet stored.
    pub next_offset: i64,
}

/// A segment as the store tracks it (paths relative to the root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentEntry {
    /// The table whose rows it holds.
    pub table: Table,
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
    pub fn info(&self, root: &Path) -> SegmentInfo {
        SegmentInfo {
            path: root.join(&self.path),
            table: self.table,
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

/// A file removed from the visible state, kept on disk until readers can no longer need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tombstone {
    /// Relative path of the removed file.
    pub path: String,
    /// When the removal was committed (ms since the epoch).
    pub removed_ms: i64,
}

/// What the writer commits at once: segments added and removed over any tables, and the
/// Kafka offsets that the added rows bring the store to.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Whether removed segments are compacted (same rows) or replaced.
    pub compaction: bool,
    pub add: Vec<SegmentEntry>,
    /// Relative paths of the Parquet files no longer visible.
    pub remove: Vec<String>,
    pub offsets: Vec<KafkaOffset>,
}

impl Entry {
    /// An empty change; `compaction` when its removals only regroup rows.
    pub fn new(compaction: bool) -> Entry {
        Entry {
            compaction,
            add: Vec::new(),
            remove: Vec::new(),
            offsets: Vec::new(),
        }
    }
}

/// The visible state of every table.
#[derive(Debug, Clone, Default)]
pub struct State {
    /// Each table's Delta table at the loaded version (tables not created yet are absent).
    deltas: BTreeMap<Table, DeltaTable>,
    /// Live segments per table, in the order the log lists them.
    pub segments: BTreeMap<Table, Vec<SegmentEntry>>,
    pub offsets: BTreeMap<(String, i32), i64>,
    /// Removed files still on disk (only loaded for a writer).
    pub tombstones: Vec<Tombstone>,
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

impl State {
    /// Reads every table's Delta log under `root` (a table without one is empty), with
    /// the tombstones when `tombstones` (a writer vacuums them; readers need not read them).
    pub fn load(root: &Root, tombstones: bool) -> Result<State, StoreError> {
        if let Root::Local(dir) = root
            && dir.join(OLD_LOG_DIR).is_dir()
        {
            return Err(StoreError::OldLayout {
                path: dir.to_path_buf(),
                detail: format!(
                    "it has a `{OLD_LOG_DIR}/` commit log, the layout before Delta tables"
                ),
            });
        }
        let mut state = State::default();
        for table in Table::ALL {
            let dir = delta::table_dir(root, table);
            let err = |e| delta::error(&dir, e);
            let table_state = delta::block_on(async {
                if !delta::is_table(root, table).await? {
                    return Ok(None);
                }
                let delta = delta::load_table(root, table, true).await.map_err(err)?;
                if delta.version().is_none() {
                    return Ok(None);
                }
                let (segments, offsets) = table_view(table, &dir, &delta).await?;
                let mut removed = Vec::new();
                if tombstones {
                    let snapshot = delta.snapshot().map_err(err)?;
                    let mut stream = snapshot.all_tombstones(delta.log_store().as_ref());
                    while let Some(t) = stream.try_next().await.map_err(err)? {
                        removed.push((t.path().into_owned(), t.deletion_timestamp()));
                    }
                }
                Ok::<_, StoreError>(Some((delta, segments, removed, offsets)))
            })??;
            let Some((delta, segments, removed, offsets)) = table_state else {
                continue;
            };
            delta::check_schema(table, &dir, &delta)?;
            for (path, removed_ms) in removed {
                state.tombstone(table, &path, removed_ms.unwrap_or(0));
            }
            State::extend_offsets(&mut state.offsets, offsets);
            state.segments.insert(table, segments);
            state.deltas.insert(table, delta);
        }
        Ok(state)
    }

    /// Brings every loaded table to its newest version by reading only the commits made
    /// since (other writers' in a bucket): live segments and offsets follow; tombstones
    /// of other writers are not collected (a full load does). Tables not loaded yet are
    /// loaded or created at this writer's first commit to them.
    pub fn refresh(&mut self, root: &Root) -> Result<(), StoreError> {
        for (table, delta) in self.deltas.iter_mut() {
            let table = *table;
            let dir = delta::table_dir(root, table);
            let err = |e| delta::error(&dir, e);
            let before = delta.version();
            let fresh = delta::block_on(async {
                delta.update_incremental(None).await.map_err(err)?;
                if delta.version() == before {
                    return Ok(None);
                }
                table_view(table, &dir, delta).await.map(Some)
            })??;
            if let Some((segments, offsets)) = fresh {
                self.segments.insert(table, segments);
                Self::extend_offsets(&mut self.offsets, offsets);
            }
        }
        Ok(())
    }

    /// Adds the Kafka offsets among application transactions `txns` to `offsets` (the
    /// application ids of other writers are left out).
    fn extend_offsets(offsets: &mut BTreeMap<(String, i32), i64>, txns: BTreeMap<String, i64>) {
        offsets.extend(
            txns.into_iter()
                .filter_map(|(app, next)| Some((delta::parse_kafka_app_id(&app)?, next))),
        );
    }

    /// Records the segment file `path` of `table` (relative to the table directory),
    /// and its key file, as removed at `removed_ms`; a path leaving the table is ignored.
    fn tombstone(&mut self, table: Table, path: &str, removed_ms: i64) {
        let keys = delta::keys_path_of(path);
        for p in [path, keys.as_str()] {
            if is_inside_store(p) {
                self.tombstones.push(Tombstone {
                    path: format!("{}/{p}", table.name()),
                    removed_ms,
                });
            }
        }
    }

    /// The store's version: the sum of its tables' Delta versions (creating a table is its
    /// version 0), so 0 means nothing committed and every commit to a table raises it by one.
    pub fn version(&self) -> u64 {
        self.deltas.values().filter_map(DeltaTable::version).sum()
    }

    /// The live segments of `table`, oldest first.
    pub fn segments_of(&self, table: Table) -> impl Iterator<Item = &SegmentEntry> {
        self.segments.get(&table).into_iter().flatten()
    }

    /// Commits `entry`: one Delta commit per table it touches. Tables only gaining rows
    /// go first, then the anchor with the offsets (so a crash before it leaves rows that
    /// a re-run, reading from the old offsets, drops as duplicates), then tables losing
    /// segments (so rows moved out of a table, e.g. replayed dead letters, are in their
    /// new table before they leave the old one). A table whose Delta version reaches a
    /// multiple of `checkpoint_interval` gets a checkpoint. The state follows each table
    /// commit that landed, even when a later one fails.
    pub fn commit(
        &mut self,
        root: &Root,
        entry: &Entry,
        checkpoint_interval: u64,
    ) -> Result<(), StoreError> {
        let mut added: BTreeMap<Table, Vec<SegmentEntry>> = BTreeMap::new();
        for s in &entry.add {
            added.entry(s.table).or_default().push(s.clone());
        }
        let leaving: HashSet<&str> = entry.remove.iter().map(String::as_str).collect();
        let mut removed: BTreeMap<Table, Vec<SegmentEntry>> = BTreeMap::new();
        for (table, segs) in &self.segments {
            for s in segs.iter().filter(|s| leaving.contains(s.path.as_str())) {
                removed.entry(*table).or_default().push(s.clone());
            }
        }
        let touched: HashSet<Table> = added.keys().chain(removed.keys()).copied().collect();
        let anchor = touched.contains(&ANCHOR) || !entry.offsets.is_empty();
        let mut order: Vec<Table> = Table::ALL
            .into_iter()
            .filter(|t| *t != ANCHOR && touched.contains(t) && !removed.contains_key(t))
            .collect();
        if anchor {
            order.push(ANCHOR);
        }
        order.extend(
            Table::ALL
                .into_iter()
                .filter(|t| *t != ANCHOR && removed.contains_key(t)),
        );
        for table in order {
            let gone = removed.remove(&table).unwrap_or_default();
            let new = added.remove(&table).unwrap_or_default();
            let change = match (gone.is_empty(), entry.compaction) {
                (true, _) => Change::Append,
                (false, true) => Change::Compact,
                (false, false) => Change::Overwrite,
            };
            let txns = if table == ANCHOR {
                entry
                    .offsets
                    .iter()
                    .map(|o| {
                        Transaction::new(delta::kafka_app_id(&o.topic, o.partition), o.next_offset)
                    })
                    .collect()
            } else {
                Vec::new()
            };
            self.commit_table(root, table, change, &gone, &new, txns, checkpoint_interval)?;
            if table == ANCHOR {
                for o in &entry.offsets {
                    self.offsets
                        .insert((o.topic.clone(), o.partition), o.next_offset);
                }
            }
        }
        Ok(())
    }

    /// One table's Delta commit, and the state after it.
    #[allow(clippy::too_many_arguments)]
    fn commit_table(
        &mut self,
        root: &Root,
        table: Table,
        change: Change,
        gone: &[SegmentEntry],
        new: &[SegmentEntry],
        txns: Vec<Transaction>,
        checkpoint_interval: u64,
    ) -> Result<(), StoreError> {
        let dir = delta::table_dir(root, table);
        let err = |e| delta::error(&dir, e);
        let known = self.deltas.get(&table).cloned();
        let (delta, others) = delta::block_on(async {
            let mut delta = match known {
                Some(d) => d,
                None => delta::open_or_create(table, root).await?,
            };
            let before = delta.version();
            let version = delta::commit(&mut delta, table, change, gone, new, txns)
                .await
                .map_err(err)?;
            if (version + 1).is_multiple_of(checkpoint_interval.max(1)) {
                delta::checkpoint(&delta).await.map_err(err)?;
            }
            // Commits of other writers (in a bucket) landed before this one: the state
            // is read again from the log, which now holds theirs and ours.
            let others = if before.map(|b| b + 1) == Some(version) {
                None
            } else {
                Some(table_view(table, &dir, &delta).await?)
            };
            Ok::<_, StoreError>((delta, others))
        })??;
        self.deltas.insert(table, delta);
        let now = chrono::Utc::now().timestamp_millis();
        let segs = self.segments.entry(table).or_default();
        if let Some((live, offsets)) = others {
            *segs = live;
            Self::extend_offsets(&mut self.offsets, offsets);
        } else {
            let gone_paths: HashSet<&str> = gone.iter().map(|s| s.path.as_str()).collect();
            segs.retain(|s| !gone_paths.contains(s.path.as_str()));
            segs.extend(new.iter().cloned());
        }
        for s in gone {
            for p in [&s.path, &s.keys_path] {
                self.tombstones.push(Tombstone {
                    path: p.clone(),
                    removed_ms: now,
                });
            }
        }
        Ok(())
    }

    /// Every file the state still references (live segments and tombstones), relative.
    pub fn referenced_files(&self) -> HashSet<String> {
        let mut out = HashSet::new();
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

/// The live segments of `table` at the loaded version of its Delta log, and its
/// application transactions (Kafka offsets) when it is the anchor table (none otherwise).
async fn table_view(
    table: Table,
    dir: &Path,
    delta: &DeltaTable,
) -> Result<(Vec<SegmentEntry>, BTreeMap<String, i64>), StoreError> {
    let offsets = if table == ANCHOR {
        delta::application_transactions(delta)
            .await
            .map_err(|e| delta::error(dir, e))?
    } else {
        BTreeMap::new()
    };
    Ok((live_segments(table, dir, delta)?, offsets))
}

/// The live segments of `table` as the loaded version of its Delta log lists them.
fn live_segments(
    table: Table,
    dir: &Path,
    delta: &DeltaTable,
) -> Result<Vec<SegmentEntry>, StoreError> {
    let snapshot = delta.snapshot().map_err(|e| delta::error(dir, e))?;
    let mut segments = Vec::new();
    for file in snapshot.log_data() {
        // The tags are only reachable through the whole action in delta-rs 1.1.
        #[allow(deprecated)]
        let add = file.add_action();
        segments.push(delta::segment_entry(table, dir, &add)?);
    }
    Ok(segments)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// A store of the layout before Delta tables is refused, naming its old log.
    #[test]
    fn an_old_layout_store_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(OLD_LOG_DIR)).unwrap();
        let e = State::load(&Root::Local(dir.path().to_path_buf()), false).unwrap_err();
        assert!(matches!(e, StoreError::OldLayout { .. }), "{e}");
        assert!(e.to_string().contains("_log"), "{e}");
    }
}

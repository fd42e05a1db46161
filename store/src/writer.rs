//! The single writer of a store: buffers rows, drops duplicates, writes sorted segments
//! and publishes them with Kafka offsets in Delta commits; compacts small segments;
//! recovers from crashes by deleting files no Delta log references.

use std::collections::{BTreeMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use arrow::compute::interleave_record_batch;
use whyslow_schemas::Table;
use whyslow_schemas::tables::stored_to_ns;

use bytes::Bytes;

use super::keys::{self, Key};
use super::location::{Remote, Root};
use super::state::{Entry, KafkaOffset, SegmentEntry};
use super::{Store, StoreError, delta, files, fsio, segment, sidecar};

const TMP_DIR: &str = "_tmp";
const LOCK_FILE: &str = "_lock";
/// When the writer last vacuumed (ms since the epoch): every file removed before that
/// time has been deleted, so its tombstone, still in the Delta log for days, is skipped.
const VACUUMED_FILE: &str = "_vacuumed_until";

/// Tuning of a [`StoreWriter`].
#[derive(Debug, Clone)]
pub struct WriterOptions {
    /// A commit compacts a partition once it holds this many small segments (0 = never).
    pub auto_compact_segments: usize,
    /// Segments with fewer rows than this are small: candidates for compaction.
    pub small_segment_rows: u64,
    /// Most rows compaction puts into one segment (large commits are split at it too).
    pub target_segment_rows: u64,
    /// How long files removed from the visible state stay on disk for readers that opened
    /// the store before; the writer deletes them after that.
    pub retention: Duration,
    /// A table gets a Delta checkpoint every this many versions of its log.
    pub checkpoint_interval: u64,
    /// In a bucket, how old a file no Delta log references must be before a writer
    /// deletes it as an orphan (other writers may be about to commit younger ones; a
    /// writer refuses to commit files older than half of it). Zero: at once, for a bucket
    /// with a single writer.
    pub orphan_grace: Duration,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            auto_compact_segments: 16,
            small_segment_rows: 512 * 1024,
            target_segment_rows: 2 * 1024 * 1024,
            retention: Duration::from_secs(600),
            checkpoint_interval: 32,
            orphan_grace: Duration::from_secs(3600),
        }
    }
}

/// What one commit did for one table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableCommit {
    /// Rows written to new segments.
    pub written: u64,
    /// Rows dropped because the store, or the same commit, already held them.
    pub duplicates: u64,
    /// New segments.
    pub segments: usize,
    /// Parquet bytes written.
    pub bytes: u64,
    /// Key-file bytes written.
    pub key_bytes: u64,
}

/// What a commit did.
#[derive(Debug, Clone, Default)]
pub struct CommitStats {
    /// The store version after the commit (`None` when there was nothing to record).
    pub version: Option<u64>,
    /// Per table that had rows buffered.
    pub tables: BTreeMap<Table, TableCommit>,
    /// The compaction the commit triggered, if any.
    pub compaction: Option<CompactStats>,
}

impl CommitStats {
    /// Rows written over all tables.
    pub fn written(&self) -> u64 {
        self.tables.values().map(|t| t.written).sum()
    }

    /// Duplicate rows skipped over all tables.
    pub fn duplicates(&self) -> u64 {
        self.tables.values().map(|t| t.duplicates).sum()
    }
}

/// What a compaction did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactStats {
    /// The store version after the compaction (`None` when nothing needed merging).
    pub version: Option<u64>,
    /// Segments merged away.
    pub segments_removed: usize,
    /// Segments written in their place.
    pub segments_added: usize,
    /// Rows rewritten.
    pub rows: u64,
}

/// A writer of a store: the single one of a directory (it holds `<root>/_lock` while it
/// lives), or one of any number of a bucket.
pub struct StoreWriter {
    store: Store,
    _lock: Option<File>,
    options: WriterOptions,
    pending: BTreeMap<Table, Vec<RecordBatch>>,
    nonce: u64,
    seq: u64,
    /// Tombstones removed before this time were deleted by an earlier vacuum.
    vacuumed_until: i64,
    /// When the oldest segment not yet committed was written (buckets: see `Stale`).
    staged_since: Option<Instant>,
}

/// Key files of bucket stores kept in memory for the process, up to a byte budget, so
/// that deduping a commit does not fetch the same files again (key files never change once
/// written, and a stream worker opens a writer per micro-batch).
#[derive(Default)]
struct KeyCache {
    files: std::collections::HashMap<String, Bytes>,
    bytes: usize,
}

/// Most bytes of key files the process keeps in memory.
const KEY_CACHE_BYTES: usize = 256 << 20;

static KEY_CACHE: std::sync::LazyLock<std::sync::Mutex<KeyCache>> =
    std::sync::LazyLock::new(Default::default);

impl KeyCache {
    /// The key file `rel` of the bucket store `remote`, fetched unless cached.
    fn get(remote: &std::sync::Arc<Remote>, rel: &str) -> Result<Bytes, StoreError> {
        let name = format!("{}/{rel}", remote.url);
        if let Some(b) = Self::cache().files.get(&name) {
            return Ok(b.clone());
        }
        let bytes = files::read(&Root::Remote(remote.clone()), rel)?;
        Self::keep(name, bytes.clone());
        Ok(bytes)
    }

    /// Keeps the key file `name` (store URL and relative path).
    fn keep(name: String, bytes: Bytes) {
        let mut cache = Self::cache();
        if cache.bytes + bytes.len() > KEY_CACHE_BYTES {
            cache.files.clear();
            cache.bytes = 0;
        }
        cache.bytes += bytes.len();
        cache.files.insert(name, bytes);
    }

    fn cache() -> std::sync::MutexGuard<'static, KeyCache> {
        KEY_CACHE
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl StoreWriter {
    /// Opens (creating if needed) the store at `root` for writing with default options.
    pub fn open(root: &Path) -> Result<StoreWriter, StoreError> {
        StoreWriter::open_with(root, WriterOptions::default())
    }

    /// Opens the writer like `open`, waiting up to `patience` while another process (a
    /// second stream worker, the live analyzers) holds the lock for its commit.
    pub fn open_waiting(root: &Path, patience: Duration) -> Result<StoreWriter, StoreError> {
        let deadline = Instant::now() + patience;
        loop {
            match StoreWriter::open(root) {
                Err(StoreError::Locked { .. }) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                other => return other,
            }
        }
    }

    /// Opens the store for writing: takes the writer lock, then deletes what a crashed
    /// writer left behind (temp files, segments no Delta log made visible) and removed
    /// files whose retention has passed.
    pub fn open_with(root: &Path, options: WriterOptions) -> Result<StoreWriter, StoreError> {
        StoreWriter::open_root(Root::parse(root)?, options)
    }

    /// Opens the store at `location` (built with options of its own, see
    /// [`Root::parse_with`]) for writing, like [`open_with`](Self::open_with).
    pub fn open_root(location: Root, options: WriterOptions) -> Result<StoreWriter, StoreError> {
        let lock = match &location {
            Root::Local(root) => Some(lock_directory(root)?),
            // A bucket has no lock: writers commit with Delta's optimistic concurrency.
            Root::Remote(_) => None,
        };
        let vacuumed_until = read_vacuumed_until(&location);
        let store = Store::load_at(location, true)?;
        // Writers on several hosts name files in one bucket: the process id and the clock
        // are mixed with the per-process random keys of the standard hasher.
        let random = {
            use std::hash::{BuildHasher, Hasher};
            std::collections::hash_map::RandomState::new()
                .build_hasher()
                .finish()
        };
        let nonce = xxhash_rust::xxh3::xxh3_64(
            format!(
                "{}-{}-{random}",
                std::process::id(),
                chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0)
            )
            .as_bytes(),
        );
        let mut w = StoreWriter {
            store,
            _lock: lock,
            options,
            pending: BTreeMap::new(),
            nonce,
            seq: 0,
            vacuumed_until,
            staged_since: None,
        };
        w.recover()?;
        Ok(w)
    }

    /// Brings the writer up to the commits other writers made since it opened or last
    /// refreshed, so that one writer can serve many commits (the stream worker keeps one
    /// per bucket store instead of opening one per micro-batch). In a bucket, reads only
    /// the new Delta commits, except when the periodic orphan scan is due: then the state
    /// is read whole (with every writer's tombstones) before the scan. In a directory the
    /// writer holds the lock, so nothing can have changed.
    pub fn refresh(&mut self) -> Result<(), StoreError> {
        let Root::Remote(remote) = &self.store.location else {
            return Ok(());
        };
        let remote = remote.clone();
        if orphan_scan_due(&remote) {
            self.reload()?;
            self.recover_bucket(&remote)?;
            return self.vacuum();
        }
        let location = self.store.location.clone();
        self.store.state.refresh(&location)
    }

    /// The committed state as this writer last left it.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The store root (absolute).
    pub fn root(&self) -> &Path {
        self.store.root()
    }

    /// Rows buffered and not yet committed.
    pub fn pending_rows(&self) -> usize {
        self.pending
            .values()
            .flatten()
            .map(RecordBatch::num_rows)
            .sum()
    }

    /// Buffers rows of `table` for the next [`commit`](Self::commit). The batch must have
    /// the table's schema (`table.schema()`).
    pub fn append(&mut self, table: Table, batch: RecordBatch) -> Result<(), StoreError> {
        let batch = self.conform(table, batch)?;
        if batch.num_rows() > 0 {
            self.pending.entry(table).or_default().push(batch);
        }
        Ok(())
    }

    fn conform(&self, table: Table, batch: RecordBatch) -> Result<RecordBatch, StoreError> {
        let schema = table.schema();
        let err = |detail: String| StoreError::Schema {
            path: self.root().to_path_buf(),
            table,
            detail,
        };
        let got = batch.schema();
        if got.fields().len() != schema.fields().len() {
            return Err(err(format!(
                "{} columns, expected {}",
                got.fields().len(),
                schema.fields().len()
            )));
        }
        for (g, w) in got.fields().iter().zip(schema.fields()) {
            if g.name() != w.name() || !g.data_type().equals_datatype(w.data_type()) {
                return Err(err(format!(
                    "column {} {} where {} {} is expected",
                    g.name(),
                    g.data_type(),
                    w.name(),
                    w.data_type()
                )));
            }
        }
        RecordBatch::try_new(schema, batch.columns().to_vec()).map_err(|e| err(e.to_string()))
    }

    /// Writes the buffered rows that the store does not hold yet and makes them visible
    /// atomically together with `offsets`. The buffer is emptied whether or not it succeeds
    /// (appending the same rows again is harmless: they are deduplicated).
    pub fn commit(&mut self, offsets: &[KafkaOffset]) -> Result<CommitStats, StoreError> {
        let pending = std::mem::take(&mut self.pending);
        let mut entry = Entry::new(false);
        let mut stats = CommitStats::default();
        let mut files = Vec::new();
        let staged = (|| {
            for (table, batches) in &pending {
                let tc = self.stage(*table, batches, true, &mut entry, &mut files)?;
                stats.tables.insert(*table, tc);
            }
            Ok::<(), StoreError>(())
        })();
        drop(pending);
        if let Err(e) = staged {
            self.discard(&files);
            return Err(e);
        }
        let offsets_change = offsets.iter().any(|o| {
            self.store
                .state
                .offsets
                .get(&(o.topic.clone(), o.partition))
                != Some(&o.next_offset)
        });
        if entry.add.is_empty() && !offsets_change {
            return Ok(stats);
        }
        entry.offsets = offsets.to_vec();
        self.publish(&entry, &files)?;
        stats.version = Some(self.store.state.version());
        if self.options.auto_compact_segments > 0 {
            // The rows and offsets are committed whatever becomes of the compaction: a
            // failed one (in a bucket, typically another writer compacting the same
            // segments first) is told and the state read again, and the next commit retries.
            match self.compact_partitions(self.options.auto_compact_segments.max(2), true) {
                Ok(c) if c.version.is_some() => stats.compaction = Some(c),
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(store = %self.root().display(), error = %e, "automatic compaction failed; the commit stands");
                    self.reload()?;
                }
            }
        }
        Ok(stats)
    }

    /// Atomically replaces every row of `table` (meant for the derived tables analyzers
    /// rebuild) with `batches`; duplicate rows among them are dropped.
    pub fn replace_table(
        &mut self,
        table: Table,
        batches: Vec<RecordBatch>,
    ) -> Result<TableCommit, StoreError> {
        let mut stats = self.replace_tables(vec![(table, batches)])?;
        Ok(stats.remove(&table).unwrap_or_default())
    }

    /// Replaces every row of each listed table with its batches, one atomic Delta commit
    /// per table, in the order of [`Table::ALL`] (e.g. `slowdowns`, then `causes`: a
    /// reader in between sees the new slowdowns with the old causes).
    pub fn replace_tables(
        &mut self,
        tables: Vec<(Table, Vec<RecordBatch>)>,
    ) -> Result<BTreeMap<Table, TableCommit>, StoreError> {
        let mut conformed = Vec::with_capacity(tables.len());
        for (table, batches) in tables {
            let batches = batches
                .into_iter()
                .map(|b| self.conform(table, b))
                .collect::<Result<Vec<_>, _>>()?;
            conformed.push((table, batches));
        }
        let mut entry = Entry::new(false);
        let mut files = Vec::new();
        let mut stats = BTreeMap::new();
        for (table, batches) in &conformed {
            match self.stage(*table, batches, false, &mut entry, &mut files) {
                Ok(tc) => {
                    let old = self.store.state.segments_of(*table).map(|s| s.path.clone());
                    entry.remove.extend(old);
                    stats.insert(*table, tc);
                }
                Err(e) => {
                    self.discard(&files);
                    return Err(e);
                }
            }
        }
        if entry.add.is_empty() && entry.remove.is_empty() {
            return Ok(stats);
        }
        self.publish(&entry, &files)?;
        Ok(stats)
    }

    /// Commits the buffered rows like [`commit`](Self::commit) (rows the store holds are
    /// dropped) and then replaces every row of each table in `replace` with its batches;
    /// rows buffered for a replaced table join its replacement. The appends are committed
    /// before the replacements: e.g. rows recovered from dead letters are in `events`
    /// before those letters leave `dead_letters`, so no crash loses them; a crash between
    /// leaves both, and the next run drops the rows as duplicates and removes the letters.
    /// The buffer is emptied whether or not it succeeds.
    pub fn commit_replacing(
        &mut self,
        replace: Vec<(Table, Vec<RecordBatch>)>,
    ) -> Result<CommitStats, StoreError> {
        let mut pending = std::mem::take(&mut self.pending);
        let mut replaced: BTreeMap<Table, Vec<RecordBatch>> = BTreeMap::new();
        for (table, batches) in replace {
            let rows = replaced.entry(table).or_default();
            for b in batches {
                rows.push(self.conform(table, b)?);
            }
        }
        for (table, rows) in replaced.iter_mut() {
            rows.extend(pending.remove(table).unwrap_or_default());
        }
        let mut entry = Entry::new(false);
        let mut stats = CommitStats::default();
        let mut files = Vec::new();
        let staged = (|| {
            for (table, batches) in &pending {
                let tc = self.stage(*table, batches, true, &mut entry, &mut files)?;
                stats.tables.insert(*table, tc);
            }
            for (table, batches) in &replaced {
                let tc = self.stage(*table, batches, false, &mut entry, &mut files)?;
                let old = self.store.state.segments_of(*table).map(|s| s.path.clone());
                entry.remove.extend(old);
                stats.tables.insert(*table, tc);
            }
            Ok::<(), StoreError>(())
        })();
        if let Err(e) = staged {
            self.discard(&files);
            return Err(e);
        }
        if entry.add.is_empty() && entry.remove.is_empty() {
            return Ok(stats);
        }
        self.publish(&entry, &files)?;
        stats.version = Some(self.store.state.version());
        Ok(stats)
    }

    /// Merges the small segments of every partition that has at least two of them.
    pub fn compact(&mut self) -> Result<CompactStats, StoreError> {
        self.compact_partitions(2, false)
    }

    /// Commits `entry` (one Delta commit per table it touches), then deletes expired
    /// files. Files of tables whose commit did not land are deleted at once.
    fn publish(&mut self, entry: &Entry, files: &[String]) -> Result<(), StoreError> {
        let location = self.store.location.clone();
        let staged_since = self.staged_since.take();
        let grace = self.options.orphan_grace;
        if let (Root::Remote(_), Some(since)) = (&location, staged_since) {
            let took = since.elapsed();
            if !grace.is_zero() && took > grace / 2 {
                self.discard(files);
                return Err(StoreError::Stale {
                    path: self.root().to_path_buf(),
                    secs: took.as_secs(),
                });
            }
        }
        let interval = self.options.checkpoint_interval;
        if let Err(e) = self.store.state.commit(&location, entry, interval) {
            // A failed commit may still have landed: its log entry is written by one put,
            // and requests after it can fail (delta-rs lists the log again after its put, a
            // checkpoint or a read of other writers' commits may follow). So a file is
            // deleted only when the log, read again, does not name it; when the log cannot
            // be read (the bucket is down), every file stays, and the orphan scan removes
            // those no commit names once they are past the grace.
            let orphans: Vec<String> = match Store::load_at(location.clone(), true) {
                Ok(now) => {
                    self.store = now;
                    let referenced = self.store.state.referenced_files();
                    entry
                        .add
                        .iter()
                        .filter(|s| !referenced.contains(&s.path))
                        .flat_map(|s| [s.path.clone(), s.keys_path.clone()])
                        .collect()
                }
                Err(unread) => {
                    tracing::warn!(store = %self.root().display(), error = %unread, "a commit failed and the log cannot be read to tell whether it landed; its files stay");
                    Vec::new()
                }
            };
            self.discard(&orphans);
            let tmp = format!("{TMP_DIR}/");
            let temps: Vec<String> = files
                .iter()
                .filter(|f| f.starts_with(&tmp))
                .cloned()
                .collect();
            self.discard(&temps);
            return Err(e);
        }
        self.vacuum()
    }

    /// Reads the committed state again (after a failure left it uncertain).
    fn reload(&mut self) -> Result<(), StoreError> {
        self.store = Store::load_at(self.store.location.clone(), true)?;
        Ok(())
    }

    /// Best-effort removal of files (relative paths) of a commit that did not land; the
    /// orphans it misses are removed when a writer next opens the store.
    fn discard(&mut self, files: &[String]) {
        self.staged_since = None;
        for f in files {
            let _ = files::delete(&self.store.location, f);
        }
    }

    /// Dedupes `batches` of `table` (against the store if `against_store`), writes the new
    /// rows as segments and records them in `entry`.
    fn stage(
        &mut self,
        table: Table,
        batches: &[RecordBatch],
        against_store: bool,
        entry: &mut Entry,
        files: &mut Vec<String>,
    ) -> Result<TableCommit, StoreError> {
        let root = self.store.root.clone();
        let mut tc = TableCommit::default();
        let mut row_keys = Vec::with_capacity(batches.len());
        for b in batches {
            row_keys.push(keys::row_keys(table, b).map_err(|m| StoreError::Schema {
                path: root.clone(),
                table,
                detail: format!("column {} missing or of another type", m.0),
            })?);
        }
        let n: usize = batches.iter().map(RecordBatch::num_rows).sum();
        if n == 0 {
            return Ok(tc);
        }
        // Sorted by (key, batch, row): dedup keeps the first occurrence of a key.
        let mut rows: Vec<(Key, u32, u32)> = Vec::with_capacity(n);
        for (b, ks) in row_keys.iter().enumerate() {
            rows.extend(ks.iter().enumerate().map(|(r, &k)| (k, b as u32, r as u32)));
        }
        rows.sort_unstable();
        rows.dedup_by_key(|x| x.0);
        let mut dup = vec![false; rows.len()];
        if against_store {
            let uniq: Vec<Key> = rows.iter().map(|x| x.0).collect();
            let (first, last) = (uniq[0], uniq[uniq.len() - 1]);
            for seg in self.store.state.segments_of(table) {
                if seg.key_max < first.lead || seg.key_min > last.lead {
                    continue;
                }
                let mut kf = match &self.store.location {
                    Root::Local(dir) => sidecar::KeysFile::open(&dir.join(&seg.keys_path))?,
                    Root::Remote(remote) => sidecar::KeysFile::from_bytes(
                        &root.join(&seg.keys_path),
                        KeyCache::get(remote, &seg.keys_path)?,
                    )?,
                };
                kf.probe(&uniq, &mut dup)?;
            }
        }
        // Survivors grouped by UTC day of the time column, each group still in key order.
        let times: Vec<Option<&[i64]>> = batches
            .iter()
            .map(|b| keys::time_values(table, b).ok().flatten())
            .collect();
        let mut groups: BTreeMap<Option<i64>, Vec<(Key, u32, u32)>> = BTreeMap::new();
        for (row, d) in rows.into_iter().zip(dup) {
            if !d {
                let day =
                    times[row.1 as usize].map(|t| segment::day_of(stored_to_ns(t[row.2 as usize])));
                groups.entry(day).or_default().push(row);
            }
        }
        let sort_keys = segment::sort_keys(table, batches, &row_keys);
        drop(row_keys);
        let refs: Vec<&RecordBatch> = batches.iter().collect();
        let max_rows = self.options.target_segment_rows.max(1) as usize;
        for (day, group) in groups {
            for chunk in group.chunks(max_rows) {
                let seg_keys: Vec<Key> = chunk.iter().map(|x| x.0).collect();
                let mut order: Vec<(segment::SortKey, usize, usize)> = chunk
                    .iter()
                    .map(|&(_, b, r)| (sort_keys[b as usize][r as usize], b as usize, r as usize))
                    .collect();
                order.sort_unstable_by_key(|x| x.0);
                let idx: Vec<(usize, usize)> = order.into_iter().map(|(_, b, r)| (b, r)).collect();
                let part =
                    interleave_record_batch(&refs, &idx).map_err(|source| StoreError::Arrow {
                        path: root.clone(),
                        source,
                    })?;
                let seg = self.write_segment(table, day, &part, &seg_keys, files)?;
                tc.written += seg.rows;
                tc.segments += 1;
                tc.bytes += seg.bytes;
                tc.key_bytes += seg.keys_bytes;
                entry.add.push(seg);
            }
        }
        tc.duplicates = n as u64 - tc.written;
        Ok(tc)
    }

    /// Writes one segment (rows `part` in storage order; `keys` their keys, sorted) into its
    /// partition directory; the caller makes it visible with a Delta commit.
    fn write_segment(
        &mut self,
        table: Table,
        day: Option<i64>,
        part: &RecordBatch,
        keys: &[Key],
        files: &mut Vec<String>,
    ) -> Result<SegmentEntry, StoreError> {
        let root = self.store.root.clone();
        self.seq += 1;
        let version = self.store.state.version() + 1;
        let name = format!("{version:010}-{:05}-{:016x}", self.seq, self.nonce);
        let partition = day.map(segment::day_name);
        let rel_dir = match &partition {
            Some(p) => format!("{}/date={p}", table.name()),
            None => table.name().to_string(),
        };
        let rel_pq = format!("{rel_dir}/{name}.parquet");
        let in_table = rel_pq
            .strip_prefix(table.name())
            .unwrap_or(&rel_pq)
            .trim_start_matches('/');
        let rel_keys = format!("{}/{}", table.name(), delta::keys_path_of(in_table));
        self.staged_since.get_or_insert_with(Instant::now);
        let (bytes, keys_bytes) = match &self.store.location {
            Root::Local(dir) => {
                write_local(dir, table, part, keys, &name, [&rel_pq, &rel_keys], files)?
            }
            Root::Remote(remote) => {
                let pq = segment::encode_parquet(table, part, &root.join(&rel_pq))?;
                let kb = sidecar::encode(keys)
                    .map_err(|e| StoreError::io("compress", root.join(&rel_keys), e))?;
                let sizes = (pq.len() as u64, kb.len() as u64);
                files.push(rel_pq.clone());
                files::put(remote, &rel_pq, pq)?;
                files.push(rel_keys.clone());
                let kb = Bytes::from(kb);
                files::put(remote, &rel_keys, kb.to_vec())?;
                KeyCache::keep(format!("{}/{rel_keys}", remote.url), kb);
                sizes
            }
        };
        let (min_time_ns, max_time_ns) = match keys::time_values(table, part).ok().flatten() {
            Some(t) => (
                t.iter().min().map(|&v| stored_to_ns(v)),
                t.iter().max().map(|&v| stored_to_ns(v)),
            ),
            None => (None, None),
        };
        Ok(SegmentEntry {
            table,
            path: rel_pq,
            keys_path: rel_keys,
            partition,
            rows: part.num_rows() as u64,
            bytes,
            keys_bytes,
            min_time_ns,
            max_time_ns,
            key_min: keys.first().map_or(0, |k| k.lead),
            key_max: keys.last().map_or(0, |k| k.lead),
        })
    }

    /// Merges small segments of partitions that hold at least `min_count` of them.
    /// `tiered` (the automatic compaction after commits): only segments of one size class
    /// are merged together, a class being a power of `min_count` rows, so a row is
    /// rewritten once per class it climbs (a few times) instead of with every merge until
    /// its segment stops being small; manual compaction merges every small segment.
    fn compact_partitions(
        &mut self,
        min_count: usize,
        tiered: bool,
    ) -> Result<CompactStats, StoreError> {
        let small = self.options.small_segment_rows;
        let target = self.options.target_segment_rows.max(1);
        let mut bins: Vec<(Table, Vec<SegmentEntry>)> = Vec::new();
        for (&table, segs) in &self.store.state.segments {
            let mut by_part: BTreeMap<(Option<String>, u32), Vec<&SegmentEntry>> = BTreeMap::new();
            for s in segs.iter().filter(|s| s.rows < small) {
                let class = if tiered {
                    size_class(s.rows, min_count)
                } else {
                    0
                };
                by_part
                    .entry((s.partition.clone(), class))
                    .or_default()
                    .push(s);
            }
            for group in by_part
                .into_values()
                .filter(|g| g.len() >= min_count.max(2))
            {
                let mut bin: Vec<SegmentEntry> = Vec::new();
                let mut rows = 0;
                for s in group {
                    if !bin.is_empty() && rows + s.rows > target {
                        bins.push((table, std::mem::take(&mut bin)));
                        rows = 0;
                    }
                    rows += s.rows;
                    bin.push(s.clone());
                }
                bins.push((table, bin));
            }
        }
        bins.retain(|(_, b)| b.len() >= 2);
        let mut stats = CompactStats::default();
        if bins.is_empty() {
            return Ok(stats);
        }
        let mut entry = Entry::new(true);
        let mut files = Vec::new();
        let merged = (|| {
            for (table, bin) in &bins {
                let (rows, added) = self.merge(*table, bin, &mut entry, &mut files)?;
                stats.rows += rows;
                stats.segments_removed += bin.len();
                stats.segments_added += added;
            }
            Ok::<(), StoreError>(())
        })();
        if let Err(e) = merged {
            self.discard(&files);
            return Err(e);
        }
        self.publish(&entry, &files)?;
        stats.version = Some(self.store.state.version());
        Ok(stats)
    }

    /// Rewrites the segments of `bin` (one table and partition) as one (or more, if larger
    /// than the target size); returns the rows written and the segments added.
    fn merge(
        &mut self,
        table: Table,
        bin: &[SegmentEntry],
        entry: &mut Entry,
        files: &mut Vec<String>,
    ) -> Result<(u64, usize), StoreError> {
        let root = self.store.root.clone();
        let mut batches = Vec::new();
        for s in bin {
            batches.extend(match &self.store.location {
                Root::Local(dir) => segment::read_parquet(table, &dir.join(&s.path))?,
                location => segment::read_parquet_bytes(
                    table,
                    files::read(location, &s.path)?,
                    &root.join(&s.path),
                )?,
            });
        }
        let tc = self.stage(table, &batches, false, entry, files)?;
        entry.remove.extend(bin.iter().map(|s| s.path.clone()));
        Ok((tc.written, tc.segments))
    }

    /// Deletes what a crashed writer left: temp files and segment files that no Delta log
    /// references; then expired removed files.
    fn recover(&mut self) -> Result<(), StoreError> {
        let root = match &self.store.location {
            Root::Local(dir) => dir.clone(),
            Root::Remote(remote) => {
                let remote = remote.clone();
                if orphan_scan_due(&remote) {
                    self.recover_bucket(&remote)?;
                }
                return self.vacuum();
            }
        };
        let tmp_dir = root.join(TMP_DIR);
        for path in list_files(&tmp_dir)? {
            fsio::remove_if_exists(&path)?;
        }
        let referenced: HashSet<String> = self.store.state.referenced_files();
        for table in Table::ALL {
            let table_dir = root.join(table.name());
            // A commit file delta-rs was writing when the writer died (published by an
            // atomic rename, so a leftover temp file is never part of the log).
            for path in list_files(&table_dir.join(delta::DELTA_LOG_DIR))? {
                if path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("_commit_") && n.ends_with(".tmp"))
                {
                    fsio::remove_if_exists(&path)?;
                }
            }
            let keys_dir = table_dir.join(delta::KEYS_DIR);
            let mut dirs = vec![table_dir.clone(), keys_dir.clone()];
            for p in list_dirs(&table_dir)?
                .into_iter()
                .chain(list_dirs(&keys_dir)?)
            {
                if p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("date="))
                {
                    dirs.push(p);
                }
            }
            for dir in dirs {
                for path in list_files(&dir)? {
                    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                        continue;
                    };
                    if !(name.ends_with(".parquet") || name.ends_with(".keys")) {
                        continue;
                    }
                    let Ok(rel) = path.strip_prefix(&root) else {
                        continue;
                    };
                    let rel = rel.to_string_lossy().replace('\\', "/");
                    if !referenced.contains(&rel) {
                        tracing::info!(path = %path.display(), "removing uncommitted segment file");
                        fsio::remove_if_exists(&path)?;
                    }
                }
            }
        }
        self.vacuum()
    }

    /// Deletes the segment files of a bucket store that no Delta log references and that
    /// are older than the orphan grace: other writers may be about to commit younger ones
    /// (a writer refuses to commit files older than half of it, see `publish`).
    fn recover_bucket(&mut self, remote: &std::sync::Arc<Remote>) -> Result<(), StoreError> {
        let referenced: HashSet<String> = self.store.state.referenced_files();
        let grace = now_ms() - self.options.orphan_grace.as_millis() as i64;
        let root = Root::Remote(remote.clone());
        for table in Table::ALL {
            for f in files::list(remote, table.name())? {
                let in_log = f
                    .rel
                    .strip_prefix(table.name())
                    .is_some_and(|r| r.starts_with(&format!("/{}/", delta::DELTA_LOG_DIR)));
                let data = f.rel.ends_with(".parquet") || f.rel.ends_with(".keys");
                if in_log || !data || referenced.contains(&f.rel) || f.modified_ms > grace {
                    continue;
                }
                tracing::info!(path = %f.rel, "removing uncommitted segment file");
                files::delete(&root, &f.rel)?;
            }
        }
        Ok(())
    }

    /// Deletes removed files whose retention has passed, skipping those an earlier
    /// vacuum deleted (a stream's day of compactions leaves many thousand tombstones in
    /// the log, and the writer opens once per micro-batch).
    fn vacuum(&mut self) -> Result<(), StoreError> {
        let cutoff = now_ms() - self.options.retention.as_millis() as i64;
        let location = self.store.location.clone();
        let mut keep = Vec::new();
        for t in std::mem::take(&mut self.store.state.tombstones) {
            // Strictly before: a file removed in the very millisecond of the last vacuum
            // may have been removed after it.
            if t.removed_ms < self.vacuumed_until {
                continue;
            }
            if t.removed_ms <= cutoff {
                files::delete(&location, &t.path)?;
            } else {
                keep.push(t);
            }
        }
        self.store.state.tombstones = keep;
        if cutoff > self.vacuumed_until {
            // Not synced: a lost or torn marker only makes the next vacuum try again.
            files::write_text(&location, VACUUMED_FILE, &cutoff.to_string())?;
            self.vacuumed_until = cutoff;
        }
        Ok(())
    }
}

/// How often a process lists a bucket store for orphans: a listing costs a request per
/// table and page, and the stream worker opens a writer per micro-batch.
const ORPHAN_SCAN_EVERY: Duration = Duration::from_secs(600);

/// Whether this process should list the bucket store `remote` for orphans now (the
/// first open of it, then every [`ORPHAN_SCAN_EVERY`]); the answer counts as a scan.
fn orphan_scan_due(remote: &Remote) -> bool {
    static LAST: std::sync::LazyLock<std::sync::Mutex<std::collections::HashMap<String, Instant>>> =
        std::sync::LazyLock::new(Default::default);
    let mut last = LAST.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let now = Instant::now();
    match last.get(remote.url.as_str()) {
        Some(at) if now.duration_since(*at) < ORPHAN_SCAN_EVERY => false,
        _ => {
            last.insert(remote.url.to_string(), now);
            true
        }
    }
}

/// The size class of a segment of `rows` rows: `k` for `base^k <= rows < base^(k+1)`.
fn size_class(rows: u64, base: usize) -> u32 {
    let base = (base as u64).max(2);
    let (mut class, mut rest) = (0, rows);
    while rest >= base {
        rest /= base;
        class += 1;
    }
    class
}

/// The time up to which the store at `root` was vacuumed (`i64::MIN` when never, or when
/// the marker cannot be read: then everything is tried again).
fn read_vacuumed_until(root: &Root) -> i64 {
    files::read_text(root, VACUUMED_FILE)
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(i64::MIN)
}

/// Creates the store directory `root` if needed and takes its writer lock.
fn lock_directory(root: &Path) -> Result<File, StoreError> {
    fsio::create_dir_durable(root)?;
    let lock_path = root.join(LOCK_FILE);
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| StoreError::io("open", &lock_path, e))?;
    match lock.try_lock() {
        Ok(()) => Ok(lock),
        Err(fs::TryLockError::WouldBlock) => Err(StoreError::Locked {
            path: root.to_path_buf(),
        }),
        Err(fs::TryLockError::Error(e)) => Err(StoreError::io("lock", &lock_path, e)),
    }
}

/// Writes a segment's Parquet file and key file in the store directory `dir`: each is
/// written and synced under `_tmp/`, then renamed to its relative path in `rels`
/// (Parquet, keys); `files` gets every path written. Returns both sizes.
fn write_local(
    dir: &Path,
    table: Table,
    part: &RecordBatch,
    keys: &[Key],
    name: &str,
    rels: [&String; 2],
    files: &mut Vec<String>,
) -> Result<(u64, u64), StoreError> {
    let tmp_dir = dir.join(TMP_DIR);
    fsio::create_dir_durable(&tmp_dir)?;
    let tmp_pq = format!("{TMP_DIR}/{name}.parquet");
    let tmp_keys = format!("{TMP_DIR}/{name}.keys");
    files.push(tmp_pq.clone());
    files.push(tmp_keys.clone());
    let bytes = segment::write_parquet(table, part, &dir.join(&tmp_pq))?;
    let keys_bytes = sidecar::write(&dir.join(&tmp_keys), keys)?;
    for rel in rels {
        if let Some(parent) = dir.join(rel).parent() {
            fsio::create_dir_durable(parent)?;
        }
    }
    for (tmp, rel) in [(&tmp_pq, rels[0]), (&tmp_keys, rels[1])] {
        files.push(rel.clone());
        fsio::rename_durable(&dir.join(tmp), &dir.join(rel))?;
    }
    Ok((bytes, keys_bytes))
}

fn list_entries(dir: &Path, want_dirs: bool) -> Result<Vec<PathBuf>, StoreError> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(StoreError::io("list", dir, e)),
    };
    let mut out = Vec::new();
    for item in rd {
        let item = item.map_err(|e| StoreError::io("list", dir, e))?;
        let ft = item
            .file_type()
            .map_err(|e| StoreError::io("stat", item.path(), e))?;
        if ft.is_dir() == want_dirs {
            out.push(item.path());
        }
    }
    Ok(out)
}

fn list_files(dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
    list_entries(dir, false)
}

fn list_dirs(dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
    list_entries(dir, true)
}

#[cfg(test)]
mod tests {
    use super::size_class;

    #[test]
    fn size_classes_are_powers_of_the_base() {
        let classes: Vec<u32> = [0, 1, 15, 16, 255, 256, 2_560, 40_960, 655_360]
            .into_iter()
            .map(|rows| size_class(rows, 16))
            .collect();
        assert_eq!(classes, [0, 0, 0, 1, 1, 2, 2, 3, 4]);
        assert_eq!(
            size_class(100, 1),
            size_class(100, 2),
            "a base below 2 is 2"
        );
    }
}

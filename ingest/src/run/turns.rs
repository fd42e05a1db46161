//! A row sink that holds the store's writer lock only while it commits, so `ingest`,
//! `replay`, stream workers and the live analyzers sharing one store take turns per
//! commit instead of one of them holding it for a whole run.

use std::path::PathBuf;
use std::time::Duration;

use arrow::array::RecordBatch;
use whyslow_schemas::Table;

use super::RowSink;
use crate::decode::Format;
use whyslow_store::{CommitStats, StoreError, StoreWriter};

/// How long a commit waits for the writer another process holds for its own commit.
pub const LOCK_PATIENCE: Duration = Duration::from_secs(120);

/// Buffers appended rows in memory (as the writer itself would) and, at each commit,
/// opens the writer (waiting its turn), hands it the rows, commits and lets it go.
pub struct TurnTakingSink {
    root: PathBuf,
    pending: Vec<(Table, RecordBatch)>,
    patience: Duration,
}

impl TurnTakingSink {
    /// A sink for the store at `root`: opens it once now (creating it if needed and
    /// clearing what a crashed writer left), so that a store that cannot be opened fails
    /// before any input is read.
    pub fn open(root: impl Into<PathBuf>) -> Result<TurnTakingSink, StoreError> {
        let root = root.into();
        drop(StoreWriter::open_waiting(&root, LOCK_PATIENCE)?);
        Ok(TurnTakingSink {
            root,
            pending: Vec::new(),
            patience: LOCK_PATIENCE,
        })
    }
}

impl RowSink for TurnTakingSink {
    fn append(&mut self, table: Table, batch: RecordBatch) -> Result<(), StoreError> {
        self.pending.push((table, batch));
        Ok(())
    }

    fn commit(&mut self, tag: Format) -> Result<Vec<(Format, CommitStats)>, StoreError> {
        let mut writer = StoreWriter::open_waiting(&self.root, self.patience)?;
        for (table, batch) in self.pending.drain(..) {
            writer.append(table, batch)?;
        }
        let stats = writer.commit(&[])?;
        Ok(vec![(tag, stats)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{ArrayRef, new_null_array};
    use std::sync::Arc;
    use whyslow_store::Store;

    /// One events row with every column null but the ones the store needs.
    fn one_event(id: &str) -> RecordBatch {
        let schema = Table::Events.schema();
        let columns: Vec<ArrayRef> = schema
            .fields()
            .iter()
            .map(|f| match f.name().as_str() {
                "event_id" | "layer" | "source" | "kind" | "severity" => {
                    Arc::new(arrow::array::StringArray::from(vec![id])) as ArrayRef
                }
                "time" | "ingest_time" => Arc::new(
                    arrow::array::TimestampMicrosecondArray::from(vec![1_795_947_300_000_000])
                        .with_timezone("UTC"),
                ) as ArrayRef,
                _ => new_null_array(f.data_type(), 1),
            })
            .collect();
        RecordBatch::try_new(schema, columns).expect("a row of the events schema")
    }

    #[test]
    fn the_lock_is_free_between_commits_and_every_commit_lands() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = TurnTakingSink::open(dir.path()).unwrap();
        sink.append(Table::Events, one_event("a")).unwrap();
        // Rows are waiting, yet another writer gets the lock at once, commits its own
        // row and lets go.
        {
            let mut other = StoreWriter::open(dir.path()).expect("the lock is free");
            other.append(Table::Events, one_event("b")).unwrap();
            other.commit(&[]).unwrap();
        }
        let done = sink.commit(Format::Envelope).unwrap();
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].1.written(), 1);
        // And after the commit the lock is free again.
        drop(StoreWriter::open(dir.path()).expect("free after the commit"));
        assert_eq!(Store::open(dir.path()).unwrap().rows(Table::Events), 2);
    }

    #[test]
    fn a_held_lock_is_waited_for_then_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = TurnTakingSink::open(dir.path()).unwrap();
        sink.patience = Duration::from_millis(50);
        let _held = StoreWriter::open(dir.path()).unwrap();
        sink.append(Table::Events, one_event("a")).unwrap();
        let err = sink.commit(Format::Envelope).unwrap_err();
        assert!(matches!(err, StoreError::Locked { .. }), "{err}");
    }
}

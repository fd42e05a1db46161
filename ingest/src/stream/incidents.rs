//! The worker's side of the live analysis: a commit observer is told about every store
//! commit (the live analyzers, which publish what they conclude, are in `analyzers`).

use whyslow_store::Store;

/// What one store commit of the worker held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Committed {
    /// Rows the commit added (duplicates excluded).
    pub rows_written: u64,
    /// Kafka timestamps (ms since the epoch) of the oldest and newest message the commit
    /// holds: its evidence arrived between the two.
    pub arrivals: Option<(i64, i64)>,
    /// From taking the micro-batch to its store commit landing: opening the writer,
    /// deduplicating, writing the segments and the Delta commits.
    pub took: std::time::Duration,
}

/// Told about every commit of the worker. `committed` runs on the ingest path (inside
/// the poll loop or a rebalance callback), so it must only note the commit and return:
/// analysis belongs on the observer's own thread.
pub trait CommitObserver: Send {
    /// A micro-batch is now durable in `store`.
    fn committed(&mut self, store: &Store, commit: &Committed);
    /// The worker made its last commit and is stopping: finish what is pending (may
    /// block until done).
    fn finish(&mut self) {}
    /// Registers the observer's own metrics beside the worker's (served on `/metrics`).
    fn register_metrics(&self, _registry: &mut prometheus_client::registry::Registry) {}
}

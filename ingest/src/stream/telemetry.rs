//! The worker's own observability: counters, batch latency, consumer lag and readiness,
//! served by [`super::http`] on `--metrics-addr`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Labels of a per-topic series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TopicLabels {
    pub topic: String,
}

/// Labels of a per-partition series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PartitionLabels {
    pub topic: String,
    pub partition: i32,
}

/// Every series the worker exports.
pub struct Telemetry {
    registry: Registry,
    /// Messages received from Kafka.
    pub consumed: Family<TopicLabels, Counter>,
    /// Rows written to the store (events, metrics, dead letters).
    pub written: Counter,
    /// Rows the store already held (redelivered messages).
    pub duplicates: Counter,
    /// Messages skipped because the store already holds their offsets.
    pub redelivered: Family<TopicLabels, Counter>,
    /// Records rejected to dead_letters.
    pub rejected: Family<TopicLabels, Counter>,
    /// Seconds from a micro-batch's flush to its store and Kafka commits.
    pub batch_seconds: Histogram,
    /// Messages between the committed store offset and the partition's high watermark.
    pub lag: Family<PartitionLabels, Gauge>,
    /// 1 while the broker answers, 0 while it does not.
    pub broker_up: Gauge,
    /// Partitions this worker holds.
    pub assigned: Gauge,
    /// Since when data has waited in memory for a store commit (`None`: nothing waits).
    pending_since: Mutex<Option<Instant>>,
    /// Data waiting longer than this makes the worker not ready (milliseconds).
    stale_after_ms: AtomicU64,
}

/// What `/readyz` reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readiness {
    pub assigned: i64,
    pub broker_up: bool,
    /// How long the oldest uncommitted data has waited.
    pub pending_for: Option<Duration>,
    pub stale_after: Duration,
}

impl Readiness {
    /// Why the worker is not ready, or `None` when it is: it holds partitions, the
    /// broker answers and nothing has waited past `stale_after` to be committed.
    pub fn not_ready(&self) -> Option<String> {
        if self.assigned <= 0 {
            return Some("not ready: no partitions assigned".into());
        }
        if !self.broker_up {
            return Some("not ready: the broker does not answer".into());
        }
        match self.pending_for {
            Some(w) if w > self.stale_after => Some(format!(
                "not ready: data has waited {} s for a store commit (more than {} s)",
                w.as_secs(),
                self.stale_after.as_secs()
            )),
            _ => None,
        }
    }
}

impl Telemetry {
    /// Registers every series under the `whyslow_stream_` prefix.
    pub fn new() -> Arc<Telemetry> {
        Self::with(|_| {})
    }

    /// Registers every series, then lets `more` register its own (at the top level of
    /// the registry, under prefixes of their own).
    pub fn with(more: impl FnOnce(&mut Registry)) -> Arc<Telemetry> {
        let mut top = Registry::default();
        more(&mut top);
        let registry = top.sub_registry_with_prefix("whyslow_stream");
        let t = Telemetry {
            consumed: Family::default(),
            written: Counter::default(),
            duplicates: Counter::default(),
            redelivered: Family::default(),
            rejected: Family::default(),
            batch_seconds: Histogram::new(exponential_buckets(0.001, 2.0, 16)),
            lag: Family::default(),
            broker_up: Gauge::default(),
            assigned: Gauge::default(),
            pending_since: Mutex::new(None),
            stale_after_ms: AtomicU64::new(60_000),
            registry: Registry::default(),
        };
        registry.register(
            "consumed_messages",
            "Messages received from Kafka",
            t.consumed.clone(),
        );
        registry.register(
            "written_rows",
            "Rows written to the store",
            t.written.clone(),
        );
        registry.register(
            "duplicate_rows",
            "Rows the store already held",
            t.duplicates.clone(),
        );
        registry.register(
            "redelivered_messages",
            "Messages skipped because the store already holds their offsets",
            t.redelivered.clone(),
        );
        registry.register(
            "rejected_records",
            "Records rejected to dead_letters",
            t.rejected.clone(),
        );
        registry.register(
            "batch_commit_seconds",
            "Seconds to commit a micro-batch to the store and Kafka",
            t.batch_seconds.clone(),
        );
        registry.register(
            "consumer_lag_messages",
            "High watermark minus committed offset",
            t.lag.clone(),
        );
        registry.register(
            "broker_up",
            "1 while the broker answers",
            t.broker_up.clone(),
        );
        registry.register(
            "assigned_partitions",
            "Partitions this worker holds",
            t.assigned.clone(),
        );
        Arc::new(Telemetry { registry: top, ..t })
    }

    /// The worker now holds `n` partitions.
    pub fn note_assigned(&self, n: i64) {
        self.assigned.set(n);
    }

    /// Data arrived that is not committed yet (the first arrival since a commit counts).
    pub fn note_pending(&self) {
        let mut p = self.pending_since.lock().unwrap_or_else(|e| e.into_inner());
        p.get_or_insert_with(Instant::now);
    }

    /// Everything received is committed.
    pub fn note_committed(&self) {
        *self.pending_since.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Data waiting longer than `d` makes the worker not ready.
    pub fn set_stale_after(&self, d: Duration) {
        self.stale_after_ms.store(
            d.as_millis().min(u64::MAX as u128) as u64,
            Ordering::Relaxed,
        );
    }

    /// What `/readyz` answers from.
    pub fn readiness(&self) -> Readiness {
        let pending = *self.pending_since.lock().unwrap_or_else(|e| e.into_inner());
        Readiness {
            assigned: self.assigned.get(),
            broker_up: self.broker_up.get() == 1,
            pending_for: pending.map(|p| p.elapsed()),
            stale_after: Duration::from_millis(self.stale_after_ms.load(Ordering::Relaxed)),
        }
    }

    /// The current values in the Prometheus text format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Encoding into a String cannot fail: fmt::Write for String is infallible.
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String");
        out
    }

    /// Records how long a commit took.
    pub fn observe_batch(&self, d: Duration) {
        self.batch_seconds.observe(d.as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_needs_partitions_a_broker_and_no_stale_data() {
        let r = |assigned, broker_up, pending_for| Readiness {
            assigned,
            broker_up,
            pending_for,
            stale_after: Duration::from_secs(60),
        };
        assert!(
            r(0, true, None)
                .not_ready()
                .unwrap()
                .contains("no partitions")
        );
        assert!(r(2, false, None).not_ready().unwrap().contains("broker"));
        assert_eq!(r(2, true, Some(Duration::from_secs(5))).not_ready(), None);
        let stale = r(2, true, Some(Duration::from_secs(61)))
            .not_ready()
            .unwrap();
        assert!(stale.contains("waited 61 s"), "{stale}");
        let t = Telemetry::new();
        t.note_assigned(1);
        t.broker_up.set(1);
        t.note_pending();
        let first = t.readiness().pending_for.unwrap();
        t.note_pending();
        assert!(
            t.readiness().pending_for.unwrap() >= first,
            "the first arrival counts"
        );
        t.note_committed();
        assert_eq!(t.readiness().not_ready(), None);
    }
}

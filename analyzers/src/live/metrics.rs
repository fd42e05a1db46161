//! The live analyzer's own metrics, served beside the worker's on `/metrics`: how long
//! analyses take, how far the verdicts trail the evidence, the incidents published by
//! status, the metric segments the analyses read or folded before, and where the
//! analyses' time goes, stage by stage, and the memory of what they keep between commits.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

/// Labels of the incident counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StatusLabels {
    pub status: String,
}

/// Labels of the segment counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ScanLabels {
    /// `read` (decoded by the analysis), `reused` (folded by an earlier one) or `stale`
    /// (read again: what its earlier fold read of the pods' workloads changed; also
    /// counted as read).
    pub how: &'static str,
}

/// Labels of the stage counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StageLabels {
    /// A stage of the analysis, as its clock names it (`analyze.rs`), a cause rule's file,
    /// or the live analyzer's own `open session` and `build report`.
    pub stage: &'static str,
}

/// Labels of the kept-bytes gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KeptLabels {
    /// What is kept (`SegmentFolds::kept_bytes`): `folds`, `framework series`,
    /// `progress times` or `serving counts`.
    pub kind: &'static str,
}

/// Handles to every series (clones share their values).
#[derive(Clone)]
pub struct LiveMetrics {
    /// Seconds one analysis of the window took.
    pub analysis_seconds: Histogram,
    /// Analyses that failed.
    pub failed_analyses: Counter,
    /// Incident revisions published, by status (opened, revised, ended, retracted).
    pub incidents: Family<StatusLabels, Counter>,
    /// Seconds from the earliest arrival of the evidence an analysis covered to its
    /// revisions going out (the last analysis that published).
    pub analysis_lag_seconds: Gauge<f64, AtomicU64>,
    /// Metric segments the analyses' scans covered, by how (read, or reused).
    pub scanned_segments: Family<ScanLabels, Counter>,
    /// Seconds the analyses spent in each stage, summed over analyses.
    pub stage_seconds: Family<StageLabels, Counter<f64, AtomicU64>>,
    /// Estimated bytes the analyzer keeps per segment between analyses, by kind (all
    /// under `LiveOptions::fold_budget_bytes`).
    pub kept_bytes: Family<KeptLabels, Gauge>,
}

impl Default for LiveMetrics {
    fn default() -> Self {
        LiveMetrics {
            analysis_seconds: Histogram::new(exponential_buckets(0.01, 2.0, 14)),
            failed_analyses: Counter::default(),
            incidents: Family::default(),
            analysis_lag_seconds: Gauge::default(),
            scanned_segments: Family::default(),
            stage_seconds: Family::default(),
            kept_bytes: Family::default(),
        }
    }
}

impl LiveMetrics {
    /// Registers the series under `whyslow_live_`.
    pub fn register(&self, registry: &mut Registry) {
        let r = registry.sub_registry_with_prefix("whyslow_live");
        r.register(
            "analysis_seconds",
            "Seconds one live analysis of the window took",
            self.analysis_seconds.clone(),
        );
        r.register(
            "failed_analyses",
            "Live analyses that failed",
            self.failed_analyses.clone(),
        );
        r.register(
            "incident_revisions",
            "Incident revisions published, by status",
            self.incidents.clone(),
        );
        r.register(
            "analysis_lag_seconds",
            "Seconds from the evidence's arrival to the revisions it caused",
            self.analysis_lag_seconds.clone(),
        );
        r.register(
            "scanned_segments",
            "Metric segments the live analyses' scans covered: read, reused from an earlier analysis, or stale (read again)",
            self.scanned_segments.clone(),
        );
        r.register(
            "stage_seconds",
            "Seconds the live analyses spent in each stage, summed over analyses",
            self.stage_seconds.clone(),
        );
        r.register(
            "kept_bytes",
            "Estimated bytes the live analyzer keeps per segment between analyses, by kind",
            self.kept_bytes.clone(),
        );
    }

    /// Sets what the analyzer keeps now, by kind.
    pub fn kept(&self, kept: &[(&'static str, usize)]) {
        for &(kind, bytes) in kept {
            let bytes = i64::try_from(bytes).unwrap_or(i64::MAX);
            self.kept_bytes
                .get_or_create(&KeptLabels { kind })
                .set(bytes);
        }
    }

    /// Adds one analysis' stage timings (a stage named twice adds up).
    pub fn staged(&self, timings: &[(&'static str, f64)]) {
        for (stage, secs) in timings {
            self.stage_seconds
                .get_or_create(&StageLabels {
                    stage: stage.trim(),
                })
                .inc_by(*secs);
        }
    }

    /// Counts what one analysis' scan did with its segments.
    pub fn scanned(&self, scan: crate::analyze::LastScan) {
        let counts = [
            ("read", scan.read),
            ("reused", scan.reused),
            ("stale", scan.stale),
        ];
        for (how, n) in counts {
            self.scanned_segments
                .get_or_create(&ScanLabels { how })
                .inc_by(n as u64);
        }
    }

    /// Counts a published revision.
    pub fn published(&self, status: &str) {
        self.incidents
            .get_or_create(&StatusLabels {
                status: status.to_string(),
            })
            .inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_render_under_their_prefix() {
        let m = LiveMetrics::default();
        let mut registry = Registry::default();
        m.register(&mut registry);
        m.published("opened");
        m.published("opened");
        m.analysis_seconds.observe(0.2);
        m.analysis_lag_seconds.set(1.5);
        let scan = |read, reused| crate::analyze::LastScan {
            read,
            reused,
            ..Default::default()
        };
        m.scanned(scan(3, 0));
        m.scanned(scan(1, 3));
        m.staged(&[("metric scan", 0.25), ("  open session", 0.5)]);
        m.staged(&[("metric scan", 0.5)]);
        m.kept(&[("folds", 4096), ("framework series", 512)]);
        m.kept(&[("folds", 1024), ("framework series", 512)]);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains("whyslow_live_incident_revisions_total{status=\"opened\"} 2"),
            "{text}"
        );
        // A gauge: the last value set.
        assert!(
            text.contains("whyslow_live_kept_bytes{kind=\"folds\"} 1024"),
            "{text}"
        );
        assert!(
            text.contains("whyslow_live_kept_bytes{kind=\"framework series\"} 512"),
            "{text}"
        );
        assert!(
            text.contains("whyslow_live_analysis_seconds_count 1"),
            "{text}"
        );
        assert!(
            text.contains("whyslow_live_analysis_lag_seconds 1.5"),
            "{text}"
        );
        assert!(
            text.contains("whyslow_live_scanned_segments_total{how=\"read\"} 4"),
            "{text}"
        );
        assert!(
            text.contains("whyslow_live_scanned_segments_total{how=\"reused\"} 3"),
            "{text}"
        );
        assert!(
            text.contains("whyslow_live_stage_seconds_total{stage=\"metric scan\"} 0.75"),
            "{text}"
        );
        assert!(
            text.contains("whyslow_live_stage_seconds_total{stage=\"open session\"} 0.5"),
            "{text}"
        );
    }
}

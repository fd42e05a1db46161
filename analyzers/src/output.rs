//! The analysis as rows of the derived tables `slowdowns` and `causes` (tables.md), and
//! their replacement in the store: derived state is rebuilt from the log on each run.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Builder, Int32Builder, RecordBatch, StringBuilder};
use whyslow_schemas::Table;
use whyslow_schemas::tables::{ns_to_stored, string_list_builder, timestamp_builder};
use whyslow_store::StoreWriter;

use crate::analyze::Analysis;
use crate::{AnalyzeError, Result};

/// The `slowdowns` rows of an analysis; `detected_at` is the end of the analyzed window,
/// so the rows depend on the data only.
pub fn slowdowns_batch(a: &Analysis) -> Result<RecordBatch> {
    let mut id = StringBuilder::new();
    let mut workload = StringBuilder::new();
    let mut namespace = StringBuilder::new();
    let mut run = StringBuilder::new();
    let mut kind = StringBuilder::new();
    let (mut start, mut end, mut detected) = (
        timestamp_builder(),
        timestamp_builder(),
        timestamp_builder(),
    );
    let mut lost = Float64Builder::new();
    let mut baseline = Float64Builder::new();
    let mut observed = Float64Builder::new();
    for f in &a.findings {
        let s = &f.symptom;
        id.append_value(&f.slowdown_id);
        workload.append_option(s.key.workload.as_deref());
        namespace.append_option(s.key.namespace.as_deref());
        run.append_option(s.key.run_id.as_deref());
        kind.append_value(s.kind.as_str());
        start.append_value(ns_to_stored(s.start_ns));
        end.append_value(ns_to_stored(s.end_ns));
        lost.append_value(s.lost_seconds);
        baseline.append_option(s.baseline);
        observed.append_option(s.observed);
        detected.append_value(ns_to_stored(a.to_ns));
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(id.finish()),
        Arc::new(workload.finish()),
        Arc::new(namespace.finish()),
        Arc::new(run.finish()),
        Arc::new(kind.finish()),
        Arc::new(start.finish()),
        Arc::new(end.finish()),
        Arc::new(lost.finish()),
        Arc::new(baseline.finish()),
        Arc::new(observed.finish()),
        Arc::new(detected.finish()),
    ];
    RecordBatch::try_new(Table::Slowdowns.schema(), cols).map_err(|source| AnalyzeError::Arrow {
        what: "slowdowns",
        source,
    })
}

/// The `causes` rows of an analysis: one per (slowdown, ranked cause), rank 1 the verdict.
pub fn causes_batch(a: &Analysis) -> Result<RecordBatch> {
    let mut id = StringBuilder::new();
    let mut rank = Int32Builder::new();
    let mut cause = StringBuilder::new();
    let mut layer = StringBuilder::new();
    let mut confidence = Float64Builder::new();
    let mut explained = Float64Builder::new();
    let mut node = StringBuilder::new();
    let mut device = StringBuilder::new();
    let mut summary = StringBuilder::new();
    let mut evidence = string_list_builder();
    for f in &a.findings {
        for (i, c) in f.causes.iter().enumerate() {
            id.append_value(&f.slowdown_id);
            rank.append_value(i as i32 + 1);
            cause.append_value(c.cause.id());
            layer.append_option(c.layer.map(|l| l.as_str()));
            confidence.append_value(c.confidence);
            explained.append_value(c.explained_seconds);
            node.append_option(c.node.as_deref());
            device.append_option(c.device.as_deref());
            summary.append_value(&c.summary);
            for e in &c.evidence {
                evidence.values().append_value(e);
            }
            evidence.append(true);
        }
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(id.finish()),
        Arc::new(rank.finish()),
        Arc::new(cause.finish()),
        Arc::new(layer.finish()),
        Arc::new(confidence.finish()),
        Arc::new(explained.finish()),
        Arc::new(node.finish()),
        Arc::new(device.finish()),
        Arc::new(summary.finish()),
        Arc::new(evidence.finish()),
    ];
    RecordBatch::try_new(Table::Causes.schema(), cols).map_err(|source| AnalyzeError::Arrow {
        what: "causes",
        source,
    })
}

/// Replaces the store's `slowdowns` and `causes` with this analysis's rows, always (see
/// [`crate::replay::save_derived`] for the rule that writes only what changed).
pub fn persist(store_root: &Path, a: &Analysis) -> Result<()> {
    let err = |e: whyslow_store::StoreError| {
        if e.is_read_only() {
            let path = store_root.display().to_string();
            AnalyzeError::ReadOnlyStore { path, source: e }
        } else {
            AnalyzeError::store(store_root, e)
        }
    };
    // Waits while a stream worker or an ingest commits.
    let patience = whyslow_ingest::redecode::LOCK_PATIENCE;
    let mut w = StoreWriter::open_waiting(store_root, patience).map_err(err)?;
    // One writer turn, one Delta commit per table: a reader may see new slowdowns with
    // old causes for the moment between the two commits.
    w.replace_tables(vec![
        (Table::Slowdowns, vec![slowdowns_batch(a)?]),
        (Table::Causes, vec![causes_batch(a)?]),
    ])
    .map_err(err)?;
    Ok(())
}

//! One scan of the window's metric samples (`symptoms/metric_scan.sql`), folded as they
//! stream into the three things the analysis reads from raw samples: every series' first
//! and last sample (the table `series_extents`, as `symptoms/series_extents.sql` defines
//! it), the workloads' accelerator utilization (`analyze/utilization.rs`) and the GPU
//! activity of the straggler candidates (one-minute means per GPU). Reading the samples
//! once instead of once per use: the columns of a day of 1000 nodes (104M samples) cost
//! 2–3 s to decode each time.
//!
//! A sample that names no workload belongs to its pod's (`pod_workloads`), as the SQL
//! join `LEFT JOIN pod_workloads p ON m.pod = p.pod AND m.namespace IS NOT DISTINCT FROM
//! p.namespace` would name it: once per workload its pod maps to.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Range;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, DictionaryArray, Float64Array, Int64Array, RecordBatch, StringArray,
    StringViewArray, TimestampMicrosecondArray,
};
use arrow::datatypes::{DataType, Field, Int32Type, Schema, SchemaRef};
use whyslow_schemas::tables::{StoredTime, ns_to_stored, stored_to_ns, timestamp_type};

use super::bucket_means::BucketMeans;
use super::utilization::{DeviceRun, Utilization, UtilizationFold};
use crate::columns::Columns;
use crate::symptoms::WorkloadName;
use crate::symptoms::gpu_straggler::GpuSeries;
use crate::{AnalyzeError, Result};

/// The utilization metrics (DCGM, TPU).
const UTILIZATION: [&str; 2] = ["gpu_util", "duty_cycle"];
/// The GPU activity metrics the straggler detector reads.
const ACTIVITY: [&str; 3] = ["sm_active", "tensor_active", "power_watts"];

/// The estimated bytes of a text besides its characters (its `String` and its option).
const TEXT_BYTES: usize = 24;
/// The estimated bytes of a map's entry besides its key and value.
const ENTRY_BYTES: usize = 32;

/// A series as `series_extents` keys it: namespace, workload, pod, node, device.
type SeriesKey = [Option<String>; 5];

/// One metric's samples of each GPU (node, device) of a workload, folded.
type GpuMeans = BTreeMap<(String, Option<String>), BucketMeans>;

/// Per workload and metric, each GPU's (node, device) activity means.
pub type Activity = BTreeMap<WorkloadName, BTreeMap<String, Vec<GpuSeries>>>;

/// Which workloads each pod belongs to (`pod_workloads`), by namespace and pod.
#[derive(Debug, Default)]
pub struct PodWorkloads(HashMap<(Option<String>, String), Vec<String>>);

impl PodWorkloads {
    /// Adds one row of `pod_workloads` (a pod's workloads are kept sorted, so that the
    /// same rows in any order map a pod alike).
    pub fn insert(&mut self, namespace: Option<String>, pod: String, workload: String) {
        let workloads = self.0.entry((namespace, pod)).or_default();
        let at = workloads.partition_point(|w| *w < workload);
        workloads.insert(at, workload);
    }

    /// The workloads a sample counts for, as the join names them: its own, once per
    /// workload its pod maps to (at least once); else each of its pod's.
    fn name<'a>(
        &'a self,
        namespace: Option<&str>,
        workload: Option<&'a str>,
        pod: Option<&str>,
    ) -> Vec<&'a str> {
        match (workload, self.mapped(namespace, pod)) {
            (Some(w), Some(m)) => vec![w; m.len().max(1)],
            (Some(w), None) => vec![w],
            (None, Some(m)) => m.iter().map(String::as_str).collect(),
            (None, None) => Vec::new(),
        }
    }

    /// The workloads of a pod (`None`: none known, or no pod).
    fn mapped(&self, namespace: Option<&str>, pod: Option<&str>) -> Option<&Vec<String>> {
        pod.and_then(|p| self.0.get(&(namespace.map(str::to_string), p.to_string())))
    }
}

/// What a fold reads besides the samples: which workloads the pods belong to, whose GPU
/// activity to keep, and the width of the activity buckets.
#[derive(Clone, Copy)]
pub struct ScanBasis<'a> {
    pub pods: &'a PodWorkloads,
    pub candidates: &'a BTreeSet<WorkloadName>,
    pub activity_bucket_ns: i64,
}

/// The fold of some rows of a scan: all of them, or one segment's (which the live
/// analyzer keeps between analyses, `analyze/segment_folds.rs`). Folds of parts merge
/// into the fold of the whole, exactly: extents are minima and maxima, sums are of
/// millionths as integers, and the devices sampled for the scrape interval are the first
/// by name whatever the order.
#[derive(Default, Clone)]
pub struct ScanFold {
    extents: HashMap<SeriesKey, (i64, i64)>,
    utilization: UtilizationFold,
    activity: BTreeMap<WorkloadName, BTreeMap<String, GpuMeans>>,
    /// What the fold read of its basis, where asked to keep it ([`ScanFold::recording`]).
    /// Such a fold keeps every workload's GPU activity, not only the candidates': which
    /// workloads are candidates changes as their framework series arrive, and the
    /// candidates' activity is taken when folds merge ([`ScanFold::merge`]).
    read: Option<BasisRead>,
}

/// What a fold read of its [`ScanBasis`]: the fold stands for as long as another basis
/// reads the same.
#[derive(Default, Clone)]
struct BasisRead {
    /// The workloads of each pod a utilization or activity sample named (`None`: none).
    pods: HashMap<(Option<String>, String), Option<Vec<String>>>,
    activity_bucket_ns: i64,
}

/// What a scan found.
pub struct Scanned {
    /// `series_extents`' rows, as one batch of [`series_extents_schema`].
    pub extents: RecordBatch,
    pub utilization: Utilization,
    pub activity: Activity,
}

/// The schema of `series_extents` (that of `symptoms/series_extents.sql`'s result).
pub fn series_extents_schema() -> SchemaRef {
    let text = |n: &str| Field::new(n, DataType::Utf8, true);
    let time = |n: &str| Field::new(n, timestamp_type(), true);
    Arc::new(Schema::new(vec![
        text("namespace"),
        text("workload"),
        text("pod"),
        text("node"),
        text("device"),
        time("since"),
        time("until"),
    ]))
}

impl ScanFold {
    /// A fold that keeps what it reads of its basis, so that it can be told later whether
    /// it still holds under another ([`ScanFold::holds_under`]).
    pub fn recording(basis: &ScanBasis<'_>) -> Self {
        ScanFold {
            read: Some(BasisRead {
                activity_bucket_ns: basis.activity_bucket_ns,
                ..BasisRead::default()
            }),
            ..ScanFold::default()
        }
    }

    /// Whether folding the same rows under `basis` would give this fold (but for the
    /// activity of workloads that are not candidates): every pod it read maps alike
    /// there. A fold that kept nothing of what it read is never known to hold.
    pub fn holds_under(&self, basis: &ScanBasis<'_>) -> bool {
        let Some(read) = &self.read else {
            return false;
        };
        let pods_same = read
            .pods
            .iter()
            .all(|((ns, pod), had)| basis.pods.mapped(ns.as_deref(), Some(pod)) == had.as_ref());
        read.activity_bucket_ns == basis.activity_bucket_ns && pods_same
    }

    /// About how many bytes the fold holds (strings, entries and the maps' overhead,
    /// estimated): what the live analyzer's budget of kept folds counts.
    pub fn approx_bytes(&self) -> usize {
        let text = |t: &Option<String>| TEXT_BYTES + t.as_ref().map_or(0, String::capacity);
        let extents: usize = self
            .extents
            .keys()
            .map(|k| k.iter().map(text).sum::<usize>() + ENTRY_BYTES)
            .sum();
        let activity: usize = self
            .activity
            .values()
            .flat_map(|metrics| metrics.values())
            .flat_map(|gpus| gpus.iter())
            .map(|((node, device), means)| {
                TEXT_BYTES + node.capacity() + text(device) + ENTRY_BYTES + means.approx_bytes()
            })
            .sum();
        let read = self
            .read
            .as_ref()
            .map_or(0, |r| r.pods.len() * (2 * TEXT_BYTES + 2 * ENTRY_BYTES));
        extents + activity + self.utilization.approx_bytes() + read
    }

    /// Adds another fold's rows to this one's (what this one read of its basis is kept
    /// as it is), of its GPU activity the `candidates`' only.
    pub fn merge(&mut self, other: &ScanFold, candidates: &BTreeSet<WorkloadName>) {
        for (key, &(lo, hi)) in &other.extents {
            let e = self.extents.entry(key.clone()).or_insert((lo, hi));
            e.0 = e.0.min(lo);
            e.1 = e.1.max(hi);
        }
        self.utilization.merge(&other.utilization);
        for (wk, metrics) in &other.activity {
            if !candidates.contains(wk) {
                continue;
            }
            let mine = self.activity.entry(wk.clone()).or_default();
            for (m, gpus) in metrics {
                let mine = mine.entry(m.clone()).or_default();
                for (gpu, means) in gpus {
                    mine.entry(gpu.clone()).or_default().merge(means);
                }
            }
        }
    }

    /// Folds one batch of the scan's rows (any order; runs of one series are cheap).
    pub fn fold(
        &mut self,
        basis: &ScanBasis<'_>,
        b: &RecordBatch,
        file: &'static str,
    ) -> Result<()> {
        let c = Columns::new(b, file);
        let (ns, w, pod, node, device, metric) = (
            c.texts("namespace")?,
            c.texts("workload")?,
            c.texts("pod")?,
            c.texts("node")?,
            c.texts("device")?,
            c.texts("metric")?,
        );
        let time = TimesNs::of(b, &c)?;
        let value = Values::of(b, &c)?;
        let keys: Vec<&ArrayRef> = ["namespace", "workload", "pod", "node", "device", "metric"]
            .iter()
            .filter_map(|n| b.column_by_name(n))
            .collect();
        for rows in series_runs(&keys, b.num_rows()) {
            let i = rows.start;
            let Some((lo, hi)) = rows.clone().filter_map(|r| time.get(r)).fold(
                None,
                |acc: Option<(i64, i64)>, t| {
                    Some(acc.map_or((t, t), |(lo, hi)| (lo.min(t), hi.max(t))))
                },
            ) else {
                continue;
            };
            let key: SeriesKey = [
                ns.get(i).map(str::to_string),
                w.get(i).map(str::to_string),
                pod.get(i).map(str::to_string),
                node.get(i).map(str::to_string),
                device.get(i).map(str::to_string),
            ];
            let e = self.extents.entry(key).or_insert((lo, hi));
            e.0 = e.0.min(lo);
            e.1 = e.1.max(hi);
            let Some(m) = metric.get(i) else { continue };
            let is_utilization = UTILIZATION.contains(&m);
            let is_activity = ACTIVITY.contains(&m) && node.get(i).is_some();
            if !is_utilization && !is_activity {
                continue;
            }
            if let (Some(read), Some(p)) = (self.read.as_mut(), pod.get(i)) {
                read.pods
                    .entry((ns.get(i).map(str::to_string), p.to_string()))
                    .or_insert_with(|| basis.pods.mapped(ns.get(i), Some(p)).cloned());
            }
            for workload in basis.pods.name(ns.get(i), w.get(i), pod.get(i)) {
                let samples = rows
                    .clone()
                    .filter_map(|r| time.get(r).map(|t| (t, value.get(r))));
                if is_utilization {
                    self.utilization.push(DeviceRun {
                        namespace: ns.get(i),
                        workload,
                        metric: m,
                        node: node.get(i),
                        device: device.get(i),
                        samples,
                    });
                    continue;
                }
                let wk = (ns.get(i).map(str::to_string), Some(workload.to_string()));
                if self.read.is_none() && !basis.candidates.contains(&wk) {
                    continue;
                }
                let (Some(n), d) = (node.get(i), device.get(i)) else {
                    continue;
                };
                let means = self
                    .activity
                    .entry(wk)
                    .or_default()
                    .entry(m.to_string())
                    .or_default()
                    .entry((n.to_string(), d.map(str::to_string)))
                    .or_default();
                // `avg` of SQL: samples without a value do not count.
                for (t, v) in samples {
                    if let Some(v) = v {
                        means.push(t, basis.activity_bucket_ns, v);
                    }
                }
            }
        }
        Ok(())
    }

    /// The extents, utilization and activity of everything folded.
    pub fn finish(self) -> Result<Scanned> {
        let mut rows: Vec<(SeriesKey, (i64, i64))> = self.extents.into_iter().collect();
        rows.sort();
        let text = |k: usize| -> ArrayRef {
            Arc::new(
                rows.iter()
                    .map(|(key, _)| key[k].as_deref())
                    .collect::<StringArray>(),
            )
        };
        // Stored times are whole microseconds: converting back loses nothing.
        let time = |f: fn(&(i64, i64)) -> i64| -> ArrayRef {
            Arc::new(
                rows.iter()
                    .map(|(_, e)| Some(ns_to_stored(f(e))))
                    .collect::<TimestampMicrosecondArray>()
                    .with_timezone("UTC"),
            )
        };
        let columns = vec![
            text(0),
            text(1),
            text(2),
            text(3),
            text(4),
            time(|e| e.0),
            time(|e| e.1),
        ];
        let extents = RecordBatch::try_new(series_extents_schema(), columns).map_err(|source| {
            AnalyzeError::Arrow {
                what: "series_extents",
                source,
            }
        })?;
        let activity = self
            .activity
            .into_iter()
            .map(|(wk, metrics)| {
                let metrics = metrics
                    .into_iter()
                    .map(|(m, gpus)| {
                        let series = gpus
                            .into_iter()
                            .map(|((node, device), means)| GpuSeries {
                                node,
                                device,
                                points: means.into_points(),
                            })
                            .collect();
                        (m, series)
                    })
                    .collect();
                (wk, metrics)
            })
            .collect();
        Ok(Scanned {
            extents,
            utilization: self.utilization.finish(),
            activity,
        })
    }
}

impl Scanned {
    /// The utilization as rows (namespace, workload, metric, interval_ns, bucket,
    /// value_millionths, samples), for inspecting a scan with SQL.
    pub fn utilization_batch(&self) -> Result<RecordBatch> {
        let mut rows: Vec<(
            &WorkloadName,
            &str,
            Option<i64>,
            &crate::symptoms::throughput::Bucket,
        )> = Vec::new();
        for (wk, metrics) in &self.utilization {
            for (m, (interval, buckets)) in metrics {
                rows.extend(buckets.iter().map(|b| (wk, m.as_str(), *interval, b)));
            }
        }
        let (mut fields, mut columns) = key_columns(rows.iter().map(|r| (r.0, r.1)));
        fields.extend([
            Field::new("interval_ns", DataType::Int64, true),
            Field::new("bucket", DataType::Int64, false),
            Field::new("value_millionths", DataType::Int64, false),
            Field::new("samples", DataType::Int64, false),
        ]);
        columns.extend([
            Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.2))) as ArrayRef,
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.3.index))),
            Arc::new(Int64Array::from_iter_values(
                // The sums were whole millionths: rounding restores them exactly.
                rows.iter().map(|r| (r.3.sum * 1e6).round() as i64),
            )),
            Arc::new(Int64Array::from_iter_values(
                rows.iter()
                    .map(|r| i64::try_from(r.3.samples).unwrap_or(i64::MAX)),
            )),
        ]);
        let schema = Arc::new(Schema::new(fields));
        RecordBatch::try_new(schema, columns).map_err(|source| AnalyzeError::Arrow {
            what: "scanned utilization",
            source,
        })
    }

    /// The GPU activity as rows (namespace, workload, metric, node, device, minute, mean),
    /// for inspecting a scan with SQL.
    pub fn activity_batch(&self) -> Result<RecordBatch> {
        let mut rows: Vec<(&WorkloadName, &str, &GpuSeries, i64, f64)> = Vec::new();
        for (wk, metrics) in &self.activity {
            for (m, gpus) in metrics {
                for g in gpus {
                    rows.extend(g.points.iter().map(|&(t, v)| (wk, m.as_str(), g, t, v)));
                }
            }
        }
        let (mut fields, mut columns) = key_columns(rows.iter().map(|r| (r.0, r.1)));
        fields.extend([
            Field::new("node", DataType::Utf8, false),
            Field::new("device", DataType::Utf8, true),
            Field::new("minute", timestamp_type(), false),
            Field::new("mean", DataType::Float64, false),
        ]);
        columns.extend([
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.2.node.as_str()),
            )) as ArrayRef,
            Arc::new(StringArray::from_iter(
                rows.iter().map(|r| r.2.device.as_deref()),
            )),
            Arc::new(
                TimestampMicrosecondArray::from_iter_values(rows.iter().map(|r| ns_to_stored(r.3)))
                    .with_timezone("UTC"),
            ),
            Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.4))),
        ]);
        let schema = Arc::new(Schema::new(fields));
        RecordBatch::try_new(schema, columns).map_err(|source| AnalyzeError::Arrow {
            what: "scanned activity",
            source,
        })
    }
}

/// The columns that name a series in the inspection batches (namespace, workload, metric),
/// of the rows' keys in order.
fn key_columns<'a>(
    keys: impl Iterator<Item = (&'a WorkloadName, &'a str)> + Clone,
) -> (Vec<Field>, Vec<ArrayRef>) {
    let fields = vec![
        Field::new("namespace", DataType::Utf8, true),
        Field::new("workload", DataType::Utf8, true),
        Field::new("metric", DataType::Utf8, false),
    ];
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter(
            keys.clone().map(|k| k.0.0.as_deref()),
        )),
        Arc::new(StringArray::from_iter(
            keys.clone().map(|k| k.0.1.as_deref()),
        )),
        Arc::new(StringArray::from_iter_values(keys.map(|k| k.1))),
    ];
    (fields, columns)
}

/// A batch's times in nanoseconds: read in place where they are as stored (`StoredTime`,
/// no NULL), else through [`Columns::times`].
enum TimesNs<'b> {
    Micros(&'b [i64]),
    Any(Vec<Option<i64>>),
}

impl<'b> TimesNs<'b> {
    fn of(b: &'b RecordBatch, c: &Columns<'_>) -> Result<Self> {
        let stored = b
            .column_by_name("time")
            .and_then(|a| a.as_primitive_opt::<StoredTime>())
            .filter(|a| a.null_count() == 0);
        Ok(match stored {
            Some(a) => TimesNs::Micros(a.values()),
            None => TimesNs::Any(c.times("time")?),
        })
    }

    fn get(&self, i: usize) -> Option<i64> {
        match self {
            TimesNs::Micros(us) => Some(stored_to_ns(us[i])),
            TimesNs::Any(ns) => ns[i],
        }
    }
}

/// A batch's values: read in place where they are `Float64`, else through
/// [`Columns::floats`].
enum Values<'b> {
    Stored(&'b Float64Array),
    Any(Vec<Option<f64>>),
}

impl<'b> Values<'b> {
    fn of(b: &'b RecordBatch, c: &Columns<'_>) -> Result<Self> {
        let stored = b
            .column_by_name("value")
            .and_then(|a| a.as_any().downcast_ref::<Float64Array>());
        Ok(match stored {
            Some(a) => Values::Stored(a),
            None => Values::Any(c.floats("value")?),
        })
    }

    fn get(&self, i: usize) -> Option<f64> {
        match self {
            Values::Stored(a) => a.is_valid(i).then(|| a.value(i)),
            Values::Any(v) => v[i],
        }
    }
}

/// Per row of a dictionary of texts, an integer equal for equal texts (NULL included) and
/// different otherwise: its key where the dictionary holds each text once (as a Parquet
/// reader's dictionary does), else the key of the text's first entry; -1 for NULL.
fn text_ids(d: &DictionaryArray<Int32Type>) -> std::borrow::Cow<'_, [i32]> {
    let keys = d.keys().values();
    let nulls = d.logical_nulls().filter(|n| n.null_count() > 0);
    let texts = d.values().as_string_opt::<i32>();
    // Where a text repeats in the dictionary, the first entry that holds it.
    let mut first: HashMap<Option<&str>, i32> = HashMap::new();
    let mut canonical: Vec<i32> = Vec::new();
    let mut repeats = false;
    if let Some(t) = texts {
        canonical.reserve(t.len());
        for i in 0..t.len() {
            let text = t.is_valid(i).then(|| t.value(i));
            // (A dictionary's keys are `i32`: so is every index of its values.)
            let id = *first.entry(text).or_insert(i as i32);
            repeats |= id != i as i32;
            canonical.push(id);
        }
    }
    if nulls.is_none() && !repeats && texts.is_some() {
        return std::borrow::Cow::Borrowed(keys);
    }
    let ids = keys
        .iter()
        .enumerate()
        .map(|(i, &k)| {
            let valid = nulls.as_ref().is_none_or(|n| n.is_valid(i));
            match (valid, texts) {
                (false, _) => -1,
                (true, Some(_)) => canonical.get(k as usize).copied().unwrap_or(k),
                // Values of another type: the key as it is.
                (true, None) => k,
            }
        })
        .collect();
    std::borrow::Cow::Owned(ids)
}

/// The rows of a batch in runs of one series: a new run wherever a key column changes.
/// String views are compared whole first (a view equal to its neighbour's is the same
/// string), then by length and prefix, and only strings alike in both by their bytes;
/// dictionaries by [`text_ids`].
fn series_runs(keys: &[&ArrayRef], n: usize) -> Vec<Range<usize>> {
    let mut breaks = vec![false; n];
    for col in keys {
        // (Looked up once: each call through the array is a virtual one.)
        let nulls = col.nulls().filter(|n| n.null_count() > 0);
        let valid = |i: usize| nulls.is_none_or(|n| n.is_valid(i));
        let nulls_differ = |i: usize| nulls.is_some() && valid(i) != valid(i - 1);
        if let Some(a) = col.as_any().downcast_ref::<StringViewArray>() {
            let views = a.views();
            let both_null = |i: usize| !valid(i);
            for i in 1..n {
                if breaks[i] {
                    continue;
                }
                // (NULL's view may equal the empty string's.)
                if nulls_differ(i) {
                    breaks[i] = true;
                    continue;
                }
                if views[i] == views[i - 1] || both_null(i) {
                    continue;
                }
                // Low 32 bits: the length; the next 32: the first four bytes. A string of
                // up to 12 bytes lies whole in its view.
                let (x, y) = (views[i], views[i - 1]);
                let (len, prefix) = (x as u32, (x >> 32) as u32);
                breaks[i] = len != y as u32
                    || len <= 12
                    || prefix != (y >> 32) as u32
                    || a.value(i) != a.value(i - 1);
            }
        } else if let Some(d) = col.as_dictionary_opt::<Int32Type>() {
            // One integer per row, equal exactly where the texts are: compared without a
            // branch per row (the loop vectorizes).
            let ids = text_ids(d);
            for ((b, x), y) in breaks[1..].iter_mut().zip(&ids[1..]).zip(ids.iter()) {
                *b |= x != y;
            }
        } else if let Some(a) = col.as_any().downcast_ref::<StringArray>() {
            for (i, b) in breaks.iter_mut().enumerate().skip(1) {
                *b = *b || nulls_differ(i) || a.value(i) != a.value(i - 1);
            }
        } else {
            // Any other layout: every row its own run (correct, only slower).
            breaks.iter_mut().for_each(|b| *b = true);
        }
    }
    let mut runs = Vec::new();
    let mut start = 0;
    for (i, _) in breaks.iter().enumerate().skip(1).filter(|(_, b)| **b) {
        runs.push(start..i);
        start = i;
    }
    if start < n {
        runs.push(start..n);
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_break_where_any_key_changes_and_cover_every_row_once() {
        let a: ArrayRef = Arc::new(StringViewArray::from(vec![
            Some("n1"),
            Some("n1"),
            Some("n1"),
            None,
            None,
            Some("a-name-longer-than-twelve"),
            Some("a-name-longer-than-twelve"),
        ]));
        let b: ArrayRef = Arc::new(StringArray::from(vec![
            Some("0"),
            Some("0"),
            Some("1"),
            Some("1"),
            Some("1"),
            Some("1"),
            Some("1"),
        ]));
        let empty_or_null: ArrayRef =
            Arc::new(StringViewArray::from(vec![Some(""), None, None, Some("")]));
        assert_eq!(series_runs(&[&empty_or_null], 4), vec![0..1, 1..3, 3..4]);
        let runs = series_runs(&[&a, &b], 7);
        // The long string's two copies lie at two places of the buffer: their views
        // differ, their bytes do not.
        assert_eq!(runs, vec![0..2, 2..3, 3..5, 5..7]);
        assert!(series_runs(&[&a], 0).is_empty());
    }

    #[test]
    fn dictionary_runs_break_where_the_text_changes_whatever_the_keys() {
        use arrow::array::Int32Array;
        // "a" twice in the dictionary (keys 0 and 2), a NULL value (key 3), NULL keys.
        let values = StringArray::from(vec![Some("a"), Some("b"), Some("a"), None]);
        let keys = Int32Array::from(vec![
            Some(0),
            Some(2),
            Some(1),
            Some(1),
            None,
            Some(3),
            None,
            Some(0),
        ]);
        let d: ArrayRef = Arc::new(DictionaryArray::new(keys, Arc::new(values)));
        // Rows 0-1 are "a" (two keys), 2-3 "b", 4-6 NULL (two NULL keys around a NULL
        // value), 7 "a".
        assert_eq!(series_runs(&[&d], 8), vec![0..2, 2..4, 4..7, 7..8]);
        let unique: ArrayRef = Arc::new(DictionaryArray::new(
            Int32Array::from(vec![0, 0, 1, 1, 1]),
            Arc::new(StringArray::from(vec!["x", "y"])),
        ));
        assert_eq!(series_runs(&[&unique], 5), vec![0..2, 2..5]);
        // With a second key column, a run ends where either changes.
        let other: ArrayRef = Arc::new(StringViewArray::from(vec!["1", "1", "1", "2", "2"]));
        assert_eq!(series_runs(&[&unique, &other], 5), vec![0..2, 2..3, 3..5]);
    }

    #[test]
    fn a_sample_counts_for_its_own_workload_once_per_pod_mapping_else_for_its_pods() {
        let mut pods = PodWorkloads::default();
        pods.insert(Some("ml".into()), "p".into(), "a".into());
        pods.insert(Some("ml".into()), "p".into(), "b".into());
        pods.insert(None, "q".into(), "c".into());
        assert_eq!(pods.name(Some("ml"), Some("w"), Some("p")), vec!["w", "w"]);
        assert_eq!(pods.name(Some("ml"), None, Some("p")), vec!["a", "b"]);
        assert_eq!(pods.name(None, None, Some("q")), vec!["c"]);
        // The namespace must match, NULL matching NULL only.
        assert!(pods.name(Some("ml"), None, Some("q")).is_empty());
        assert_eq!(pods.name(Some("x"), Some("w"), Some("p")), vec!["w"]);
        assert!(pods.name(Some("ml"), None, None).is_empty());
    }

    /// A row of a test batch: workload, pod, node, device, metric, seconds, value.
    type Row<'a> = (
        Option<&'a str>,
        &'a str,
        &'a str,
        &'a str,
        &'a str,
        i64,
        f64,
    );

    /// A batch of the scan's columns, in namespace `ml`.
    fn batch(rows: &[Row<'_>]) -> RecordBatch {
        let text = |k: usize| {
            let texts = rows.iter().map(|r| match k {
                0 => Some("ml"),
                1 => r.0,
                2 => Some(r.1),
                3 => Some(r.2),
                4 => Some(r.3),
                _ => Some(r.4),
            });
            Arc::new(texts.collect::<StringArray>()) as ArrayRef
        };
        let columns = vec![
            text(0),
            text(1),
            text(2),
            text(3),
            text(4),
            text(5),
            Arc::new(
                rows.iter()
                    .map(|r| Some(r.5 * 1_000_000))
                    .collect::<TimestampMicrosecondArray>()
                    .with_timezone("UTC"),
            ) as ArrayRef,
            Arc::new(rows.iter().map(|r| Some(r.6)).collect::<Float64Array>()),
        ];
        let text_field = |n: &str| Field::new(n, DataType::Utf8, true);
        let schema = Schema::new(vec![
            text_field("namespace"),
            text_field("workload"),
            text_field("pod"),
            text_field("node"),
            text_field("device"),
            text_field("metric"),
            Field::new("time", timestamp_type(), true),
            Field::new("value", DataType::Float64, true),
        ]);
        RecordBatch::try_new(Arc::new(schema), columns).unwrap()
    }

    fn outputs(fold: ScanFold) -> (RecordBatch, RecordBatch, RecordBatch) {
        let s = fold.finish().unwrap();
        (
            s.extents.clone(),
            s.utilization_batch().unwrap(),
            s.activity_batch().unwrap(),
        )
    }

    #[test]
    fn folds_of_parts_merge_into_the_fold_of_the_whole_to_the_bit() {
        let mut pods = PodWorkloads::default();
        pods.insert(Some("ml".into()), "p0".into(), "train".into());
        let candidates = BTreeSet::from([(Some("ml".to_string()), Some("train".to_string()))]);
        let basis = ScanBasis {
            pods: &pods,
            candidates: &candidates,
            activity_bucket_ns: 60_000_000_000,
        };
        // Two GPUs of `train` (one labelled by its pod only), 0.1-steps that are not
        // exact in binary, a series split across the two parts, an unrelated metric.
        let mut rows = Vec::new();
        for (dev, workload) in [("0", None), ("1", Some("train"))] {
            for k in 0..12 {
                let v = 0.1 * (k % 7) as f64 + 0.3;
                rows.push((workload, "p0", "n1", dev, "sm_active", 15 * k, v));
                rows.push((workload, "p0", "n1", dev, "gpu_util", 15 * k, 100.0 * v));
                rows.push((workload, "p0", "n1", dev, "fb_used", 15 * k, 7.0));
            }
        }
        let mut whole = ScanFold::default();
        whole.fold(&basis, &batch(&rows), "test").unwrap();
        // The parts in reverse order, the rows of each reversed.
        let (a, b) = rows.split_at(rows.len() / 2 + 1);
        let mut merged = ScanFold::default();
        for part in [b, a] {
            let mut reversed = part.to_vec();
            reversed.reverse();
            let mut f = ScanFold::recording(&basis);
            f.fold(&basis, &batch(&reversed), "test").unwrap();
            assert!(f.holds_under(&basis));
            merged.merge(&f, &candidates);
        }
        let (whole, merged) = (outputs(whole), outputs(merged));
        assert_eq!(whole.0.num_rows(), 2);
        assert!(whole.2.num_rows() > 0);
        assert_eq!(whole, merged);
    }

    #[test]
    fn a_fold_holds_while_the_pods_it_read_map_alike_and_keeps_every_workloads_activity() {
        let mut pods = PodWorkloads::default();
        pods.insert(Some("ml".into()), "p0".into(), "train".into());
        pods.insert(Some("ml".into()), "p0".into(), "eval".into());
        let train = (Some("ml".to_string()), Some("train".to_string()));
        let candidates = BTreeSet::from([train.clone()]);
        let basis = ScanBasis {
            pods: &pods,
            candidates: &candidates,
            activity_bucket_ns: 60_000_000_000,
        };
        let rows = [(None, "p0", "n1", "0", "sm_active", 0, 0.5)];
        let mut f = ScanFold::recording(&basis);
        f.fold(&basis, &batch(&rows), "test").unwrap();
        assert!(f.holds_under(&basis));
        // Another pod mapped, or another workload a candidate: nothing it read changed.
        // (The same rows of `pod_workloads` in another order map the pod alike.)
        let mut more = PodWorkloads::default();
        more.insert(Some("ml".into()), "p9".into(), "serve".into());
        more.insert(Some("ml".into()), "p0".into(), "eval".into());
        more.insert(Some("ml".into()), "p0".into(), "train".into());
        let wider = BTreeSet::from([train.clone(), (Some("ml".into()), Some("serve".into()))]);
        let same = ScanBasis {
            pods: &more,
            candidates: &wider,
            ..basis
        };
        assert!(f.holds_under(&same));
        // Its pod now maps to one workload: it does not hold.
        let mut remapped = PodWorkloads::default();
        remapped.insert(Some("ml".into()), "p0".into(), "train".into());
        assert!(!f.holds_under(&ScanBasis {
            pods: &remapped,
            ..basis
        }));
        // No candidate: it holds (it keeps every workload's activity), and merging it
        // for no candidate gives no activity; for `train`, train's only (not `eval`'s).
        let none = BTreeSet::new();
        assert!(f.holds_under(&ScanBasis {
            candidates: &none,
            ..basis
        }));
        let activity = |candidates: &BTreeSet<WorkloadName>| {
            let mut total = ScanFold::default();
            total.merge(&f, candidates);
            let mut names: Vec<_> = total.activity.keys().cloned().collect();
            names.dedup();
            names
        };
        assert!(activity(&none).is_empty());
        assert_eq!(activity(&candidates), vec![train.clone()]);
        assert_eq!(f.activity.len(), 2);
        assert!(!f.holds_under(&ScanBasis {
            activity_bucket_ns: 30_000_000_000,
            ..basis
        }));
        // A fold that kept nothing of what it read is never known to hold.
        let mut plain = ScanFold::default();
        plain.fold(&basis, &batch(&rows), "test").unwrap();
        assert!(!plain.holds_under(&basis));
    }
}

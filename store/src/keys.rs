//! Row identity: the `(lead, hash)` key that makes re-ingesting the same input add nothing.
//!
//! - `events`: (`time`, xxh3-64 of `event_id`)
//! - `metrics`: (`time`, xxh3-64 of the series: `metric`, `source`, the scope columns,
//!   `rank`, whether there is a `step`, `labels` sorted by key; plus the `step`) — the
//!   value is not part of it: a series has one sample per timestamp
//! - `dead_letters`: xxh3-128 of (`source_ref`, `payload`) split in two (its time column is
//!   the ingest time, which differs between runs)
//! - `slowdowns`: (`start`, xxh3-64 of `slowdown_id`)
//! - `causes`: xxh3-128 of (`slowdown_id`, `rank`, `cause`)
//!
//! Keys sort by `lead` first; for time-led keys that is the time, so a commit only compares
//! against segments whose time range overlaps its rows.

use arrow::array::{
    Array, AsArray, BinaryArray, Int32Array, Int64Array, MapArray, RecordBatch, StringArray,
    TimestampMicrosecondArray,
};
use whyslow_schemas::Table;
use whyslow_schemas::tables::SCOPE_COLUMNS;
use xxhash_rust::xxh3::{xxh3_64, xxh3_128};

/// The identity of one row; equal keys are the same row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    /// Time as stored (µs) for time-led tables, else the high half of a 128-bit hash.
    pub lead: i64,
    /// The row's hash (low half of the 128-bit hash for hash-led tables).
    pub hash: u64,
}

/// A column the key needs was missing or had another type (the schema check prevents it).
#[derive(Debug)]
pub struct MissingColumn(pub &'static str);

fn col<'a, T: 'static>(b: &'a RecordBatch, name: &'static str) -> Result<&'a T, MissingColumn> {
    b.column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<T>())
        .ok_or(MissingColumn(name))
}

fn times<'a>(b: &'a RecordBatch, name: &'static str) -> Result<&'a [i64], MissingColumn> {
    Ok(col::<TimestampMicrosecondArray>(b, name)?.values())
}

/// Appends length-prefixed, null-marked fields to a reusable buffer.
struct Fields(Vec<u8>);

impl Fields {
    fn str(&mut self, s: Option<&str>) {
        self.bytes(s.map(str::as_bytes));
    }

    fn bytes(&mut self, b: Option<&[u8]>) {
        match b {
            Some(b) => {
                self.0.push(1);
                self.0.extend_from_slice(&(b.len() as u64).to_le_bytes());
                self.0.extend_from_slice(b);
            }
            None => self.0.push(0),
        }
    }

    fn int(&mut self, v: Option<i64>) {
        match v {
            Some(v) => {
                self.0.push(1);
                self.0.extend_from_slice(&v.to_le_bytes());
            }
            None => self.0.push(0),
        }
    }
}

fn opt_str(a: &StringArray, i: usize) -> Option<&str> {
    a.is_valid(i).then(|| a.value(i))
}

fn split128(h: u128) -> Key {
    Key {
        lead: (h >> 64) as u64 as i64,
        hash: h as u64,
    }
}

/// The key of every row of `batch`, a batch of `table`.
pub fn row_keys(table: Table, batch: &RecordBatch) -> Result<Vec<Key>, MissingColumn> {
    let n = batch.num_rows();
    let mut out = Vec::with_capacity(n);
    let mut f = Fields(Vec::with_capacity(256));
    match table {
        Table::Events => {
            let t = times(batch, "time")?;
            let id = col::<StringArray>(batch, "event_id")?;
            for (i, &lead) in t.iter().enumerate().take(n) {
                out.push(Key {
                    lead,
                    hash: xxh3_64(id.value(i).as_bytes()),
                });
            }
        }
        Table::Metrics => {
            let t = times(batch, "time")?;
            let metric = col::<StringArray>(batch, "metric")?;
            let source = col::<StringArray>(batch, "source")?;
            let mut scope = Vec::with_capacity(SCOPE_COLUMNS.len());
            for c in SCOPE_COLUMNS {
                scope.push(col::<StringArray>(batch, c)?);
            }
            let rank = col::<Int32Array>(batch, "rank")?;
            let step = col::<Int64Array>(batch, "step")?;
            let labels = col::<MapArray>(batch, "labels")?;
            let lkeys = labels
                .keys()
                .as_string_opt::<i32>()
                .ok_or(MissingColumn("labels.keys"))?;
            let lvals = labels
                .values()
                .as_string_opt::<i32>()
                .ok_or(MissingColumn("labels.values"))?;
            let offsets = labels.value_offsets();
            let mut pairs: Vec<(&str, Option<&str>)> = Vec::new();
            for i in 0..n {
                f.0.clear();
                f.str(Some(metric.value(i)));
                f.str(Some(source.value(i)));
                for s in &scope {
                    f.str(opt_str(s, i));
                }
                f.int(rank.is_valid(i).then(|| i64::from(rank.value(i))));
                // Whether there is a step is hashed; its value is added to the hash, so
                // that a rank's successive steps have neighbouring hashes, which the key
                // file's dictionary stores in a byte or two instead of eight.
                let step = step.is_valid(i).then(|| step.value(i));
                f.int(step.map(|_| 0));
                if labels.is_valid(i) {
                    pairs.clear();
                    for j in offsets[i] as usize..offsets[i + 1] as usize {
                        pairs.push((lkeys.value(j), lvals.is_valid(j).then(|| lvals.value(j))));
                    }
                    pairs.sort_unstable();
                    f.int(Some(pairs.len() as i64));
                    for (k, v) in &pairs {
                        f.str(Some(k));
                        f.str(*v);
                    }
                } else {
                    f.int(None);
                }
                out.push(Key {
                    lead: t[i],
                    hash: xxh3_64(&f.0).wrapping_add(step.unwrap_or(0) as u64),
                });
            }
        }
        Table::DeadLetters => {
            let source_ref = col::<StringArray>(batch, "source_ref")?;
            let payload = col::<BinaryArray>(batch, "payload")?;
            for i in 0..n {
                f.0.clear();
                f.str(Some(source_ref.value(i)));
                f.bytes(Some(payload.value(i)));
                out.push(split128(xxh3_128(&f.0)));
            }
        }
        Table::Slowdowns => {
            let t = times(batch, "start")?;
            let id = col::<StringArray>(batch, "slowdown_id")?;
            for (i, &lead) in t.iter().enumerate().take(n) {
                out.push(Key {
                    lead,
                    hash: xxh3_64(id.value(i).as_bytes()),
                });
            }
        }
        Table::Incidents => {
            let t = times(batch, "published_at")?;
            let id = col::<StringArray>(batch, "incident_id")?;
            let revision = col::<Int64Array>(batch, "revision")?;
            for (i, &lead) in t.iter().enumerate().take(n) {
                f.0.clear();
                f.str(Some(id.value(i)));
                f.int(Some(revision.value(i)));
                out.push(Key {
                    lead,
                    hash: xxh3_64(&f.0),
                });
            }
        }
        Table::Causes => {
            let id = col::<StringArray>(batch, "slowdown_id")?;
            let rank = col::<Int32Array>(batch, "rank")?;
            let cause = col::<StringArray>(batch, "cause")?;
            for i in 0..n {
                f.0.clear();
                f.str(Some(id.value(i)));
                f.int(Some(i64::from(rank.value(i))));
                f.str(Some(cause.value(i)));
                out.push(split128(xxh3_128(&f.0)));
            }
        }
    }
    Ok(out)
}

/// The table's time column values, if it has one.
pub fn time_values(table: Table, batch: &RecordBatch) -> Result<Option<&[i64]>, MissingColumn> {
    match table.time_column() {
        Some(c) => times(batch, c).map(Some),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use whyslow_schemas::MetricsBuilder;
    use whyslow_schemas::builders::{MetricRow, Scope};
    use whyslow_schemas::layer::Layer;

    /// Step times of rank 0 of one run at one instant, with the given steps.
    fn step_rows(steps: &[Option<i64>]) -> Vec<Key> {
        let mut b = MetricsBuilder::new(0);
        for &step in steps {
            let row = MetricRow {
                time_ns: 1_000_000_000,
                layer: Layer::Framework,
                source: "sdk",
                metric: "step_time_seconds",
                value: 1.5,
                scope: Scope {
                    workload: Some("train"),
                    ..Scope::default()
                },
                rank: Some(0),
                step,
            };
            b.append(&row, std::iter::empty::<(&str, &str)>());
        }
        row_keys(Table::Metrics, &b.finish()).unwrap()
    }

    #[test]
    fn steps_are_part_of_a_metric_sample_identity() {
        let k = step_rows(&[None, Some(0), Some(1), Some(2), Some(1)]);
        assert_ne!(k[0], k[1], "no step and step 0 are different samples");
        assert_ne!(k[1], k[2]);
        assert_ne!(k[2], k[3]);
        assert_eq!(
            k[2], k[4],
            "the same step at the same time is the same sample"
        );
        // Successive steps of one series have neighbouring hashes (the key file's
        // dictionary delta-codes them).
        assert_eq!(k[3].hash.wrapping_sub(k[2].hash), 1);
    }
}

//! Every Kafka offset a Delta table records: the latest `txn` action of each of its
//! application ids, read from the newest checkpoint at or below the table's version and
//! the commits after it. delta-rs answers one application id at a time; a worker given
//! partitions after a rebalance, and `whyslow` showing what a store holds, need them all.

use std::collections::BTreeMap;

use arrow::array::{Array, AsArray, Int64Array, StringArray};
use arrow::datatypes::DataType;
use deltalake_core::{DeltaTable, DeltaTableError, ObjectStore};
use futures::TryStreamExt;
use object_store::ObjectStoreExt;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde::Deserialize;

use super::KAFKA_APP_PREFIX;
#[cfg(test)]
use super::kafka_app_id;

/// One `txn` action as the log's JSON has it.
#[derive(Deserialize)]
struct Txn {
    #[serde(rename = "appId")]
    app_id: String,
    version: i64,
}

/// A line of a commit file: only its `txn` action, if it is one.
#[derive(Deserialize)]
struct Line {
    txn: Option<Txn>,
}

/// The (topic, partition) an application id of [`super::kafka_app_id`] names.
pub fn parse_kafka_app_id(app_id: &str) -> Option<(String, i32)> {
    let rest = app_id.strip_prefix(KAFKA_APP_PREFIX)?;
    let (topic, partition) = rest.rsplit_once('/')?;
    Some((topic.to_string(), partition.parse().ok()?))
}

/// The latest version of every application id `delta` records at its loaded version.
pub async fn application_transactions(
    delta: &DeltaTable,
) -> Result<BTreeMap<String, i64>, DeltaTableError> {
    let mut out = BTreeMap::new();
    let Some(version) = delta.version() else {
        return Ok(out);
    };
    let log_store = delta.log_store();
    let store = log_store.object_store(None);
    let listed: Vec<_> = store.list(Some(log_store.log_path())).try_collect().await?;
    // The newest checkpoint at or below `version`, with every part it has.
    let mut checkpoint: Option<(u64, Vec<deltalake_core::Path>)> = None;
    for meta in listed {
        let Some(name) = meta.location.filename() else {
            continue;
        };
        let Some(v) = checkpoint_version(name) else {
            continue;
        };
        if v > version {
            continue;
        }
        match &mut checkpoint {
            Some((at, parts)) if *at == v => parts.push(meta.location.clone()),
            Some((at, _)) if *at > v => {}
            _ => checkpoint = Some((v, vec![meta.location.clone()])),
        }
    }
    let first_commit = match checkpoint {
        Some((v, parts)) => {
            for part in parts {
                let bytes = store.get(&part).await?.bytes().await?;
                read_checkpoint(bytes, &mut out)?;
            }
            v + 1
        }
        None => 0,
    };
    for v in first_commit..=version {
        let Some(bytes) = log_store.read_commit_entry(v).await? else {
            continue;
        };
        for line in bytes.split(|&b| b == b'\n') {
            // Only lines that can hold a `txn` action are parsed.
            if !line.windows(6).any(|w| w == b"\"txn\":") {
                continue;
            }
            let parsed: Line =
                serde_json::from_slice(line).map_err(|e| DeltaTableError::InvalidJsonLog {
                    json_err: e,
                    line: String::from_utf8_lossy(line).into_owned(),
                    version: v,
                })?;
            if let Some(txn) = parsed.txn {
                out.insert(txn.app_id, txn.version);
            }
        }
    }
    Ok(out)
}

/// The version of a checkpoint file's name (`<v:020>.checkpoint.parquet`, a part of a
/// multi-part one `<v>.checkpoint.<i>.<n>.parquet`, or a V2 `<v>.checkpoint.<uuid>.parquet`).
fn checkpoint_version(name: &str) -> Option<u64> {
    let (digits, rest) = name.split_at_checked(20)?;
    if !digits.bytes().all(|b| b.is_ascii_digit())
        || !rest.starts_with(".checkpoint.")
        || !rest.ends_with(".parquet")
    {
        return None;
    }
    digits.parse().ok()
}

/// Adds the `txn` actions of one checkpoint file to `out`.
fn read_checkpoint(
    bytes: bytes::Bytes,
    out: &mut BTreeMap<String, i64>,
) -> Result<(), DeltaTableError> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes)?;
    let Some(index) = builder
        .schema()
        .fields()
        .iter()
        .position(|f| f.name() == "txn")
    else {
        return Ok(());
    };
    let mask = ProjectionMask::roots(builder.parquet_schema(), [index]);
    let reader = builder.with_projection(mask).build()?;
    for batch in reader {
        let batch = batch?;
        let txn = batch.column(0).as_struct();
        let (Some(app), Some(version)) =
            (txn.column_by_name("appId"), txn.column_by_name("version"))
        else {
            continue;
        };
        let app = arrow::compute::cast(app, &DataType::Utf8)?;
        let app: &StringArray = app.as_string();
        let version = arrow::compute::cast(version, &DataType::Int64)?;
        let version: &Int64Array = version.as_primitive();
        for i in 0..txn.len() {
            if txn.is_valid(i) && app.is_valid(i) && version.is_valid(i) {
                out.insert(app.value(i).to_string(), version.value(i));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_app_ids_name_their_partition() {
        assert_eq!(
            parse_kafka_app_id(&kafka_app_id("gpu.kmsg", 7)),
            Some(("gpu.kmsg".to_string(), 7))
        );
        assert_eq!(parse_kafka_app_id("spark-job-1"), None);
        assert_eq!(parse_kafka_app_id("whyslow.kafka/t/x"), None);
    }

    #[test]
    fn checkpoint_names_of_every_kind_give_their_version() {
        let v = "00000000000000000010";
        assert_eq!(
            checkpoint_version(&format!("{v}.checkpoint.parquet")),
            Some(10)
        );
        assert_eq!(
            checkpoint_version(&format!("{v}.checkpoint.0000000001.0000000002.parquet")),
            Some(10)
        );
        assert_eq!(checkpoint_version(&format!("{v}.json")), None);
        assert_eq!(checkpoint_version("_last_checkpoint"), None);
        assert_eq!(
            checkpoint_version(&format!("{v}.checkpoint.parquet.tmp")),
            None
        );
    }
}

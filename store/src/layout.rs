//! Whether a store's segments have today's column types: a store written before times
//! became microseconds (and maps took the Parquet spec's names) is refused with one clear
//! sentence, since its row keys would not match new rows' and re-ingesting would double them.

use std::fs::File;

use parquet::arrow::parquet_to_arrow_schema;
use parquet::file::reader::{FileReader, SerializedFileReader};
use whyslow_schemas::Table;

use super::{Store, StoreError};

/// Checks the first segment of each table against the table's schema: time columns and
/// maps must have today's types. Reads one Parquet footer per table that has segments.
pub fn check(store: &Store) -> Result<(), StoreError> {
    for table in Table::ALL {
        let Some(seg) = store.segments(table).into_iter().next() else {
            continue;
        };
        let parquet = |source| StoreError::Parquet {
            path: seg.path.clone(),
            source,
        };
        let file = File::open(&seg.path).map_err(|e| StoreError::io("open", &seg.path, e))?;
        let reader = SerializedFileReader::new(file).map_err(parquet)?;
        let meta = reader.metadata().file_metadata();
        let found = parquet_to_arrow_schema(meta.schema_descr(), meta.key_value_metadata())
            .map_err(parquet)?;
        let want = table.schema();
        for field in want.fields() {
            let is_checked = matches!(
                field.data_type(),
                arrow::datatypes::DataType::Timestamp(..) | arrow::datatypes::DataType::Map(..)
            );
            let Ok(has) = found.field_with_name(field.name()) else {
                continue;
            };
            if is_checked && has.data_type() != field.data_type() {
                return Err(StoreError::OldLayout {
                    path: store.root().to_path_buf(),
                    detail: format!(
                        "{}.{} is {} in {}, not {}",
                        table.name(),
                        field.name(),
                        has.data_type(),
                        seg.path.display(),
                        field.data_type()
                    ),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, RecordBatch, TimestampNanosecondArray, new_null_array};
    use arrow::datatypes::{DataType, Field, Schema, TimeUnit};

    use super::*;
    use crate::StoreWriter;

    #[test]
    fn a_store_of_todays_segments_passes() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = StoreWriter::open(dir.path()).unwrap();
        let mut b = whyslow_schemas::EventsBuilder::new(1_795_947_300_000_000_000);
        b.append(
            &whyslow_schemas::builders::EventRow {
                time_ns: 1_795_947_300_123_456_789,
                event_id: "e1",
                layer: whyslow_schemas::Layer::Infrastructure,
                source: "dcgm",
                kind: "xid",
                severity: whyslow_schemas::Severity::Error,
                scope: Default::default(),
                reason: None,
                message: None,
            },
            [("code", "79")],
        );
        w.append(Table::Events, b.finish()).unwrap();
        w.commit(&[]).unwrap();
        drop(w);
        check(&Store::open(dir.path()).unwrap()).unwrap();
    }

    #[test]
    fn a_segment_with_nanosecond_times_is_an_old_layout() {
        let dir = tempfile::tempdir().unwrap();
        // A segment as an older whyslow wrote it: the same columns, times in ns.
        let today = Table::DeadLetters.schema();
        let old: Vec<Field> = today
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                DataType::Timestamp(..) => Field::new(
                    f.name(),
                    DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
                    f.is_nullable(),
                ),
                _ => f.as_ref().clone(),
            })
            .collect();
        let old = Arc::new(Schema::new(old));
        let cols: Vec<ArrayRef> = old
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                DataType::Timestamp(..) => {
                    Arc::new(TimestampNanosecondArray::from(vec![1]).with_timezone("UTC"))
                        as ArrayRef
                }
                DataType::Utf8 => Arc::new(arrow::array::StringArray::from(vec!["x"])),
                DataType::Binary => Arc::new(arrow::array::BinaryArray::from(vec![&b"x"[..]])),
                t => new_null_array(t, 1),
            })
            .collect();
        let batch = RecordBatch::try_new(old.clone(), cols).unwrap();
        // Commit today's letter, then put the old file in its place (as if the store had
        // been written by the older version).
        let mut w = StoreWriter::open(dir.path()).unwrap();
        let mut letters = whyslow_schemas::DeadLetterBuilder::new(1_000);
        letters.append(&whyslow_schemas::DeadLetter::whole(
            whyslow_schemas::Origin::File {
                path: "a.log",
                line: 1,
            },
            "kmsg",
            "bad",
            b"x",
        ));
        w.append(Table::DeadLetters, letters.finish()).unwrap();
        w.commit(&[]).unwrap();
        drop(w);
        let seg = Store::open(dir.path())
            .unwrap()
            .segments(Table::DeadLetters)[0]
            .path
            .clone();
        let mut pq =
            parquet::arrow::ArrowWriter::try_new(File::create(&seg).unwrap(), old, None).unwrap();
        pq.write(&batch).unwrap();
        pq.close().unwrap();
        let err = check(&Store::open(dir.path()).unwrap()).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("older whyslow") && text.contains("dead_letters.ingest_time"),
            "{text}"
        );
        // And a writer refuses to open it, before anything is written.
        assert!(matches!(
            StoreWriter::open(dir.path()),
            Err(StoreError::OldLayout { .. })
        ));
    }
}

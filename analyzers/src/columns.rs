//! Reading query results by column name whatever the physical string, integer or time
//! type DataFusion chose (Utf8, Utf8View or a dictionary of strings, Int32 or Int64, any
//! timestamp unit).

use arrow::array::{
    Array, ArrayRef, AsArray, DictionaryArray, RecordBatch, StringArray, StringViewArray,
};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Float64Type, Int32Type, Int64Type, TimeUnit};

use crate::{AnalyzeError, Result};

/// A text column of a result batch (see [`Columns::texts`]): the batch's own array, in
/// one of the string layouts DataFusion or a segment scan produces.
pub enum Texts {
    Utf8(StringArray),
    View(StringViewArray),
    /// A dictionary of strings (`whyslow_queries::dictionary_scan`) and its values.
    Dictionary(DictionaryArray<Int32Type>, StringArray),
}

impl Texts {
    /// The text of row `i`; `None` where it is NULL.
    pub fn get(&self, i: usize) -> Option<&str> {
        match self {
            Texts::Utf8(a) => a.is_valid(i).then(|| a.value(i)),
            Texts::View(a) => a.is_valid(i).then(|| a.value(i)),
            Texts::Dictionary(d, values) => d.key(i).and_then(|k| {
                // (Keys index the values: an array whose keys did not was never built.)
                values.is_valid(k).then(|| values.value(k))
            }),
        }
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        match self {
            Texts::Utf8(a) => a.len(),
            Texts::View(a) => a.len(),
            Texts::Dictionary(d, _) => d.len(),
        }
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The columns of one result batch, read by name.
pub struct Columns<'a> {
    batch: &'a RecordBatch,
    file: &'static str,
}

impl<'a> Columns<'a> {
    /// Columns of `batch`, which came from the SQL file `file` (named in errors).
    pub fn new(batch: &'a RecordBatch, file: &'static str) -> Self {
        Columns { batch, file }
    }

    /// Whether the batch has a column `name`.
    pub fn has(&self, name: &str) -> bool {
        self.batch.column_by_name(name).is_some()
    }

    fn cast(&self, name: &str, to: &DataType) -> Result<ArrayRef> {
        let col = self
            .batch
            .column_by_name(name)
            .ok_or_else(|| AnalyzeError::Shape {
                file: self.file,
                column: name.to_string(),
                detail: "missing".to_string(),
            })?;
        cast(col, to).map_err(|e| AnalyzeError::Shape {
            file: self.file,
            column: name.to_string(),
            detail: e.to_string(),
        })
    }

    /// A text column, one owned string per row.
    pub fn strings(&self, name: &str) -> Result<Vec<Option<String>>> {
        let a = self.texts(name)?;
        Ok((0..a.len()).map(|i| a.get(i).map(str::to_string)).collect())
    }

    /// A text column read in place: rows borrow the batch's buffers, nothing is copied
    /// (a column of another type is cast to text first).
    pub fn texts(&self, name: &str) -> Result<Texts> {
        if let Some(col) = self.batch.column_by_name(name) {
            match col.data_type() {
                DataType::Utf8View => return Ok(Texts::View(col.as_string_view().clone())),
                DataType::Utf8 => return Ok(Texts::Utf8(col.as_string::<i32>().clone())),
                DataType::Dictionary(k, v) if **k == DataType::Int32 && **v == DataType::Utf8 => {
                    let d = col.as_dictionary::<Int32Type>().clone();
                    let values = d.values().as_string::<i32>().clone();
                    return Ok(Texts::Dictionary(d, values));
                }
                _ => {}
            }
        }
        let a = self.cast(name, &DataType::Utf8)?;
        Ok(Texts::Utf8(a.as_string::<i32>().clone()))
    }

    /// A timestamp column as nanoseconds since the epoch.
    pub fn times(&self, name: &str) -> Result<Vec<Option<i64>>> {
        let a = self.cast(
            name,
            &DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
        )?;
        let a = cast(&a, &DataType::Int64).map_err(|e| AnalyzeError::Shape {
            file: self.file,
            column: name.to_string(),
            detail: e.to_string(),
        })?;
        let a = a.as_primitive::<Int64Type>();
        Ok((0..a.len())
            .map(|i| a.is_valid(i).then(|| a.value(i)))
            .collect())
    }

    /// A numeric column as f64.
    pub fn floats(&self, name: &str) -> Result<Vec<Option<f64>>> {
        let a = self.cast(name, &DataType::Float64)?;
        let a = a.as_primitive::<Float64Type>();
        Ok((0..a.len())
            .map(|i| a.is_valid(i).then(|| a.value(i)))
            .collect())
    }

    /// An integer column as i64.
    pub fn ints(&self, name: &str) -> Result<Vec<Option<i64>>> {
        let a = self.cast(name, &DataType::Int64)?;
        let a = a.as_primitive::<Int64Type>();
        Ok((0..a.len())
            .map(|i| a.is_valid(i).then(|| a.value(i)))
            .collect())
    }

    /// A list-of-text column (NULL reads as an empty list).
    pub fn string_lists(&self, name: &str) -> Result<Vec<Vec<String>>> {
        let col = self
            .batch
            .column_by_name(name)
            .ok_or_else(|| AnalyzeError::Shape {
                file: self.file,
                column: name.to_string(),
                detail: "missing".to_string(),
            })?;
        if col.data_type() == &DataType::Null {
            return Ok(vec![Vec::new(); col.len()]);
        }
        let list_type = DataType::List(std::sync::Arc::new(arrow::datatypes::Field::new(
            "item",
            DataType::Utf8,
            true,
        )));
        let a = self.cast(name, &list_type)?;
        let a = a.as_list::<i32>();
        Ok((0..a.len())
            .map(|i| {
                if a.is_null(i) {
                    return Vec::new();
                }
                let v = a.value(i);
                let s = v.as_string::<i32>();
                (0..s.len())
                    .filter(|&j| s.is_valid(j))
                    .map(|j| s.value(j).to_string())
                    .collect()
            })
            .collect())
    }
}

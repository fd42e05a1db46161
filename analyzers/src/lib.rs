//! Detectors, layered cause rules, attribution and reports.
//!
//! The flow, one module per stage, over a session whose tables and state views
//! `whyslow-queries` registers: [`analyze`] reads the series with the symptom queries and
//! runs the stages in order over a window; [`symptoms`] finds slowdowns in metric series;
//! [`causes`] runs the per-layer SQL rules that propose candidate causes for each;
//! [`attribution`] scores them, builds causal chains and accounts lost time; [`settle`]
//! names each finding; [`report`] renders the result and [`output`] writes the derived
//! tables. [`live`] runs the same analysis after each commit of a stream worker.

pub mod accuracy;
pub mod analyze;
pub mod attribution;
pub mod causes;
pub mod columns;
pub mod command;
pub mod error;
pub mod live;
pub mod output;
pub mod replay;
pub mod report;
pub mod settle;
pub mod sql;
pub mod symptoms;

pub use analyze::{Analysis, Finding, Selection, analyze};
pub use error::{AnalyzeError, Error, Result};
pub use symptoms::DetectorConfig;

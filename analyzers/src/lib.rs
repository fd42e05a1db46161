//! Detectors, layered cause rules, attribution and reports.
//!
//! The flow, one module per stage: [`state`] registers the SQL views that rebuild state
//! from the event log; [`symptoms`] finds slowdowns in metric series; [`causes`] runs the
//! per-layer SQL rules that propose candidate causes for each; [`attribution`] scores
//! them, builds causal chains and accounts lost time; [`report`] renders the result.
//! [`analyze`] runs them in order over a window of a session.

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

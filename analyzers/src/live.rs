//! Streaming verdicts: the analyzers run after each committed batch of `whyslow stream`
//! and publish incidents that open, change and end as evidence arrives.

pub mod alertmanager;
pub mod hook;
pub mod message;
pub mod metrics;
pub mod publisher;
pub mod runner;
pub mod standing;
pub mod tracker;

pub use runner::{LiveAnalyzer, LiveOptions, LiveSummary};
pub use standing::{published_incidents, standing_incidents};
pub use tracker::{Published, Revision, Sighting, Status, Tracker};

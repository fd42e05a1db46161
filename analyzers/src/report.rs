//! The report of `contracts/report.md`: its JSON model, how it is built from an analysis,
//! and its renderings (JSON, Markdown, self-contained HTML with SVG timelines).

pub mod build;
pub mod html;
pub mod markdown;
pub mod model;

pub use model::{CauseEntry, ChainLink, ProfileEntry, Report, Slowdown, Window, WorkloadSummary};

use crate::analyze::Analysis;

/// The output formats of `whyslow report --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Markdown,
    Json,
    Html,
}

impl Format {
    /// Every name `--format` takes (`markdown` is `md`).
    pub const NAMES: [&str; 4] = ["md", "json", "html", "markdown"];
}

impl std::str::FromStr for Format {
    type Err = crate::AnalyzeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "md" | "markdown" => Ok(Format::Markdown),
            "json" => Ok(Format::Json),
            "html" => Ok(Format::Html),
            _ => Err(crate::AnalyzeError::Usage(format!(
                "unknown report format '{s}' (expected md, json or html)"
            ))),
        }
    }
}

/// Renders a report in a format; JSON is pretty-printed and ends with a newline.
pub fn render(report: &Report, analysis: &Analysis, format: Format) -> crate::Result<String> {
    Ok(match format {
        Format::Json => serde_json::to_string_pretty(report)? + "\n",
        Format::Markdown => markdown::render(report),
        Format::Html => html::render(report, analysis),
    })
}

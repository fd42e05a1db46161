//! Detectors, layered cause rules, attribution and reports.

//! The three layers a cause or event belongs to, and event severities.

use std::fmt;
use std::str::FromStr;

use crate::UnknownId;

/// Where in the stack something happened.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    /// Hardware, hosts, networks, storage.
    Infrastructure,
    /// Kubernetes, Kueue, Slurm: what decides where and whether a workload runs.
    Orchestrator,
    /// The training or serving program itself.
    Framework,
}

impl Layer {
    /// Every layer, bottom up.
    pub const ALL: [Layer; 3] = [Layer::Infrastructure, Layer::Orchestrator, Layer::Framework];

    /// The id used in tables and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Infrastructure => "infrastructure",
            Layer::Orchestrator => "orchestrator",
            Layer::Framework => "framework",
        }
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Layer {
    type Err = UnknownId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Layer::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| UnknownId {
                what: "layer",
                value: s.to_string(),
            })
    }
}

/// How bad an event is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
    Critical,
}

impl Severity {
    /// Every severity, mildest first.
    pub const ALL: [Severity; 4] = [
        Severity::Info,
        Severity::Warning,
        Severity::Error,
        Severity::Critical,
    ];

    /// The id used in tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
            Severity::Critical => "critical",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Severity {
    type Err = UnknownId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Severity::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| UnknownId {
                what: "severity",
                value: s.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_and_severities_round_trip() {
        for l in Layer::ALL {
            assert_eq!(l.to_string().parse::<Layer>().unwrap(), l);
        }
        for s in Severity::ALL {
            assert_eq!(s.to_string().parse::<Severity>().unwrap(), s);
        }
        assert!("kernel".parse::<Layer>().is_err());
        assert_eq!("fatal".parse::<Severity>().unwrap_err().value, "fatal");
    }
}

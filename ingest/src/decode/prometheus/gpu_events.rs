//! Events from dcgm-exporter gauges whose value is a state: `DCGM_FI_DEV_XID_ERRORS` (the
//! last Xid code) and the clock-throttle reason bitmask. Each series (node, GPU, MIG
//! instance) remembers its last value within one input stream; a change becomes an event.

use std::collections::HashMap;

use whyslow_schemas::Severity;

use whyslow_schemas::nvidia::{self, ThrottleReasons, XidInfo};

/// The series kept per stream at most; past it the memory starts over (a change may then
/// be reported twice, never missed).
const MAX_SERIES: usize = 200_000;

/// Which state gauge a sample is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateGauge {
    /// `DCGM_FI_DEV_XID_ERRORS`: the last Xid code, 0 for none.
    Xid,
    /// `DCGM_FI_DEV_CLOCK_THROTTLE_REASONS` / `DCGM_FI_DEV_CLOCKS_EVENT_REASONS`.
    Throttle,
}

impl StateGauge {
    /// The state gauge a dcgm field name is, if any.
    pub fn of(dcgm_name: &str) -> Option<StateGauge> {
        match dcgm_name {
            "DCGM_FI_DEV_XID_ERRORS" => Some(StateGauge::Xid),
            "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" | "DCGM_FI_DEV_CLOCKS_EVENT_REASONS" => {
                Some(StateGauge::Throttle)
            }
            _ => None,
        }
    }
}

/// An event a state change calls for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A new nonzero Xid code.
    Xid {
        code: u32,
        info: XidInfo,
        previous: Option<u64>,
    },
    /// The slowdown bits of the throttle mask changed (to nonzero: `clock_throttle`;
    /// to zero: `clock_throttle_cleared`).
    Throttle {
        mask: ThrottleReasons,
        previous: Option<u64>,
    },
}

impl Change {
    /// The event kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Change::Xid { .. } => "xid",
            Change::Throttle { mask, .. } if mask.slowdown_bits() != 0 => "clock_throttle",
            Change::Throttle { .. } => "clock_throttle_cleared",
        }
    }

    /// The event severity.
    pub fn severity(&self) -> Severity {
        match self {
            Change::Xid { info, .. } => info.severity,
            Change::Throttle { mask, .. } => mask.class().1,
        }
    }
}

/// The last value of every state series seen in one stream.
#[derive(Debug, Default)]
pub struct StateMemory {
    last: HashMap<String, u64>,
    key: String,
}

impl StateMemory {
    /// Forgets everything (end of an input).
    pub fn clear(&mut self) {
        self.last.clear();
    }

    /// Records `value` for the series and returns the event it calls for, if any.
    /// The first sample of a series is a change only when it is nonzero (for the
    /// throttle mask: when it has slowdown bits). Values that are not whole numbers
    /// (NaN, fractions) are not states and are ignored.
    pub fn observe(
        &mut self,
        gauge: StateGauge,
        node: Option<&str>,
        device: Option<&str>,
        instance: Option<&str>,
        value: f64,
    ) -> Option<Change> {
        if !(value.is_finite() && value >= 0.0 && value.fract() == 0.0 && value < 9.0e15) {
            return None;
        }
        let raw = value as u64;
        let state = match gauge {
            StateGauge::Xid => raw,
            StateGauge::Throttle => ThrottleReasons(raw).slowdown_bits(),
        };
        self.key.clear();
        self.key
            .push(if gauge == StateGauge::Xid { 'x' } else { 't' });
        for part in [node, device, instance] {
            self.key.push('\u{1f}');
            self.key.push_str(part.unwrap_or(""));
        }
        let previous = match self.last.get_mut(self.key.as_str()) {
            Some(v) => {
                let p = *v;
                *v = state;
                if p == state {
                    return None;
                }
                Some(p)
            }
            None => {
                if self.last.len() >= MAX_SERIES {
                    self.last.clear();
                }
                self.last.insert(self.key.clone(), state);
                None
            }
        };
        match gauge {
            StateGauge::Xid if state != 0 => {
                let code = u32::try_from(state).ok()?;
                Some(Change::Xid {
                    code,
                    info: nvidia::xid_info(code),
                    previous,
                })
            }
            StateGauge::Throttle if state != 0 || previous.is_some() => Some(Change::Throttle {
                mask: ThrottleReasons(raw),
                previous,
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xid_changes() {
        let mut m = StateMemory::default();
        let n = Some("n1");
        assert_eq!(m.observe(StateGauge::Xid, n, Some("0"), None, 0.0), None);
        let c = m
            .observe(StateGauge::Xid, n, Some("0"), None, 79.0)
            .unwrap();
        assert_eq!((c.kind(), c.severity()), ("xid", Severity::Critical));
        assert_eq!(m.observe(StateGauge::Xid, n, Some("0"), None, 79.0), None);
        // Another GPU is another series; its first nonzero value is a change.
        assert!(
            m.observe(StateGauge::Xid, n, Some("1"), None, 79.0)
                .is_some()
        );
        assert_eq!(m.observe(StateGauge::Xid, n, Some("0"), None, 0.0), None);
        assert!(
            m.observe(StateGauge::Xid, n, Some("0"), None, 79.0)
                .is_some()
        );
        assert_eq!(
            m.observe(StateGauge::Xid, n, Some("0"), None, f64::NAN),
            None
        );
    }

    #[test]
    fn throttle_changes_ignore_idle_bits() {
        let mut m = StateMemory::default();
        let g = StateGauge::Throttle;
        assert_eq!(m.observe(g, None, Some("0"), None, 1.0), None);
        let c = m.observe(g, None, Some("0"), None, 0x41 as f64).unwrap();
        assert_eq!(c.kind(), "clock_throttle");
        assert_eq!(
            c,
            Change::Throttle {
                mask: ThrottleReasons(0x41),
                previous: Some(0)
            }
        );
        assert_eq!(m.observe(g, None, Some("0"), None, 0x40 as f64), None);
        let c = m.observe(g, None, Some("0"), None, 1.0).unwrap();
        assert_eq!(
            (c.kind(), c.severity()),
            ("clock_throttle_cleared", Severity::Info)
        );
    }
}

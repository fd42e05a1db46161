//! NVIDIA's Xid catalog and the DCGM/NVML clock-throttle reason bits: what a code means,
//! which root cause it is evidence for, and how bad it is. Shared by the kernel-log and
//! the Prometheus (dcgm-exporter) decoders.

use std::borrow::Cow;

use crate::Severity;

/// The group a code belongs to; the names line up with the infrastructure causes of
/// `contracts/causes.md` (`gpu_failure`, `gpu_memory_error`, `nvlink_error`), plus
/// `application` (a fault the running program caused) and `other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XidCategory {
    /// The GPU failed, fell off the bus or its firmware (GSP) stopped answering.
    GpuFailure,
    /// Uncorrectable or accumulating memory errors, row remapping, ECC.
    GpuMemoryError,
    /// NVLink / NVSwitch fabric errors.
    NvlinkError,
    /// Faults raised by the running program (illegal address, exceptions, timeouts).
    Application,
    /// Anything else, including codes not in the catalog.
    Other,
}

impl XidCategory {
    /// The snake_case id stored in `attrs.category`.
    pub fn as_str(self) -> &'static str {
        match self {
            XidCategory::GpuFailure => "gpu_failure",
            XidCategory::GpuMemoryError => "gpu_memory_error",
            XidCategory::NvlinkError => "nvlink_error",
            XidCategory::Application => "application",
            XidCategory::Other => "other",
        }
    }
}

/// What the catalog says about one Xid code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XidInfo {
    /// NVIDIA's short description.
    pub meaning: &'static str,
    pub category: XidCategory,
    pub severity: Severity,
}

/// The catalog entry for `code` (NVIDIA's Xid catalog, docs.nvidia.com/deploy/xid-errors);
/// unknown codes are `Other`/warning with the meaning "unknown Xid".
pub fn xid_info(code: u32) -> XidInfo {
    use Severity::{Critical, Error, Warning};
    use XidCategory::{Application, GpuFailure, GpuMemoryError, NvlinkError, Other};
    let (meaning, category, severity) = match code {
        8 => ("GPU stopped processing", GpuFailure, Error),
        13 => ("Graphics Engine Exception", Application, Warning),
        31 => ("GPU memory page fault", Application, Warning),
        32 => (
            "Invalid or corrupted push buffer stream",
            Application,
            Warning,
        ),
        38 => ("Driver firmware error", GpuFailure, Error),
        43 => (
            "GPU stopped processing (channel reset)",
            Application,
            Warning,
        ),
        44 => (
            "Graphics Engine fault during context switch",
            GpuFailure,
            Error,
        ),
        45 => (
            "Preemptive cleanup, due to previous errors",
            Application,
            Warning,
        ),
        46 => ("GPU stopped processing", GpuFailure, Critical),
        48 => ("Double Bit ECC Error (DBE)", GpuMemoryError, Critical),
        56 => ("Display Engine error", Other, Warning),
        57 => (
            "Error programming video memory interface",
            GpuMemoryError,
            Error,
        ),
        61 => (
            "Internal micro-controller breakpoint/warning",
            GpuFailure,
            Error,
        ),
        62 => ("Internal micro-controller halt", GpuFailure, Critical),
        63 => (
            "ECC page retirement or row remapping recording event",
            GpuMemoryError,
            Warning,
        ),
        64 => (
            "ECC page retirement or row remapper recording failure",
            GpuMemoryError,
            Critical,
        ),
        68 => ("Video processor exception", Application, Warning),
        69 => ("Graphics Engine class error", Application, Warning),
        74 => ("NVLink Error", NvlinkError, Error),
        79 => ("GPU has fallen off the bus", GpuFailure, Critical),
        92 => ("High single-bit ECC error rate", GpuMemoryError, Warning),
        94 => ("Contained ECC error", GpuMemoryError, Error),
        95 => ("Uncontained ECC error", GpuMemoryError, Critical),
        109 => ("Context Switch Timeout Error", Application, Warning),
        119 => ("GSP RPC Timeout", GpuFailure, Critical),
        120 => ("GSP Error", GpuFailure, Critical),
        121 => ("C2C Link corrected error", NvlinkError, Warning),
        140 => ("Unrecovered ECC Error", GpuMemoryError, Critical),
        143 => ("GPU Initialization Failure", GpuFailure, Critical),
        144 => ("NVLink SAW Error", NvlinkError, Error),
        145 => ("NVLink RLW Error", NvlinkError, Error),
        146 => ("NVLink TLW Error", NvlinkError, Error),
        147 => ("NVLink TREX Error", NvlinkError, Error),
        148 => ("NVLink NVLPW_CTRL Error", NvlinkError, Error),
        149 => ("NVLink NETIR Error", NvlinkError, Error),
        150 => ("NVLink MSE Error", NvlinkError, Error),
        154 => ("GPU Recovery Action Changed", GpuFailure, Critical),
        _ => ("unknown Xid", Other, Warning),
    };
    XidInfo {
        meaning,
        category,
        severity,
    }
}

/// What a bit of the clocks-event (throttle) reason mask says about the clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockLimit {
    /// Not a slowdown: the GPU is idle, or clocks follow a setting someone chose
    /// (application clocks, display clock, a sync-boost group).
    Setting,
    /// Clocks cut to stay under a power limit (SW power cap, HW power brake).
    Power,
    /// Clocks cut for temperature (SW or HW thermal slowdown).
    Thermal,
    /// HW slowdown: clocks halved or more, for temperature, a power brake or power draw;
    /// the hardware does not say which, and whyslow counts it as thermal unless the HW
    /// power brake bit is set with it (the brake asserts HW slowdown too).
    Hardware,
}

/// One bit of the NVML clocks-event (throttle) reason mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottleBit {
    pub mask: u64,
    /// snake_case name (`hw_thermal_slowdown`).
    pub name: &'static str,
    /// What the bit says about the clocks.
    pub limit: ClockLimit,
}

/// The NVML `nvmlClocksEventReasons` / `nvmlClocksThrottleReasons` bits, which
/// `DCGM_FI_DEV_CLOCK_THROTTLE_REASONS` / `DCGM_FI_DEV_CLOCKS_EVENT_REASONS` report. The
/// one table of them: the decoders' events and the SQL functions over samples
/// (`throttle_power(mask)`, … in `whyslow-queries`) all read it.
pub const THROTTLE_BITS: [ThrottleBit; 9] = [
    ThrottleBit {
        mask: 0x1,
        name: "gpu_idle",
        limit: ClockLimit::Setting,
    },
    ThrottleBit {
        mask: 0x2,
        name: "applications_clocks_setting",
        limit: ClockLimit::Setting,
    },
    ThrottleBit {
        mask: 0x4,
        name: "sw_power_cap",
        limit: ClockLimit::Power,
    },
    ThrottleBit {
        mask: 0x8,
        name: "hw_slowdown",
        limit: ClockLimit::Hardware,
    },
    // A sync-boost group runs its GPUs at the clocks the slowest of them can hold: a
    // setting, not a cut of this GPU's own (the GPU that holds the group back shows its
    // own power or thermal bit).
    ThrottleBit {
        mask: 0x10,
        name: "sync_boost",
        limit: ClockLimit::Setting,
    },
    ThrottleBit {
        mask: 0x20,
        name: "sw_thermal_slowdown",
        limit: ClockLimit::Thermal,
    },
    ThrottleBit {
        mask: 0x40,
        name: "hw_thermal_slowdown",
        limit: ClockLimit::Thermal,
    },
    ThrottleBit {
        mask: 0x80,
        name: "hw_power_brake_slowdown",
        limit: ClockLimit::Power,
    },
    ThrottleBit {
        mask: 0x100,
        name: "display_clock_setting",
        limit: ClockLimit::Setting,
    },
];

/// The bits of the table whose limit is one of `limits`.
const fn bits_of(limits: &[ClockLimit]) -> u64 {
    let mut acc = 0;
    let mut i = 0;
    while i < THROTTLE_BITS.len() {
        let mut j = 0;
        while j < limits.len() {
            if THROTTLE_BITS[i].limit as u8 == limits[j] as u8 {
                acc |= THROTTLE_BITS[i].mask;
            }
            j += 1;
        }
        i += 1;
    }
    acc
}

/// A clock-throttle reason mask, decoded once for every reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottleReasons(pub u64);

impl ThrottleReasons {
    /// The bits that cut clocks (power, thermal, HW slowdown).
    pub const SLOWDOWN: u64 =
        bits_of(&[ClockLimit::Power, ClockLimit::Thermal, ClockLimit::Hardware]);
    /// The power bits (SW power cap, HW power brake).
    pub const POWER: u64 = bits_of(&[ClockLimit::Power]);
    /// The thermal bits, HW slowdown included (SW/HW thermal, HW slowdown).
    pub const THERMAL: u64 = bits_of(&[ClockLimit::Thermal, ClockLimit::Hardware]);
    /// The HW power brake bit (`hw_power_brake_slowdown`).
    pub const HW_POWER_BRAKE: u64 = 0x80;

    /// A mask as a gauge reports it: a whole, non-negative number.
    pub fn from_value(value: f64) -> Option<Self> {
        (value.is_finite() && value >= 0.0 && value.fract() == 0.0 && value < 9.0e15)
            .then_some(ThrottleReasons(value as u64))
    }

    /// A mask written as text: hexadecimal with `0x` (`0x60`, as NVML and dcgmi print
    /// it) or decimal (`96`, `96.0`, as a gauge's value reads).
    pub fn parse(text: &str) -> Option<Self> {
        let t = text.trim();
        match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            Some(hex) => u64::from_str_radix(hex, 16).ok().map(ThrottleReasons),
            None => t
                .parse::<u64>()
                .ok()
                .map(ThrottleReasons)
                .or_else(|| Self::from_value(t.parse().ok()?)),
        }
    }

    /// The bits that cut clocks.
    pub fn slowdown_bits(self) -> u64 {
        self.0 & Self::SLOWDOWN
    }

    /// Whether clocks are cut for power.
    pub fn power(self) -> bool {
        self.0 & Self::POWER != 0
    }

    /// Whether clocks are cut for temperature: a thermal bit, or HW slowdown unless the
    /// HW power brake says it was power (`0x88` is a power brake, not heat).
    pub fn thermal(self) -> bool {
        let hardware = bits_of(&[ClockLimit::Hardware]);
        self.0 & (Self::THERMAL & !hardware) != 0
            || (self.0 & hardware != 0 && self.0 & Self::HW_POWER_BRAKE == 0)
    }

    /// The names of the bits set, comma-separated (`sw_power_cap,hw_slowdown`).
    pub fn names(self) -> String {
        let mut s = String::new();
        for b in THROTTLE_BITS.iter().filter(|b| self.0 & b.mask != 0) {
            if !s.is_empty() {
                s.push(',');
            }
            s.push_str(b.name);
        }
        s
    }

    /// The kind of slowdown the mask shows, worst first: `thermal` (HW, then SW
    /// thermal), `power` (HW power brake), `hw_slowdown` (HW slowdown alone: thermal or
    /// power, the hardware does not say), `power` (SW power cap), else `none`; and its
    /// severity.
    pub fn class(self) -> (&'static str, Severity) {
        let m = self.0;
        if m & 0x40 != 0 {
            ("thermal", Severity::Error)
        } else if m & 0x80 != 0 {
            ("power", Severity::Error)
        } else if m & 0x20 != 0 {
            ("thermal", Severity::Warning)
        } else if m & 0x8 != 0 {
            ("hw_slowdown", Severity::Error)
        } else if m & 0x4 != 0 {
            ("power", Severity::Warning)
        } else {
            ("none", Severity::Info)
        }
    }

    /// The event attributes the cause rules read, decoded: `throttle` (the class),
    /// `reasons` (bit names), `power` and `thermal` (`true`/`false`).
    pub fn attrs(self) -> [(&'static str, Cow<'static, str>); 4] {
        let flag = |b: bool| Cow::Borrowed(if b { "true" } else { "false" });
        [
            ("throttle", Cow::Borrowed(self.class().0)),
            ("reasons", Cow::Owned(self.names())),
            ("power", flag(self.power())),
            ("thermal", flag(self.thermal())),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_groups_the_codes_of_the_cause_taxonomy() {
        for code in [79, 119, 120, 154] {
            assert_eq!(xid_info(code).category, XidCategory::GpuFailure, "{code}");
        }
        for code in [48, 63, 64, 92, 94, 95, 140] {
            assert_eq!(
                xid_info(code).category,
                XidCategory::GpuMemoryError,
                "{code}"
            );
        }
        for code in [74, 145, 149] {
            assert_eq!(xid_info(code).category, XidCategory::NvlinkError, "{code}");
        }
        assert_eq!(xid_info(79).meaning, "GPU has fallen off the bus");
        assert_eq!(xid_info(79).severity, Severity::Critical);
        assert_eq!(xid_info(99_999).category, XidCategory::Other);
    }

    #[test]
    fn throttle_masks() {
        let r = ThrottleReasons;
        assert_eq!(r(0x1 | 0x2 | 0x10 | 0x100).slowdown_bits(), 0);
        assert_eq!(r(0x41).slowdown_bits(), 0x40);
        assert_eq!(ThrottleReasons::SLOWDOWN, 0xEC);
        assert_eq!(ThrottleReasons::POWER, 0x84);
        assert_eq!(ThrottleReasons::THERMAL, 0x68);
        assert_eq!(r(0x44).names(), "sw_power_cap,hw_thermal_slowdown");
        assert_eq!(r(0x44).class().0, "thermal");
        assert!(r(0x44).power() && r(0x44).thermal());
        assert_eq!(r(0x4).class(), ("power", Severity::Warning));
        assert_eq!(r(0x80).class().0, "power");
        assert_eq!(r(0x8).class().0, "hw_slowdown");
        assert!(r(0x8).thermal() && !r(0x8).power());
        // HW slowdown asserted by the power brake is power, not heat.
        assert!(r(0x88).power() && !r(0x88).thermal());
        assert_eq!(r(0x88).class().0, "power");
        assert!(r(0x48).thermal() && !r(0x48).power());
        assert_eq!(r(0x1).class().0, "none");
        assert_eq!(r(0x10).class().0, "none", "sync boost is a setting");
    }

    #[test]
    fn masks_read_as_nvml_and_gauges_write_them() {
        for text in ["0x60", "0X60", "96", "96.0", " 96 "] {
            assert_eq!(
                ThrottleReasons::parse(text),
                Some(ThrottleReasons(0x60)),
                "{text}"
            );
        }
        for text in ["", "0x", "-4", "4.5", "NaN", "power"] {
            assert_eq!(ThrottleReasons::parse(text), None, "{text}");
        }
    }
}

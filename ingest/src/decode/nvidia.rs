//! NVIDIA's Xid catalog and the DCGM/NVML clock-throttle reason bits: what a code means,
//! which root cause it is evidence for, and how bad it is. Shared by the kernel-log and
//! the Prometheus (dcgm-exporter) decoders.

use whyslow_schemas::Severity;

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

/// One bit of the NVML clocks-event (throttle) reason mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottleBit {
    pub mask: u64,
    /// snake_case name (`hw_thermal_slowdown`).
    pub name: &'static str,
    /// Whether the bit means clocks were cut (idle, application and display clock
    /// settings are not slowdowns).
    pub slowdown: bool,
}

/// The NVML `nvmlClocksEventReasons` / `nvmlClocksThrottleReasons` bits, which
/// `DCGM_FI_DEV_CLOCK_THROTTLE_REASONS` / `DCGM_FI_DEV_CLOCKS_EVENT_REASONS` report.
pub const THROTTLE_BITS: [ThrottleBit; 9] = [
    ThrottleBit {
        mask: 0x1,
        name: "gpu_idle",
        slowdown: false,
    },
    ThrottleBit {
        mask: 0x2,
        name: "applications_clocks_setting",
        slowdown: false,
    },
    ThrottleBit {
        mask: 0x4,
        name: "sw_power_cap",
        slowdown: true,
    },
    ThrottleBit {
        mask: 0x8,
        name: "hw_slowdown",
        slowdown: true,
    },
    ThrottleBit {
        mask: 0x10,
        name: "sync_boost",
        slowdown: true,
    },
    ThrottleBit {
        mask: 0x20,
        name: "sw_thermal_slowdown",
        slowdown: true,
    },
    ThrottleBit {
        mask: 0x40,
        name: "hw_thermal_slowdown",
        slowdown: true,
    },
    ThrottleBit {
        mask: 0x80,
        name: "hw_power_brake_slowdown",
        slowdown: true,
    },
    ThrottleBit {
        mask: 0x100,
        name: "display_clock_setting",
        slowdown: false,
    },
];

/// The bits of a mask that cut clocks.
pub fn slowdown_bits(mask: u64) -> u64 {
    THROTTLE_BITS
        .iter()
        .filter(|b| b.slowdown)
        .fold(0, |acc, b| acc | (mask & b.mask))
}

/// The names of the bits set in `mask`, comma-separated (`sw_power_cap,hw_slowdown`).
pub fn throttle_bit_names(mask: u64) -> String {
    let mut s = String::new();
    for b in THROTTLE_BITS.iter().filter(|b| mask & b.mask != 0) {
        if !s.is_empty() {
            s.push(',');
        }
        s.push_str(b.name);
    }
    s
}

/// The kind of slowdown a mask shows, worst first: `thermal` (SW/HW thermal), `power`
/// (SW power cap, HW power brake), `hw_slowdown` (HW slowdown alone: thermal or power,
/// the hardware does not say), `sync_boost`, else `none`; and its severity.
pub fn throttle_class(mask: u64) -> (&'static str, Severity) {
    if mask & 0x40 != 0 {
        ("thermal", Severity::Error)
    } else if mask & 0x80 != 0 {
        ("power", Severity::Error)
    } else if mask & 0x20 != 0 {
        ("thermal", Severity::Warning)
    } else if mask & 0x8 != 0 {
        ("hw_slowdown", Severity::Error)
    } else if mask & 0x4 != 0 {
        ("power", Severity::Warning)
    } else if mask & 0x10 != 0 {
        ("sync_boost", Severity::Info)
    } else {
        ("none", Severity::Info)
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
        assert_eq!(slowdown_bits(0x1 | 0x2 | 0x100), 0);
        assert_eq!(slowdown_bits(0x41), 0x40);
        assert_eq!(throttle_bit_names(0x44), "sw_power_cap,hw_thermal_slowdown");
        assert_eq!(throttle_class(0x44).0, "thermal");
        assert_eq!(throttle_class(0x4), ("power", Severity::Warning));
        assert_eq!(throttle_class(0x80).0, "power");
        assert_eq!(throttle_class(0x1).0, "none");
    }
}

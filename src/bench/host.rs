//! Facts about this host that only `bench` needs: the L3 size (to size the decode
//! working set and the bandwidth buffer), the memory budget, and the peak resident set.
//!
//! The L3 comes from sysfs (`/sys/devices/system/cpu/cpu0/cache/index3/size`), then
//! CPUID's cache parameters, then a 300 MB default (the largest L3 of the machines the
//! study ran on, so a guess errs towards a larger working set).

use crate::profile::Profile;

/// The fallback L3 size: the 300 MB of an Emerald-Rapids-class VM.
pub const DEFAULT_L3: u64 = 300 * 1024 * 1024;

const L3_SYSFS: &str = "/sys/devices/system/cpu/cpu0/cache/index3/size";

/// Parses sysfs cache sizes such as `32768K`, `300M` or `1048576`.
pub fn parse_cache_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, mult) = match t.char_indices().last()? {
        (i, 'K') | (i, 'k') => (&t[..i], 1024),
        (i, 'M') | (i, 'm') => (&t[..i], 1024 * 1024),
        (i, 'G') | (i, 'g') => (&t[..i], 1024 * 1024 * 1024),
        _ => (t, 1),
    };
    let v: u64 = digits.trim().parse().ok()?;
    v.checked_mul(mult).filter(|&b| b > 0)
}

/// The L3 size in bytes and where it came from.
pub fn l3_size() -> (u64, &'static str) {
    if let Some(size) = system_text(L3_SYSFS).as_deref().and_then(parse_cache_size) {
        return (size, "sysfs");
    }
    if let Some(size) = l3_from_cpuid() {
        return (size, "cpuid");
    }
    (DEFAULT_L3, "default")
}

#[cfg(target_arch = "x86_64")]
fn l3_from_cpuid() -> Option<u64> {
    let cpuid = raw_cpuid::CpuId::new();
    let params = cpuid.get_cache_parameters()?;
    params
        .filter(|c| c.level() == 3)
        .map(|c| {
            (c.associativity() * c.physical_line_partitions() * c.coherency_line_size() * c.sets())
                as u64
        })
        .max()
}

#[cfg(not(target_arch = "x86_64"))]
fn l3_from_cpuid() -> Option<u64> {
    None
}

/// What the profile lets a run hold: the profile's RAM budget
/// ([`Memory::ram_budget`](crate::profile::Memory::ram_budget), the same one
/// `plan --model` uses on CPUs).
pub fn memory_budget(profile: &Profile) -> Option<u64> {
    profile.memory.ram_budget().map(|b| b.bytes())
}

/// Peak resident set of this process (`VmHWM`), when the kernel reports it.
pub fn peak_rss() -> Option<u64> {
    let status = system_text("/proc/self/status")?;
    parse_vm_hwm(&status)
}

/// A small kernel file (`/sys`, `/proc`) through the capped, non-blocking reader: at
/// most 1 MiB, read only when it is a regular file; `None` when it is not there or not.
fn system_text(path: &str) -> Option<String> {
    let path = std::path::Path::new(path);
    crate::fsx::read_text(path, 1 << 20, crate::fsx::Source::Found).ok()
}

fn parse_vm_hwm(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sysfs_sizes() {
        assert_eq!(parse_cache_size("32768K\n"), Some(32 << 20));
        assert_eq!(parse_cache_size("300M"), Some(300 << 20));
        assert_eq!(parse_cache_size("4096"), Some(4096));
        assert_eq!(parse_cache_size(""), None);
        assert_eq!(parse_cache_size("K"), None);
        assert_eq!(parse_cache_size("0K"), None);
        assert_eq!(parse_cache_size("lots"), None);
    }

    #[test]
    fn l3_is_never_zero() {
        assert!(l3_size().0 > 0);
    }

    #[test]
    fn reads_vm_hwm() {
        assert_eq!(parse_vm_hwm("Name:\tx\nVmHWM:\t  2048 kB\n"), Some(2 << 20));
        assert_eq!(parse_vm_hwm("Name: x\n"), None);
    }
}

//! How many CPUs the machine has and how many threads this process should use.
//!
//! `logical_cpus` is `/sys/devices/system/cpu/online`, else the `processor` count of
//! `/proc/cpuinfo`. `usable_threads` is the smallest of: the scheduler affinity mask
//! (live only), the cgroup cpuset and the cgroup CPU quota rounded DOWN (3.5 CPUs -> 3,
//! never below 1): oversubscribing a quota throttles every thread.

use std::collections::BTreeMap;

use crate::probe::cgroup::{CgroupFacts, cpulist_count};
use crate::probe::sysroot::SysRoot;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cpus {
    pub logical: Option<u32>,
    pub usable: Option<u32>,
    pub sources: BTreeMap<String, String>,
}

/// `affinity` is the live `sched_getaffinity` count (`None` under a sysroot).
pub fn read(
    sys: &SysRoot,
    cpuinfo_processors: u32,
    affinity: Option<u32>,
    cgroup: &CgroupFacts,
) -> Cpus {
    let mut cpus = Cpus::default();
    if let Some(n) = sys
        .read_line("/sys/devices/system/cpu/online")
        .and_then(|t| cpulist_count(&t))
    {
        cpus.logical = Some(n);
        cpus.sources.insert(
            "logical_cpus".into(),
            "/sys/devices/system/cpu/online".into(),
        );
    } else if cpuinfo_processors > 0 {
        cpus.logical = Some(cpuinfo_processors);
        cpus.sources.insert(
            "logical_cpus".into(),
            "/proc/cpuinfo processor entries".into(),
        );
    } else {
        sys.warn("logical CPU count unknown: no /sys/devices/system/cpu/online and no processor entries in /proc/cpuinfo");
    }

    let mut candidates: Vec<(u32, String)> = Vec::new();
    if let Some(n) = affinity {
        candidates.push((n, "sched_getaffinity".into()));
    } else if let Some(n) = cpus.logical {
        candidates.push((n, cpus.sources["logical_cpus"].clone()));
    }
    if let Some((n, source)) = &cgroup.cpuset {
        candidates.push((*n, source.clone()));
    }
    if let Some((quota, source)) = &cgroup.cpu_quota {
        candidates.push((
            threads_for_quota(*quota),
            format!("{source} ({quota} CPUs, rounded down)"),
        ));
    }
    if let Some((n, source)) = candidates.into_iter().min_by_key(|(n, _)| *n) {
        cpus.usable = Some(n);
        cpus.sources.insert("usable_threads".into(), source);
    }
    cpus
}

/// Whole threads a CPU quota pays for: floor, at least one.
pub fn threads_for_quota(quota: f64) -> u32 {
    if quota.is_finite() && quota >= 1.0 {
        quota.floor().min(f64::from(u32::MAX)) as u32
    } else {
        1
    }
}

/// CPUs in this process's scheduler affinity mask.
#[cfg(target_os = "linux")]
pub fn live_affinity() -> Option<u32> {
    // SAFETY: cpu_set_t is plain data; all-zero is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer and size describe `set`, which outlives the call.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return None;
    }
    // SAFETY: `set` was filled in by the kernel; CPU_COUNT only reads it.
    let n = unsafe { libc::CPU_COUNT(&set) };
    u32::try_from(n).ok().filter(|&n| n > 0)
}

/// CPUs in this process's scheduler affinity mask.
#[cfg(not(target_os = "linux"))]
pub fn live_affinity() -> Option<u32> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_rounds_down() {
        assert_eq!(threads_for_quota(3.5), 3);
        assert_eq!(threads_for_quota(7.65), 7);
        assert_eq!(threads_for_quota(4.0), 4);
        assert_eq!(threads_for_quota(0.5), 1);
        assert_eq!(threads_for_quota(f64::NAN), 1);
    }

    #[test]
    fn usable_is_the_smallest_limit() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sys/devices/system/cpu")).unwrap();
        std::fs::write(dir.path().join("sys/devices/system/cpu/online"), "0-31\n").unwrap();
        let sys = SysRoot::at(dir.path());
        let cgroup = CgroupFacts {
            cpu_quota: Some((3.5, "cpu.max".into())),
            ..Default::default()
        };
        let cpus = read(&sys, 0, None, &cgroup);
        assert_eq!(cpus.logical, Some(32));
        assert_eq!(cpus.usable, Some(3));
        assert!(cpus.sources["usable_threads"].contains("rounded down"));
        let cpus = read(&sys, 0, Some(2), &cgroup);
        assert_eq!(cpus.usable, Some(2));
        assert_eq!(cpus.sources["usable_threads"], "sched_getaffinity");
    }

    #[test]
    fn falls_back_to_cpuinfo_count() {
        let dir = tempfile::tempdir().unwrap();
        let sys = SysRoot::at(dir.path());
        let cpus = read(&sys, 4, None, &CgroupFacts::default());
        assert_eq!((cpus.logical, cpus.usable), (Some(4), Some(4)));
        let cpus = read(&sys, 0, None, &CgroupFacts::default());
        assert_eq!((cpus.logical, cpus.usable), (None, None));
        assert_eq!(sys.take_warnings().len(), 1);
    }
}

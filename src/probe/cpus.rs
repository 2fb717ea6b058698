//! Which CPUs exist, which are online, which this process may run on, and how many
//! threads it should use.
//!
//! Three sets are kept apart: `possible` (`/sys/devices/system/cpu/possible`: what the
//! kernel could bring online; phones hotplug cores off when idle), `online`
//! (`/sys/devices/system/cpu/online`, else the `processor` count of `/proc/cpuinfo`) and
//! `usable`: online CPUs this process may be scheduled on. Usable comes from, in order:
//! live, `sched_getaffinity` (the kernel already applied any cpuset); under a sysroot,
//! `/proc/self/status` `Cpus_allowed_list` when it was captured; and the cgroup cpuset
//! (v2 `cpuset.cpus.effective`; v1 through `/proc/self/cgroup`, or `/proc/self/cpuset`
//! for trees that only carry that), each intersected with the online set.
//! `usable_threads` is the usable count, lowered by a cgroup CPU quota rounded DOWN
//! (3.5 CPUs -> 3, never below 1): oversubscribing a quota throttles every thread.

use std::collections::{BTreeMap, BTreeSet};

use crate::probe::cgroup::CgroupFacts;
use crate::probe::sysroot::SysRoot;
use crate::profile::CpuLists;

/// A cpulist never names more CPUs than this (the kernel's NR_CPUS is at most 8192).

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cpus {
    pub logical: Option<u32>,
    pub usable: Option<u32>,
    pub possible: Option<u32>,
    pub lists: Option<CpuLists>,
    pub sources: BTreeMap<String, String>,
}

pub use crate::profile::{format_cpulist, parse_cpulist};

fn count(set: &BTreeSet<u32>) -> u32 {
    u32::try_from(set.len()).unwrap_or(u32::MAX)
}

/// `Cpus_allowed_list` of a `/proc/<pid>/status` text.
pub fn allowed_list(status: &str) -> Option<BTreeSet<u32>> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(parse_cpulist)
}

/// The cpuset of this process's cgroup found without the cgroup reader: the path from
/// `/proc/self/cpuset` (v1, also Android's `/dev/cpuset`; on a v2-only host also the
/// unified path) or the `0::` line of `/proc/self/cgroup` (v2), below the cpuset / cgroup
/// mount points `/proc/mounts` names and the usual ones.
fn self_cpuset(sys: &SysRoot) -> Option<(String, String)> {
    let v1 = sys
        .read_line("/proc/self/cpuset")
        .filter(|p| p.starts_with('/'));
    let v2 = sys.read("/proc/self/cgroup").and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("0::").map(str::to_string))
            .filter(|p| p.starts_with('/'))
    });
    let mut v1_roots = vec![
        "/sys/fs/cgroup/cpuset".to_string(),
        "/dev/cpuset".to_string(),
    ];
    let mut v2_roots = vec![
        "/sys/fs/cgroup".to_string(),
        "/sys/fs/cgroup/unified".to_string(),
    ];
    if let Some(mounts) = sys.read("/proc/mounts") {
        for line in mounts.lines().take(4096) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(point), Some(kind)) = (f.get(1), f.get(2)) else {
                continue;
            };
            let opts = f.get(3).copied().unwrap_or("");
            if *kind == "cpuset" || (*kind == "cgroup" && opts.split(',').any(|o| o == "cpuset")) {
                v1_roots.insert(0, point.to_string());
            } else if *kind == "cgroup2" {
                v2_roots.insert(0, point.to_string());
            }
        }
    }
    let mut candidates = Vec::new();
    if let Some(path) = v1.as_deref().map(|p| p.trim_end_matches('/')) {
        for root in &v1_roots {
            let root = root.trim_end_matches('/');
            for file in [
                "cpuset.effective_cpus",
                "cpuset.cpus",
                "effective_cpus",
                "cpus",
            ] {
                candidates.push(format!("{root}{path}/{file}"));
            }
        }
    }
    // `/proc/self/cpuset` names the cgroup on the unified (v2) hierarchy too: with no
    // `/proc/self/cgroup` in the tree it is the only path there is, so it is tried
    // below the v2 mount points as well (cgroup v2's `cpuset.cpus.effective`).
    let v2 = v2.or_else(|| v1.clone());
    if let Some(path) = v2.as_deref().map(|p| p.trim_end_matches('/')) {
        for root in &v2_roots {
            candidates.push(format!(
                "{}{path}/cpuset.cpus.effective",
                root.trim_end_matches('/')
            ));
        }
    }
    candidates
        .into_iter()
        .find_map(|f| sys.read_line(&f).map(|t| (t, f)))
}

/// `affinity` is the live `sched_getaffinity` set (`None` under a sysroot).
pub fn read(
    sys: &SysRoot,
    cpuinfo_processors: u32,
    affinity: Option<BTreeSet<u32>>,
    cgroup: &CgroupFacts,
) -> Cpus {
    let mut cpus = Cpus::default();
    let online = sys
        .read_line("/sys/devices/system/cpu/online")
        .and_then(|t| parse_cpulist(&t));
    let possible = sys
        .read_line("/sys/devices/system/cpu/possible")
        .and_then(|t| parse_cpulist(&t));
    if let Some(set) = &online {
        cpus.logical = Some(count(set));
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
    if let Some(set) = &possible {
        cpus.possible = Some(count(set));
        cpus.sources.insert(
            "possible_cpus".into(),
            "/sys/devices/system/cpu/possible".into(),
        );
    }
    // Present but offline CPUs are worth a word (phones hotplug idle cores); possible
    // CPUs that are not even present are a VM's or firmware's spare slots, not news.
    let present = sys
        .read_line("/sys/devices/system/cpu/present")
        .and_then(|t| parse_cpulist(&t))
        .or_else(|| possible.clone());
    if let (Some(present), Some(online)) = (&present, cpus.logical)
        && count(present) > online
    {
        sys.warn(format!(
            "{online} of {} CPUs were online when probed (the others were offline, as phones hotplug idle cores); logical_cpus counts the online ones, possible_cpus all of them",
            count(present)
        ));
    }

    // The process's own restriction, then the cgroup cpuset; each within the online set.
    let mut usable: Option<(BTreeSet<u32>, String)> = online
        .clone()
        .map(|s| (s, "/sys/devices/system/cpu/online".to_string()));
    let mut narrow = |set: BTreeSet<u32>, source: String| {
        let next = match &usable {
            Some((current, _)) => current.intersection(&set).copied().collect(),
            None => set,
        };
        if next.is_empty() {
            sys.warn(format!(
                "{source} shares no CPU with the online CPUs; ignored"
            ));
            return;
        }
        if usable
            .as_ref()
            .is_none_or(|(current, _)| next.len() < current.len())
        {
            usable = Some((next, source));
        }
    };
    // Read on a live host too, so `--dump` carries the mask the replay will use.
    let status_mask = sys
        .read("/proc/self/status")
        .as_deref()
        .and_then(allowed_list);
    if let Some(set) = affinity {
        narrow(set, "sched_getaffinity".into());
    } else if let Some(set) = status_mask {
        narrow(set, "/proc/self/status Cpus_allowed_list".into());
    }
    let cpuset = cgroup.cpuset.clone().or_else(|| self_cpuset(sys));
    if let Some((text, file)) = cpuset
        && let Some(set) = parse_cpulist(&text)
    {
        narrow(set, file);
    }

    let mut candidates: Vec<(u32, String)> = Vec::new();
    match &usable {
        Some((set, source)) => candidates.push((count(set), source.clone())),
        None => {
            if let Some(n) = cpus.logical {
                candidates.push((n, cpus.sources["logical_cpus"].clone()));
            }
        }
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
    if online.is_some() || possible.is_some() || usable.is_some() {
        cpus.lists = Some(CpuLists {
            possible: possible.as_ref().map(format_cpulist),
            online: online.as_ref().map(format_cpulist),
            usable: usable.as_ref().map(|(s, _)| format_cpulist(s)),
        });
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

/// The CPUs in this process's scheduler affinity mask.
#[cfg(target_os = "linux")]
pub fn live_affinity() -> Option<BTreeSet<u32>> {
    // SAFETY: cpu_set_t is plain data; all-zero is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer and size describe `set`, which outlives the call.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return None;
    }
    let bits = 8 * std::mem::size_of::<libc::cpu_set_t>();
    let cpus: BTreeSet<u32> = (0..bits)
        // SAFETY: `set` was filled in by the kernel and `cpu` is below its bit size;
        // CPU_ISSET only reads it.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .filter_map(|cpu| u32::try_from(cpu).ok())
        .collect();
    (!cpus.is_empty()).then_some(cpus)
}

/// The CPUs in this process's scheduler affinity mask.
#[cfg(not(target_os = "linux"))]
pub fn live_affinity() -> Option<BTreeSet<u32>> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(root: &std::path::Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn cpulists() {
        let set = parse_cpulist("0-3,8,10-11\n").unwrap();
        assert_eq!(set.len(), 7);
        assert_eq!(format_cpulist(&set), "0-3,8,10-11");
        assert_eq!(parse_cpulist("3-1"), None);
        assert_eq!(parse_cpulist("0-4294967295"), None);
        assert_eq!(parse_cpulist(""), None);
        assert_eq!(parse_cpulist("x"), None);
        assert_eq!(
            format_cpulist(&parse_cpulist("8,0-3,2-5").unwrap()),
            "0-5,8"
        );
    }

    /// `0-65535,` repeated to the sysroot's 1 MiB read cap: linear, not a set insert per
    /// CPU per repeat (main took about 10 minutes on this).
    #[test]
    fn a_huge_repeated_cpulist_parses_in_linear_time() {
        let text = "0-65535,".repeat((1 << 20) / 8);
        let start = std::time::Instant::now();
        assert_eq!(parse_cpulist(&text).unwrap().len(), 65536);
        assert!(start.elapsed().as_secs_f64() < 2.0, "{:?}", start.elapsed());
    }

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
        put(dir.path(), "sys/devices/system/cpu/online", "0-31\n");
        let sys = SysRoot::at(dir.path());
        let cgroup = CgroupFacts {
            cpu_quota: Some((3.5, "cpu.max".into())),
            ..Default::default()
        };
        let cpus = read(&sys, 0, None, &cgroup);
        assert_eq!(cpus.logical, Some(32));
        assert_eq!(cpus.usable, Some(3));
        assert!(cpus.sources["usable_threads"].contains("rounded down"));
        let cpus = read(&sys, 0, Some([4, 5].into_iter().collect()), &cgroup);
        assert_eq!(cpus.usable, Some(2));
        assert_eq!(cpus.sources["usable_threads"], "sched_getaffinity");
        assert_eq!(cpus.lists.unwrap().usable.as_deref(), Some("4-5"));
    }

    #[test]
    fn status_and_cpusets_are_intersected_with_online() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "sys/devices/system/cpu/online", "0-7\n");
        put(dir.path(), "sys/devices/system/cpu/possible", "0-15\n");
        put(
            dir.path(),
            "proc/self/status",
            "Name:\tx\nCpus_allowed:\tffff\nCpus_allowed_list:\t2-15\n",
        );
        let sys = SysRoot::at(dir.path());
        let cpus = read(&sys, 0, None, &CgroupFacts::default());
        assert_eq!(
            (cpus.logical, cpus.possible, cpus.usable),
            (Some(8), Some(16), Some(6))
        );
        let lists = cpus.lists.unwrap();
        assert_eq!(lists.usable.as_deref(), Some("2-7"));
        assert_eq!(lists.possible.as_deref(), Some("0-15"));
        assert!(
            sys.take_warnings()
                .iter()
                .any(|w| w.contains("8 of 16 CPUs were online"))
        );
        // A VM's spare hotplug slots (possible but not present) are not news.
        put(dir.path(), "sys/devices/system/cpu/present", "0-7\n");
        read(&sys, 0, None, &CgroupFacts::default());
        assert!(
            !sys.take_warnings()
                .iter()
                .any(|w| w.contains("were online"))
        );
        std::fs::remove_file(dir.path().join("sys/devices/system/cpu/present")).unwrap();

        // v1 cpuset named only by /proc/self/cpuset.
        put(dir.path(), "proc/self/cpuset", "/batch/job1\n");
        put(
            dir.path(),
            "sys/fs/cgroup/cpuset/batch/job1/cpuset.cpus",
            "6-9\n",
        );
        let cpus = read(&sys, 0, None, &CgroupFacts::default());
        assert_eq!(cpus.usable, Some(2));
        assert!(cpus.sources["usable_threads"].ends_with("batch/job1/cpuset.cpus"));

        // A cpuset mounted where /proc/mounts says (hwloc-style captures).
        put(
            dir.path(),
            "proc/mounts",
            "none /dev/cgroup/cpu cgroup rw,cpuset 0 0\n",
        );
        put(dir.path(), "dev/cgroup/cpu/batch/job1/cpuset.cpus", "7\n");
        let cpus = read(&sys, 0, None, &CgroupFacts::default());
        assert_eq!(cpus.usable, Some(1));
        std::fs::remove_file(dir.path().join("proc/mounts")).unwrap();

        // A cgroup v2 cpuset from the cgroup reader wins over /proc/self/cpuset.
        let cgroup = CgroupFacts {
            cpuset: Some(("3".into(), "/sys/fs/cgroup/x/cpuset.cpus.effective".into())),
            ..Default::default()
        };
        assert_eq!(read(&sys, 0, None, &cgroup).usable, Some(1));

        // A cpuset outside the online CPUs is ignored with a warning.
        let cgroup = CgroupFacts {
            cpuset: Some(("12-13".into(), "cpuset.cpus.effective".into())),
            ..Default::default()
        };
        std::fs::remove_file(dir.path().join("proc/self/cpuset")).unwrap();
        assert_eq!(read(&sys, 0, None, &cgroup).usable, Some(6));
        assert!(
            sys.take_warnings()
                .iter()
                .any(|w| w.contains("shares no CPU"))
        );
    }

    #[test]
    fn a_v2_cpuset_named_only_by_proc_self_cpuset_is_read() {
        // cgroup v2 mounted, /proc/self/cpuset present, no /proc/self/cgroup: a 6-CPU
        // container on a 32-CPU host (it read 32 when the path was tried under v1 only).
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "sys/devices/system/cpu/online", "0-31\n");
        put(dir.path(), "proc/self/cpuset", "/docker/ctr\n");
        put(
            dir.path(),
            "proc/mounts",
            "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n",
        );
        put(
            dir.path(),
            "sys/fs/cgroup/docker/ctr/cpuset.cpus.effective",
            "4-9\n",
        );
        let sys = SysRoot::at(dir.path());
        let cpus = read(&sys, 0, None, &CgroupFacts::default());
        assert_eq!((cpus.logical, cpus.usable), (Some(32), Some(6)));
        assert_eq!(
            cpus.sources["usable_threads"],
            "/sys/fs/cgroup/docker/ctr/cpuset.cpus.effective"
        );
        // Without the mount line the usual v2 root is tried as well.
        std::fs::remove_file(dir.path().join("proc/mounts")).unwrap();
        assert_eq!(read(&sys, 0, None, &CgroupFacts::default()).usable, Some(6));
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

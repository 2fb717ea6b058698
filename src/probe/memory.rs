//! Memory as this process has it: `/proc/meminfo` plus the cgroup limit, and the budget.
//!
//! The budget follows probe.md §4 and never counts reclaimable page cache as used:
//! `min(MemAvailable, limit - (usage - inactive_file))`, or MemAvailable alone when there
//! is no limit. Every input is recorded in `memory.sources`.

use crate::probe::cgroup::CgroupFacts;
use crate::probe::sysroot::SysRoot;
use crate::profile::Memory;

/// `MemTotal` and `MemAvailable` in bytes from meminfo text (values are in kB).
pub fn parse_meminfo(text: &str) -> (Option<u64>, Option<u64>) {
    let field = |key: &str| {
        text.lines().find_map(|line| {
            let rest = line.strip_prefix(key)?.strip_prefix(':')?;
            let mut words = rest.split_whitespace();
            let value: u64 = words.next()?.parse().ok()?;
            let scale = match words.next() {
                Some("kB") | None => 1024,
                Some(_) => return None,
            };
            value.checked_mul(scale)
        })
    };
    (field("MemTotal"), field("MemAvailable"))
}

/// `min(available, limit - (usage - inactive_file))`, saturating at zero.
pub fn budget(
    available: Option<u64>,
    limit: Option<u64>,
    usage: Option<u64>,
    inactive_file: Option<u64>,
) -> Option<u64> {
    let cgroup_free = limit.map(|limit| {
        let working_set = usage
            .unwrap_or(0)
            .saturating_sub(inactive_file.unwrap_or(0));
        limit.saturating_sub(working_set)
    });
    match (available, cgroup_free) {
        (Some(a), Some(c)) => Some(a.min(c)),
        (a, c) => a.or(c),
    }
}

/// The `memory` section.
pub fn read(sys: &SysRoot, cgroup: &CgroupFacts) -> Memory {
    let mut memory = Memory::default();
    match sys.read("/proc/meminfo") {
        Some(text) => {
            let (total, available) = parse_meminfo(&text);
            memory.total_bytes = total;
            memory.available_bytes = available;
            if total.is_some() {
                memory
                    .sources
                    .insert("total_bytes".into(), "/proc/meminfo MemTotal".into());
            } else {
                let what = if text.lines().any(|l| l.starts_with("MemTotal:")) {
                    "a MemTotal line that is not a byte count in kB"
                } else {
                    "no MemTotal line"
                };
                sys.warn(format!(
                    "{}: {what}; total memory unknown",
                    sys.shown("/proc/meminfo")
                ));
            }
            if available.is_some() {
                memory.sources.insert(
                    "available_bytes".into(),
                    "/proc/meminfo MemAvailable".into(),
                );
            }
        }
        None => sys.warn(format!(
            "{}: missing; memory unknown",
            sys.shown("/proc/meminfo")
        )),
    }
    if let Some((limit, source)) = &cgroup.memory_limit {
        memory.limit_bytes = Some(*limit);
        memory.sources.insert("limit_bytes".into(), source.clone());
    } else if cgroup.resolved {
        memory.sources.insert(
            "limit_bytes".into(),
            "no cgroup memory limit (max or none set)".into(),
        );
    }
    if let Some((usage, source)) = &cgroup.memory_usage {
        memory.cgroup_usage_bytes = Some(*usage);
        memory
            .sources
            .insert("cgroup_usage_bytes".into(), source.clone());
    }
    if let Some((inactive, source)) = &cgroup.inactive_file {
        memory.cgroup_inactive_file_bytes = Some(*inactive);
        memory
            .sources
            .insert("cgroup_inactive_file_bytes".into(), source.clone());
    }
    memory.budget_bytes = budget(
        memory.available_bytes,
        memory.limit_bytes,
        memory.cgroup_usage_bytes,
        memory.cgroup_inactive_file_bytes,
    );
    if memory.budget_bytes.is_some() {
        let formula = if memory.limit_bytes.is_some() {
            "min(available_bytes, limit_bytes - (cgroup_usage_bytes - cgroup_inactive_file_bytes))"
        } else {
            "available_bytes (no cgroup limit)"
        };
        memory.sources.insert("budget_bytes".into(), formula.into());
    }
    memory
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo() {
        let text = "MemTotal:       24683656 kB\nMemFree:        22545736 kB\nMemAvailable:   24328196 kB\n";
        assert_eq!(
            parse_meminfo(text),
            (Some(24683656 * 1024), Some(24328196 * 1024))
        );
        assert_eq!(parse_meminfo("MemTotal: lots\n"), (None, None));
        assert_eq!(
            parse_meminfo("MemTotal: 99999999999999999999 kB\n"),
            (None, None)
        );
        assert_eq!(parse_meminfo("MemTotalX: 5 kB\n"), (None, None));
    }

    #[test]
    fn budget_ignores_page_cache() {
        let gib = 1u64 << 30;
        // 8 GiB limit, 7 GiB "used" of which 5 GiB is inactive page cache: 6 GiB free.
        assert_eq!(
            budget(Some(100 * gib), Some(8 * gib), Some(7 * gib), Some(5 * gib)),
            Some(6 * gib)
        );
        // MemAvailable is lower than the cgroup's room.
        assert_eq!(
            budget(Some(2 * gib), Some(8 * gib), Some(0), None),
            Some(2 * gib)
        );
        assert_eq!(
            budget(Some(3 * gib), None, Some(9 * gib), None),
            Some(3 * gib)
        );
        assert_eq!(budget(None, Some(gib), Some(2 * gib), None), Some(0));
        assert_eq!(budget(None, None, None, None), None);
    }
}

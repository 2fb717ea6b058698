//! The process's cgroup limits (v1 and v2): memory limit and usage, CPU quota, cpuset.
//!
//! The cgroup path comes from `/proc/self/cgroup` (`0::/path` for v2,
//! `N:controller,...:/path` for v1) and the mount point from `/proc/self/mountinfo`
//! (falling back to the usual `/sys/fs/cgroup` layout). A limit anywhere between the
//! process's cgroup and the mount root applies, so limits are the minimum over that
//! chain. A controller listed with a v1 hierarchy is read there; otherwise v2.
//! `max` (v2), `-1` (v1 CPU) and the v1 "unlimited" page-counter value mean no limit.

use crate::probe::sysroot::SysRoot;

/// v1 memory limits at or above this are the kernel's "unlimited" (PAGE_COUNTER_MAX
/// rounded to a page, e.g. 9223372036854771712).
const UNLIMITED: u64 = 1 << 62;

/// What the cgroup files say; each fact with the file it came from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CgroupFacts {
    pub memory_limit: Option<(u64, String)>,
    pub memory_usage: Option<(u64, String)>,
    pub inactive_file: Option<(u64, String)>,
    /// CPUs' worth of quota (`350000 100000` -> 3.5).
    pub cpu_quota: Option<(f64, String)>,
    /// The effective cpuset as a kernel cpulist (`0-3`).
    pub cpuset: Option<(String, String)>,
    /// `/proc/self/cgroup` was read, so a missing limit means "none", not "unknown".
    pub resolved: bool,
}

#[derive(Debug, Clone, PartialEq)]
struct Membership {
    /// Empty for the v2 unified hierarchy.
    controllers: Vec<String>,
    path: String,
}

#[derive(Debug, Clone, PartialEq)]
struct Mount {
    root: String,
    point: String,
    v2: bool,
    /// v1 controllers from the super options.
    controllers: Vec<String>,
}

fn parse_self_cgroup(text: &str) -> Vec<Membership> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            if !path.starts_with('/') {
                return None;
            }
            let controllers = controllers
                .split(',')
                .filter(|c| !c.is_empty())
                .map(|c| c.trim_start_matches("name=").to_string())
                .collect();
            Some(Membership {
                controllers,
                path: path.trim().to_string(),
            })
        })
        .collect()
}

fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let left: Vec<&str> = left.split(' ').collect();
            let right: Vec<&str> = right.split(' ').collect();
            let (root, point) = (*left.get(3)?, *left.get(4)?);
            let fstype = *right.first()?;
            let v2 = match fstype {
                "cgroup2" => true,
                "cgroup" => false,
                _ => return None,
            };
            let controllers = right
                .get(2)
                .map(|opts| {
                    opts.split(',')
                        .map(|o| o.trim_start_matches("name=").to_string())
                        .collect()
                })
                .unwrap_or_default();
            Some(Mount {
                root: root.to_string(),
                point: point.to_string(),
                v2,
                controllers,
            })
        })
        .collect()
}

/// Linux's PATH_MAX: the longest cgroup path walked.
const MAX_CGROUP_PATH: usize = 4096;

/// Directories from the process's cgroup up to the hierarchy's mount point.
fn chain(sys: &SysRoot, mount_point: &str, mount_root: &str, path: &str) -> Vec<String> {
    let relative = if mount_root == "/" {
        path
    } else {
        path.strip_prefix(mount_root).unwrap_or("/")
    };
    let point = mount_point.trim_end_matches('/');
    // No path the kernel can open is longer than PATH_MAX: a crafted deeper one (16,000
    // levels cost main 8 s and 256 MB, each level a longer string and a deeper lookup)
    // is not walked; the hierarchy's own limits at its mount point still are.
    if relative.len() > MAX_CGROUP_PATH {
        sys.warn(format!(
            "cgroup path of {} bytes is longer than the kernel's PATH_MAX; only {point} was read",
            relative.len()
        ));
        return vec![if point.is_empty() {
            "/".into()
        } else {
            point.to_string()
        }];
    }
    let mut dirs = Vec::new();
    let mut rel = relative.trim_end_matches('/').to_string();
    loop {
        let dir = format!("{point}{rel}");
        dirs.push(if dir.is_empty() { "/".to_string() } else { dir });
        match rel.rfind('/') {
            Some(i) if !rel.is_empty() => rel.truncate(i),
            _ => break,
        }
    }
    // A container without a cgroup namespace shows the host path, absent from its view.
    dirs.retain(|d| sys.exists(d));
    if dirs.is_empty() {
        dirs.push(point.to_string());
    }
    dirs
}

/// Reads the process's cgroup limits. Missing files just leave facts unknown.
pub fn read(sys: &SysRoot) -> CgroupFacts {
    let mut facts = CgroupFacts::default();
    let Some(self_cgroup) = sys.read("/proc/self/cgroup") else {
        sys.warn(format!(
            "{}: missing; cgroup CPU and memory limits unknown (treated as none)",
            sys.shown("/proc/self/cgroup")
        ));
        return facts;
    };
    facts.resolved = true;
    let members = parse_self_cgroup(&self_cgroup);
    let mounts = sys
        .read("/proc/self/mountinfo")
        .map(|t| parse_mountinfo(&t))
        .unwrap_or_default();

    let v1_chain = |controller: &str| -> Option<Vec<String>> {
        let member = members
            .iter()
            .find(|m| m.controllers.iter().any(|c| c == controller))?;
        let (point, root) = match mounts
            .iter()
            .find(|m| !m.v2 && m.controllers.iter().any(|c| c == controller))
        {
            Some(m) => (m.point.clone(), m.root.clone()),
            None => {
                let joined = format!("/sys/fs/cgroup/{}", member.controllers.join(","));
                let plain = format!("/sys/fs/cgroup/{controller}");
                (
                    if sys.exists(&plain) { plain } else { joined },
                    "/".to_string(),
                )
            }
        };
        Some(chain(sys, &point, &root, &member.path))
    };
    let v2_chain = || -> Option<Vec<String>> {
        let member = members.iter().find(|m| m.controllers.is_empty())?;
        let (point, root) = match mounts.iter().find(|m| m.v2) {
            Some(m) => (m.point.clone(), m.root.clone()),
            None if sys.exists("/sys/fs/cgroup/cgroup.controllers") => {
                ("/sys/fs/cgroup".into(), "/".into())
            }
            None => ("/sys/fs/cgroup/unified".into(), "/".into()),
        };
        Some(chain(sys, &point, &root, &member.path))
    };

    // Memory.
    if let Some(dirs) = v1_chain("memory") {
        facts.memory_limit = min_over(sys, &dirs, "memory.limit_in_bytes", |t| {
            t.trim().parse::<u64>().ok().filter(|&v| v < UNLIMITED)
        });
        facts.memory_usage = first_value(sys, &dirs, "memory.usage_in_bytes");
        facts.inactive_file = stat_value(sys, &dirs[0], &["total_inactive_file", "inactive_file"]);
    } else if let Some(dirs) = v2_chain() {
        facts.memory_limit = min_over(sys, &dirs, "memory.max", |t| {
            t.trim().parse::<u64>().ok().filter(|&v| v < UNLIMITED)
        });
        facts.memory_usage = first_value(sys, &dirs, "memory.current");
        facts.inactive_file = stat_value(sys, &dirs[0], &["inactive_file"]);
    }

    // CPU quota.
    if let Some(dirs) = v1_chain("cpu") {
        let mut best: Option<(f64, String)> = None;
        for dir in &dirs {
            let quota = sys
                .read_line(&format!("{dir}/cpu.cfs_quota_us"))
                .and_then(|t| t.parse::<i64>().ok());
            let period = sys
                .read_line(&format!("{dir}/cpu.cfs_period_us"))
                .and_then(|t| t.parse::<i64>().ok());
            if let (Some(q), Some(p)) = (quota, period)
                && q > 0
                && p > 0
            {
                let cpus = q as f64 / p as f64;
                if best.as_ref().is_none_or(|(b, _)| cpus < *b) {
                    best = Some((cpus, format!("{dir}/cpu.cfs_quota_us")));
                }
            }
        }
        facts.cpu_quota = best;
    } else if let Some(dirs) = v2_chain() {
        facts.cpu_quota = min_over(sys, &dirs, "cpu.max", parse_cpu_max);
    }

    // Cpuset.
    let cpuset = if let Some(dirs) = v1_chain("cpuset") {
        ["cpuset.effective_cpus", "cpuset.cpus"]
            .iter()
            .find_map(|f| {
                sys.read_line(&format!("{}/{f}", dirs[0]))
                    .map(|t| (t, format!("{}/{f}", dirs[0])))
            })
    } else if let Some(dirs) = v2_chain() {
        let f = format!("{}/cpuset.cpus.effective", dirs[0]);
        sys.read_line(&f).map(|t| (t, f))
    } else {
        None
    };
    facts.cpuset = cpuset.filter(|(text, _)| cpulist_count(text).is_some());
    facts
}

/// `cpu.max`: `"350000 100000"` -> 3.5; `"max 100000"` -> none.
pub fn parse_cpu_max(text: &str) -> Option<f64> {
    let mut parts = text.split_whitespace();
    let quota: f64 = parts.next()?.parse().ok()?;
    let period: f64 = parts.next().unwrap_or("100000").parse().ok()?;
    (quota > 0.0 && period > 0.0).then(|| quota / period)
}

/// Counts CPUs in a kernel cpulist (`0-3,8,10-11` -> 7). `None` when malformed.
pub fn cpulist_count(text: &str) -> Option<u32> {
    let mut count: u32 = 0;
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((lo, hi)) => (
                lo.trim().parse::<u32>().ok()?,
                hi.trim().parse::<u32>().ok()?,
            ),
            None => {
                let n = part.trim().parse::<u32>().ok()?;
                (n, n)
            }
        };
        if hi < lo || hi - lo > 1 << 16 {
            return None;
        }
        count = count.checked_add(hi - lo + 1)?;
    }
    (count > 0).then_some(count)
}

/// The smallest value `parse` finds in `file` across `dirs`, with the path it came from
/// (the first one on ties).
fn min_over<T: PartialOrd>(
    sys: &SysRoot,
    dirs: &[String],
    file: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Option<(T, String)> {
    let mut best: Option<(T, String)> = None;
    for dir in dirs {
        let path = format!("{dir}/{file}");
        if let Some(v) = sys.read(&path).as_deref().and_then(&parse)
            && best.as_ref().is_none_or(|(b, _)| v < *b)
        {
            best = Some((v, path));
        }
    }
    best
}

fn first_value(sys: &SysRoot, dirs: &[String], file: &str) -> Option<(u64, String)> {
    let path = format!("{}/{file}", dirs.first()?);
    sys.read_line(&path)
        .and_then(|t| t.parse().ok())
        .map(|v| (v, path))
}

fn stat_value(sys: &SysRoot, dir: &str, keys: &[&str]) -> Option<(u64, String)> {
    let path = format!("{dir}/memory.stat");
    let text = sys.read(&path)?;
    keys.iter().find_map(|key| {
        text.lines().find_map(|line| {
            let (k, v) = line.split_once(' ')?;
            (k == *key)
                .then(|| v.trim().parse().ok())
                .flatten()
                .map(|v| (v, format!("{path} {key}")))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn write(root: &std::path::Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    #[test]
    fn cpu_max_and_cpulists() {
        assert_eq!(parse_cpu_max("350000 100000"), Some(3.5));
        assert_eq!(parse_cpu_max("max 100000"), None);
        assert_eq!(parse_cpu_max("garbage"), None);
        assert_eq!(cpulist_count("0-3,8,10-11\n"), Some(7));
        assert_eq!(cpulist_count("5"), Some(1));
        assert_eq!(cpulist_count("3-1"), None);
        assert_eq!(cpulist_count("0-4294967295"), None);
        assert_eq!(cpulist_count(""), None);
    }

    #[test]
    fn parses_self_cgroup_and_mountinfo() {
        let m = parse_self_cgroup("12:cpu,cpuacct:/docker/abc\n0::/user.slice\nbroken\n");
        assert_eq!(m[0].controllers, vec!["cpu", "cpuacct"]);
        assert_eq!(
            m[1],
            Membership {
                controllers: vec![],
                path: "/user.slice".into()
            }
        );
        let mounts = parse_mountinfo(
            "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n32 31 0:29 /docker/abc /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n27 1 254:0 / / rw - ext4 /dev/vda rw\n",
        );
        assert_eq!(mounts.len(), 2);
        assert!(mounts[0].v2);
        assert_eq!(mounts[1].root, "/docker/abc");
        assert!(mounts[1].controllers.contains(&"cpu".to_string()));
    }

    /// 16,000 levels took main 8 s and 256 MB; past PATH_MAX only the mount point is read.
    #[test]
    fn a_deep_cgroup_path_is_not_walked() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(
            r,
            "proc/self/cgroup",
            &format!("0::{}\n", "/a".repeat(16_000)),
        );
        write(r, "sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
        write(r, "sys/fs/cgroup/memory.max", "4294967296\n");
        let sys = SysRoot::at(r);
        let start = std::time::Instant::now();
        let facts = read(&sys);
        assert!(start.elapsed().as_secs_f64() < 1.0, "{:?}", start.elapsed());
        assert_eq!(facts.memory_limit.unwrap().0, 4294967296);
        assert!(sys.take_warnings().iter().any(|w| w.contains("PATH_MAX")));
    }

    #[test]
    fn v2_limits_are_the_minimum_over_ancestors() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(r, "proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
        write(r, "sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
        write(r, "sys/fs/cgroup/kubepods/memory.max", "max\n");
        write(r, "sys/fs/cgroup/kubepods/pod1/memory.max", "4294967296\n");
        write(r, "sys/fs/cgroup/kubepods/pod1/cpu.max", "200000 100000\n");
        write(
            r,
            "sys/fs/cgroup/kubepods/pod1/ctr/memory.max",
            "8589934592\n",
        );
        write(r, "sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "max 100000\n");
        write(
            r,
            "sys/fs/cgroup/kubepods/pod1/ctr/memory.current",
            "1000\n",
        );
        write(
            r,
            "sys/fs/cgroup/kubepods/pod1/ctr/memory.stat",
            "anon 10\ninactive_file 400\n",
        );
        write(
            r,
            "sys/fs/cgroup/kubepods/pod1/ctr/cpuset.cpus.effective",
            "0-7\n",
        );
        let facts = read(&SysRoot::at(r));
        assert_eq!(facts.memory_limit.unwrap().0, 4294967296);
        assert_eq!(facts.cpu_quota.unwrap().0, 2.0);
        assert_eq!(facts.memory_usage.unwrap().0, 1000);
        assert_eq!(facts.inactive_file.unwrap().0, 400);
        assert_eq!(cpulist_count(&facts.cpuset.unwrap().0), Some(8));
    }

    #[test]
    fn v1_unlimited_is_none_and_quota_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(
            r,
            "proc/self/cgroup",
            "4:memory:/job\n1:cpu,cpuacct:/job\n0::/\n",
        );
        write(
            r,
            "sys/fs/cgroup/memory/job/memory.limit_in_bytes",
            "9223372036854771712\n",
        );
        write(
            r,
            "sys/fs/cgroup/memory/job/memory.usage_in_bytes",
            "52428800\n",
        );
        write(
            r,
            "sys/fs/cgroup/memory/job/memory.stat",
            "cache 1\ntotal_inactive_file 1048576\n",
        );
        write(
            r,
            "sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us",
            "150000\n",
        );
        write(
            r,
            "sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_period_us",
            "100000\n",
        );
        write(r, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
        write(r, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
        let facts = read(&SysRoot::at(r));
        assert_eq!(facts.memory_limit, None);
        assert_eq!(facts.memory_usage.unwrap().0, 52428800);
        assert_eq!(facts.inactive_file.unwrap().0, 1048576);
        assert_eq!(facts.cpu_quota.unwrap().0, 1.5);
    }

    #[test]
    fn a_host_path_invisible_in_the_container_falls_back_to_the_mount() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(r, "proc/self/cgroup", "0::/system.slice/docker-abc.scope\n");
        write(r, "sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
        write(r, "sys/fs/cgroup/memory.max", "1073741824\n");
        assert_eq!(read(&SysRoot::at(r)).memory_limit.unwrap().0, 1073741824);
    }
}

//! Where the process runs: container, hypervisor, WSL, each with the signal that said so.
//!
//! Container: `/.dockerenv`, `/run/.containerenv`, a container manager in
//! `/proc/1/cgroup`, or an overlay filesystem mounted at `/` (`/proc/self/mountinfo`).
//! Hypervisor: CPUID.1:ECX[31] live or the `hypervisor` cpuinfo flag, `/sys/hypervisor/type`;
//! the name from the CPUID signature or DMI. WSL: `WSL_INTEROP`/`WSL_DISTRO_NAME`
//! (live only: a sysroot carries no environment), "microsoft" in the kernel release,
//! `/dev/dxg`.

use crate::probe::sysroot::SysRoot;
use crate::profile::{Detection, Environment};

/// Live-only inputs; all `None`/false under a sysroot.
#[derive(Debug, Clone, Default)]
pub struct LiveSignals {
    /// CPUID.1:ECX[31], and the 0x40000000 signature's name.
    pub cpuid_hypervisor: Option<(bool, Option<String>)>,
    /// Which WSL variable is set, if any.
    pub wsl_env: Option<String>,
}

fn found(name: Option<&str>, how: impl Into<String>) -> Option<Detection> {
    Some(Detection {
        detected: true,
        name: name.map(str::to_string),
        how: Some(how.into()),
    })
}

fn not_found() -> Option<Detection> {
    Some(Detection {
        detected: false,
        name: None,
        how: None,
    })
}

/// A container manager named in a `/proc/1/cgroup` text, if any.
pub fn container_in_cgroup(text: &str) -> Option<&'static str> {
    let patterns = [
        ("docker", "docker"),
        ("kubepods", "kubernetes"),
        ("containerd", "containerd"),
        ("libpod", "podman"),
        ("lxc", "lxc"),
    ];
    patterns
        .iter()
        .find(|(p, _)| text.contains(p))
        .map(|(_, n)| *n)
}

/// True when mountinfo shows an overlay filesystem at `/`.
pub fn overlay_root(mountinfo: &str) -> bool {
    mountinfo.lines().any(|line| {
        let Some((left, right)) = line.split_once(" - ") else {
            return false;
        };
        left.split(' ').nth(4) == Some("/") && right.split(' ').next() == Some("overlay")
    })
}

pub fn read(sys: &SysRoot, cpu_flags: &[String], live: &LiveSignals) -> Environment {
    let container = if sys.exists("/.dockerenv") {
        found(Some("docker"), "/.dockerenv")
    } else if sys.exists("/run/.containerenv") {
        found(Some("podman"), "/run/.containerenv")
    } else if let Some(name) = sys
        .read("/proc/1/cgroup")
        .as_deref()
        .and_then(container_in_cgroup)
    {
        found(Some(name), "/proc/1/cgroup")
    } else if sys
        .read("/proc/self/mountinfo")
        .as_deref()
        .is_some_and(overlay_root)
    {
        found(None, "overlay filesystem at / (/proc/self/mountinfo)")
    } else {
        not_found()
    };

    let dmi_vendor = sys.read_line("/sys/class/dmi/id/sys_vendor");
    let xen = sys.read_line("/sys/hypervisor/type");
    let hypervisor = match &live.cpuid_hypervisor {
        Some((true, name)) => found(name.as_deref(), "cpuid 1.ecx[31]"),
        _ if cpu_flags.iter().any(|f| f == "hypervisor") => found(
            dmi_name(dmi_vendor.as_deref()),
            "hypervisor flag in /proc/cpuinfo",
        ),
        _ if xen.is_some() => found(xen.as_deref(), "/sys/hypervisor/type"),
        _ => not_found(),
    };

    let osrelease = sys.read_line("/proc/sys/kernel/osrelease");
    let wsl = if let Some(var) = &live.wsl_env {
        found(Some("wsl"), format!("{var} environment variable"))
    } else if osrelease
        .as_deref()
        .is_some_and(|r| r.to_ascii_lowercase().contains("microsoft"))
    {
        found(
            Some(
                if osrelease.as_deref().is_some_and(|r| r.contains("WSL2")) {
                    "wsl2"
                } else {
                    "wsl"
                },
            ),
            "\"microsoft\" in /proc/sys/kernel/osrelease",
        )
    } else if sys.exists("/dev/dxg") {
        found(Some("wsl2"), "/dev/dxg (WSL GPU paravirtualization)")
    } else {
        not_found()
    };
    Environment {
        container,
        hypervisor,
        wsl,
    }
}

/// A hypervisor/cloud name from DMI `sys_vendor`, for the sysroot case (no CPUID).
fn dmi_name(vendor: Option<&str>) -> Option<&'static str> {
    let v = vendor?.to_ascii_lowercase();
    Some(match v.as_str() {
        _ if v.contains("qemu") => "kvm",
        _ if v.contains("amazon") => "kvm",
        _ if v.contains("google") => "kvm",
        _ if v.contains("microsoft") => "hyperv",
        _ if v.contains("vmware") => "vmware",
        _ if v.contains("xen") => "xen",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_and_overlay_signals() {
        assert_eq!(
            container_in_cgroup("12:cpu:/docker/0123abcd\n"),
            Some("docker")
        );
        assert_eq!(
            container_in_cgroup("0::/kubepods.slice/x\n"),
            Some("kubernetes")
        );
        assert_eq!(container_in_cgroup("0::/\n"), None);
        assert!(overlay_root(
            "600 500 0:50 / / rw,relatime - overlay overlay rw,lowerdir=/a\n"
        ));
        assert!(!overlay_root(
            "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
        ));
        assert!(!overlay_root("garbage\n"));
    }

    #[test]
    fn wsl_from_osrelease_and_env() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/sys/kernel")).unwrap();
        std::fs::write(
            dir.path().join("proc/sys/kernel/osrelease"),
            "5.15.153.1-microsoft-standard-WSL2\n",
        )
        .unwrap();
        let sys = SysRoot::at(dir.path());
        let env = read(&sys, &[], &LiveSignals::default());
        assert_eq!(env.wsl.as_ref().unwrap().name.as_deref(), Some("wsl2"));
        assert!(!env.container.unwrap().detected);
        assert!(!env.hypervisor.unwrap().detected);
        let live = LiveSignals {
            wsl_env: Some("WSL_INTEROP".into()),
            cpuid_hypervisor: Some((true, Some("hyperv".into()))),
        };
        let env = read(&sys, &[], &live);
        let other = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(other.path().join("dev")).unwrap();
        std::fs::write(other.path().join("dev/dxg"), "").unwrap();
        let dxg = read(&SysRoot::at(other.path()), &[], &LiveSignals::default());
        assert_eq!(dxg.wsl.unwrap().name.as_deref(), Some("wsl2"));
        assert_eq!(
            env.wsl.unwrap().how.as_deref(),
            Some("WSL_INTEROP environment variable")
        );
        assert_eq!(env.hypervisor.unwrap().name.as_deref(), Some("hyperv"));
    }
}

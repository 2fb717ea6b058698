//! Where the process runs: container, hypervisor, WSL, each with the signal that said so.
//!
//! Container: `/.dockerenv`, `/run/.containerenv`, a container manager in
//! `/proc/1/cgroup`, or an overlay filesystem mounted at `/` (`/proc/self/mountinfo`).
//! Hypervisor, in lscpu's order (util-linux `lscpu-virt.c`): CPUID.1:ECX[31] live (named
//! from the 0x40000000 signature) or the `hypervisor` cpuinfo flag; `/sys/hypervisor/type`
//! and `/proc/xen` (Xen, including PV guests, which have no CPUID bit); a device-tree
//! `hypervisor` node; DMI vendor strings; and PCI vendor ids only hypervisors use
//! (0x80ee VirtualBox, 0x15ad VMware, 0x1414 Hyper-V, 0x5853 Xen, 0x1af4 virtio). WSL: `WSL_INTEROP`/`WSL_DISTRO_NAME`
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

    let hypervisor = hypervisor(sys, cpu_flags, live);

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

/// The hypervisor, first signal wins (see the module doc).
fn hypervisor(sys: &SysRoot, cpu_flags: &[String], live: &LiveSignals) -> Option<Detection> {
    if let Some((true, name)) = &live.cpuid_hypervisor {
        return found(name.as_deref(), "cpuid 1.ecx[31]");
    }
    let dmi = dmi_name(sys).or_else(|| dmi_table_name(sys));
    let pci = pci_name(sys);
    if cpu_flags.iter().any(|f| f == "hypervisor") {
        let name = dmi
            .as_ref()
            .map(|(n, _)| *n)
            .or(pci.as_ref().map(|(n, _)| *n));
        return found(name, "hypervisor flag in /proc/cpuinfo");
    }
    if let Some(kind) = sys.read_line("/sys/hypervisor/type") {
        return found(Some(&kind), "/sys/hypervisor/type");
    }
    if sys.exists("/proc/xen") {
        let dom0 = sys
            .read("/proc/xen/capabilities")
            .is_some_and(|c| c.contains("control_d"));
        let how = if dom0 {
            "/proc/xen (capabilities: control_d, the Xen dom0)"
        } else {
            "/proc/xen (a Xen guest, PV guests have no CPUID bit)"
        };
        return found(Some("xen"), how);
    }
    if let Some(compatible) = sys.read("/proc/device-tree/hypervisor/compatible") {
        let name = if compatible.contains("xen") {
            "xen"
        } else {
            "unknown"
        };
        return found(Some(name), "/proc/device-tree/hypervisor/compatible");
    }
    if let Some((name, how)) = dmi {
        return found(Some(name), how);
    }
    if let Some((name, how)) = pci {
        return found(Some(name), how);
    }
    not_found()
}

/// A hypervisor named by the DMI strings (sysroot or a CPU without the CPUID bit).
fn dmi_name(sys: &SysRoot) -> Option<(&'static str, String)> {
    for file in [
        "/sys/class/dmi/id/sys_vendor",
        "/sys/class/dmi/id/product_name",
        "/sys/class/dmi/id/bios_vendor",
        "/sys/class/dmi/id/board_vendor",
    ] {
        let Some(text) = sys.read_line(file) else {
            continue;
        };
        let v = text.to_ascii_lowercase();
        let name = match v.as_str() {
            _ if v.contains("qemu") || v.contains("kvm") || v.contains("bochs") => "kvm",
            _ if v.contains("amazon ec2") => {
                // EC2 bare-metal instances carry the same vendor; their product ends .metal.
                let product = sys.read_line("/sys/class/dmi/id/product_name");
                if product.is_some_and(|p| p.ends_with(".metal")) {
                    continue;
                }
                "kvm"
            }
            _ if v.contains("google compute engine") || v == "google" => "kvm",
            _ if v.contains("virtualbox") || v.contains("innotek") => "virtualbox",
            _ if v.contains("vmware") => "vmware",
            _ if v.contains("xen") => "xen",
            _ if v.contains("parallels") => "parallels",
            _ if v.contains("virtual machine") && file.ends_with("product_name") => "hyperv",
            _ => continue,
        };
        return Some((name, format!("DMI {file}: {text}")));
    }
    None
}

/// The hypervisor a PCI vendor id (`80ee`, lower-case hex without `0x`) belongs to.
fn virtual_pci_vendor(vendor: &str) -> Option<&'static str> {
    Some(match vendor {
        "80ee" => "virtualbox",
        "15ad" => "vmware",
        "1414" => "hyperv",
        "5853" => "xen",
        "1af4" => "kvm",
        _ => return None,
    })
}

/// A hypervisor named by a PCI vendor id only virtual hardware uses: sysfs, else
/// `/proc/bus/pci/devices` (what lscpu reads; its second field is vendor then device).
fn pci_name(sys: &SysRoot) -> Option<(&'static str, String)> {
    for dev in sys.list("/sys/bus/pci/devices").iter().take(512) {
        let file = format!("/sys/bus/pci/devices/{dev}/vendor");
        let Some(vendor) = sys.read_line(&file) else {
            continue;
        };
        let hex = vendor.to_ascii_lowercase();
        if let Some(name) = virtual_pci_vendor(hex.trim_start_matches("0x")) {
            return Some((name, format!("PCI vendor {vendor} ({file})")));
        }
    }
    let text = sys.read("/proc/bus/pci/devices")?;
    text.lines().take(512).find_map(|line| {
        let id = line.split_whitespace().nth(1)?.to_ascii_lowercase();
        let vendor = id.get(..4)?;
        virtual_pci_vendor(vendor).map(|name| {
            (
                name,
                format!("PCI vendor 0x{vendor} (/proc/bus/pci/devices)"),
            )
        })
    })
}

/// A hypervisor named in the raw SMBIOS table (`/sys/firmware/dmi/tables/DMI`), for trees
/// that carry the table but not `/sys/class/dmi/id` (lscpu's dumps). Only strings a
/// virtual machine's firmware writes are looked for.
fn dmi_table_name(sys: &SysRoot) -> Option<(&'static str, String)> {
    let bytes = sys.read_bytes("/sys/firmware/dmi/tables/DMI")?;
    let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    let name = if has(b"VirtualBox") || has(b"innotek GmbH") {
        "virtualbox"
    } else if has(b"VMware") {
        "vmware"
    } else if has(b"QEMU") || has(b"Bochs") {
        "kvm"
    } else if has(b"Xen") && has(b"HVM domU") {
        "xen"
    } else if has(b"Microsoft Corporation") && has(b"Virtual Machine") {
        "hyperv"
    } else if has(b"Parallels") {
        "parallels"
    } else {
        return None;
    };
    Some((name, "/sys/firmware/dmi/tables/DMI".into()))
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

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    fn hv(files: &[(&str, &str)], flags: &[&str]) -> (Option<String>, Option<String>) {
        let dir = tree(files);
        let flags: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
        let env = read(&SysRoot::at(dir.path()), &flags, &LiveSignals::default());
        let d = env.hypervisor.unwrap();
        assert_eq!(d.detected, d.how.is_some());
        (d.name, d.how)
    }

    #[test]
    fn hypervisors_as_lscpu_finds_them() {
        let (name, how) = hv(&[("proc/xen/capabilities", "")], &[]);
        assert_eq!(name.as_deref(), Some("xen"));
        assert!(how.unwrap().contains("guest"));
        let (_, how) = hv(&[("proc/xen/capabilities", "control_d\n")], &[]);
        assert!(how.unwrap().contains("dom0"));
        let (name, _) = hv(&[("sys/hypervisor/type", "xen\n")], &[]);
        assert_eq!(name.as_deref(), Some("xen"));
        let (name, how) = hv(
            &[("sys/bus/pci/devices/0000:00:04.0/vendor", "0x80ee\n")],
            &[],
        );
        assert_eq!(name.as_deref(), Some("virtualbox"));
        assert!(how.unwrap().contains("0x80ee"));
        let (name, _) = hv(
            &[(
                "proc/bus/pci/devices",
                "0020\t80eecafe\t17\t0\n0028\t80860100\t0\t0\n",
            )],
            &[],
        );
        assert_eq!(name.as_deref(), Some("virtualbox"));
        let (name, how) = hv(
            &[(
                "sys/firmware/dmi/tables/DMI",
                "\u{1}\u{1b}\u{0}\u{1}VMware, Inc.\u{0}VMware Virtual Platform\u{0}\u{0}",
            )],
            &[],
        );
        assert_eq!(name.as_deref(), Some("vmware"));
        assert!(how.unwrap().contains("tables/DMI"));
        let (name, _) = hv(&[("sys/class/dmi/id/sys_vendor", "innotek GmbH\n")], &[]);
        assert_eq!(name.as_deref(), Some("virtualbox"));
        let (name, how) = hv(
            &[("sys/bus/pci/devices/0000:00:01.0/vendor", "0x15ad\n")],
            &["hypervisor"],
        );
        assert_eq!(name.as_deref(), Some("vmware"));
        assert!(how.unwrap().contains("flag"));
        let (name, how) = hv(
            &[("sys/bus/pci/devices/0000:00:01.0/vendor", "0x8086\n")],
            &[],
        );
        assert_eq!((name, how), (None, None));
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

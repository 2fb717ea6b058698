//! Is this process running under user-mode emulation (qemu-user)? Timings taken there
//! measure the emulator, not the CPU the binary was built for, so `bench` must not turn
//! them into a verdict.
//!
//! Signals, in order:
//! 1. `EDGEPLAN_EMULATED` set to anything but empty or `0` (a CI job that runs the binary
//!    through a qemu runner says so; the runner itself is invisible to the program).
//! 2. `/proc/cpuinfo` describing another architecture than this binary's. qemu-user
//!    passes most of `/proc` through from the host, so an arm64 build emulated on an
//!    x86-64 host reads x86 `vendor_id`/`flags` lines (qemu 7.2, Debian 12). A qemu that
//!    synthesizes an arm64 cpuinfo defeats this signal; then only (1) helps.

/// Why this process's timings cannot be trusted, or `None`.
pub fn emulation() -> Option<String> {
    if let Ok(v) = std::env::var("EDGEPLAN_EMULATED")
        && !v.is_empty()
        && v != "0"
    {
        return Some(format!("EDGEPLAN_EMULATED={v}"));
    }
    let path = std::path::Path::new("/proc/cpuinfo");
    let text = crate::fsx::read_text(path, 4 << 20, crate::fsx::Source::Found).ok()?;
    from_cpuinfo(std::env::consts::ARCH, &text)
}

/// The cpuinfo signal: `Some(reason)` when `cpuinfo` describes a CPU of another
/// architecture than `arch` (`std::env::consts::ARCH` spelling).
pub fn from_cpuinfo(arch: &str, cpuinfo: &str) -> Option<String> {
    let has = |key: &str| {
        cpuinfo
            .lines()
            .any(|l| l.split(':').next().is_some_and(|k| k.trim() == key))
    };
    let x86 = has("vendor_id") || has("flags");
    let arm = has("CPU implementer") || has("Features");
    let seen = match arch {
        "aarch64" if x86 && !arm => "an x86",
        "x86_64" if arm && !x86 => "an arm64",
        _ => return None,
    };
    Some(format!(
        "/proc/cpuinfo describes {seen} CPU but this is an {arch} build: user-mode emulation (qemu-user)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const X86: &str = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu avx2\n";
    const ARM: &str = "processor\t: 0\nFeatures\t: fp asimd asimddp\nCPU implementer\t: 0x41\n";

    #[test]
    fn foreign_cpuinfo_means_emulation() {
        assert!(from_cpuinfo("aarch64", X86).is_some_and(|r| r.contains("qemu-user")));
        assert!(from_cpuinfo("x86_64", ARM).is_some());
        assert_eq!(from_cpuinfo("aarch64", ARM), None);
        assert_eq!(from_cpuinfo("x86_64", X86), None);
        assert_eq!(from_cpuinfo("aarch64", ""), None);
        assert_eq!(from_cpuinfo("riscv64", X86), None);
    }
}

//! `edgeplan probe` as users run it: every sysroot fixture end to end, the generated
//! profiles against drift, bad trees, exit codes, `--dump` round trips, the live probe
//! against this host's /proc/cpuinfo, and the examples in docs/profile.md.

use std::path::Path;

use edgeplan::profile::{HardwareClass, Profile};
use predicates::prelude::*;
use serde_json::Value;

use crate::util::{edgeplan, fixture};

const MACHINES: [&str; 10] = [
    "x86-spr-amx",
    "x86-spr-vm-noamx",
    "x86-epyc-zen4",
    "x86-h100-server",
    "x86-t4-server",
    "jetson-orin-agx",
    "arm64-graviton3",
    "android-sm8650",
    "arm64-rpi5",
    "x86-container-cgroup2",
];

fn probe_json(root: &Path) -> Value {
    let out = edgeplan()
        .args(["probe", "--format", "json", "--sysroot"])
        .arg(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "probe --sysroot {} failed: {}",
        root.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn probe(machine: &str) -> Profile {
    let root = fixture(&format!("sysroots/{machine}"));
    Profile::from_value(probe_json(&root), machine).unwrap()
}

fn usable(p: &Profile, name: &str) -> bool {
    p.cpu.features.get(name).is_some_and(|f| f.usable)
}

const GIB: u64 = 1 << 30;

#[test]
fn every_fixture_gives_its_class_and_bf16() {
    let expected = [
        ("x86-spr-amx", HardwareClass::X86Cpu, true),
        ("x86-spr-vm-noamx", HardwareClass::X86Cpu, true),
        ("x86-epyc-zen4", HardwareClass::X86Cpu, true),
        ("x86-h100-server", HardwareClass::CudaDiscrete, true),
        ("x86-t4-server", HardwareClass::CudaDiscrete, false),
        ("jetson-orin-agx", HardwareClass::Jetson, true),
        ("arm64-graviton3", HardwareClass::Arm64Cpu, true),
        ("android-sm8650", HardwareClass::NpuPhone, false),
        ("arm64-rpi5", HardwareClass::Arm64Cpu, false),
        ("x86-container-cgroup2", HardwareClass::X86Cpu, true),
    ];
    for (machine, class, bf16) in expected {
        let p = probe(machine);
        assert_eq!(p.hardware_class, class, "{machine}");
        assert_eq!(p.supports_bf16, bf16, "{machine}");
        assert_eq!(p.source.as_deref(), Some("sysroot"), "{machine}");
        assert_eq!(p.label.as_deref(), Some(machine));
        // The one expected warning: the Sapphire Rapids guest whose flags lack AMX.
        let unexpected: Vec<&String> = p
            .warnings
            .iter()
            .filter(|w| !(machine == "x86-spr-vm-noamx" && w.contains("has AMX, but")))
            .collect();
        assert!(unexpected.is_empty(), "{machine}: {:?}", p.warnings);
        // Under a sysroot the OS's word is unknown, and usable follows the kernel's list.
        for (name, f) in &p.cpu.features {
            assert_eq!(f.os, None, "{machine} {name}");
            assert_eq!(f.usable, p.cpu.has_flag(name), "{machine} {name}");
        }
    }
}

#[test]
fn x86_fixture_features() {
    let amx = ["amx_tile", "amx_int8", "amx_bf16"];
    let avx512 = [
        "avx",
        "avx2",
        "fma",
        "avx512f",
        "avx512bw",
        "avx512vl",
        "avx512_vnni",
        "avx512_bf16",
    ];
    for machine in ["x86-spr-amx", "x86-container-cgroup2"] {
        let p = probe(machine);
        for name in amx
            .iter()
            .chain(&avx512)
            .chain(&["avx512_fp16", "avx_vnni"])
        {
            assert!(usable(&p, name), "{machine} {name}");
        }
        assert_eq!(p.cpu.vendor.as_deref(), Some("GenuineIntel"));
    }
    let vm = probe("x86-spr-vm-noamx");
    for name in amx {
        assert!(
            !usable(&vm, name) && !vm.cpu.features[name].cpu,
            "vm {name}"
        );
    }
    assert!(avx512.iter().all(|n| usable(&vm, n)));
    let hv = vm
        .environment
        .as_ref()
        .unwrap()
        .hypervisor
        .as_ref()
        .unwrap();
    assert!(hv.detected);
    assert_eq!(hv.how.as_deref(), Some("hypervisor flag in /proc/cpuinfo"));
    // A Sapphire Rapids whose flags lack AMX: the absence is explained, not taken as a CPU fact.
    assert!(
        vm.warnings
            .iter()
            .any(|w| w.contains("model 143 (Sapphire Rapids) has AMX")
                && w.contains("lists no amx flags")),
        "{:?}",
        vm.warnings
    );

    let zen4 = probe("x86-epyc-zen4");
    assert!(avx512.iter().all(|n| usable(&zen4, n)));
    assert!(
        !usable(&zen4, "amx_int8") && !usable(&zen4, "avx_vnni") && !usable(&zen4, "avx512_fp16")
    );
    assert_eq!(zen4.cpu.vendor.as_deref(), Some("AuthenticAMD"));
    assert_eq!(
        zen4.cpu.model_name.as_deref(),
        Some("AMD EPYC 9124 16-Core Processor")
    );

    let t4 = probe("x86-t4-server");
    assert!(usable(&t4, "avx512_vnni") && !usable(&t4, "avx512_bf16"));
}

#[test]
fn arm_fixture_features() {
    let g3 = probe("arm64-graviton3");
    for name in ["asimddp", "i8mm", "bf16", "sve"] {
        assert!(usable(&g3, name), "graviton3 {name}");
    }
    assert!(!usable(&g3, "sve2") && !usable(&g3, "sme"));
    assert_eq!(g3.cpu.model_name.as_deref(), Some("8x Neoverse-V1"));
    let id = g3.cpu.id.as_ref().unwrap();
    assert_eq!(
        (id.implementer.as_deref(), id.parts.as_slice()),
        (Some("0x41"), &["0xd40".to_string()][..])
    );

    let rpi = probe("arm64-rpi5");
    assert!(usable(&rpi, "asimddp") && !usable(&rpi, "i8mm") && !usable(&rpi, "bf16"));
    assert_eq!(rpi.cpu.model_name.as_deref(), Some("4x Cortex-A76"));
    assert!(rpi.jetson.is_none(), "a device tree alone is not Tegra");

    let phone = probe("android-sm8650");
    assert!(usable(&phone, "i8mm") && usable(&phone, "bf16") && !usable(&phone, "sve"));
}

#[test]
fn threads_and_memory() {
    let c = probe("x86-container-cgroup2");
    assert_eq!(c.cpu.logical_cpus, Some(32));
    assert_eq!(
        c.cpu.usable_threads,
        Some(3),
        "cpu.max 350000 100000 is 3.5 CPUs, rounded down"
    );
    assert_eq!(c.memory.limit_bytes, Some(8 * GIB));
    assert_eq!(c.memory.total_bytes, Some(263596724 * 1024));
    // 8 GiB limit, 3 GiB used of which 2 GiB is inactive page cache.
    assert_eq!(c.memory.budget_bytes, Some(7 * GIB));
    let container = c.environment.as_ref().unwrap().container.as_ref().unwrap();
    assert_eq!(
        (container.detected, container.how.as_deref()),
        (true, Some("/.dockerenv"))
    );

    let spr = probe("x86-spr-amx");
    assert_eq!(
        (spr.cpu.logical_cpus, spr.cpu.usable_threads),
        (Some(32), Some(32))
    );
    assert_eq!(
        (spr.cpu.cores_physical, spr.cpu.numa_nodes),
        (Some(16), Some(1))
    );
    assert_eq!(spr.memory.limit_bytes, None, "memory.max `max` is no limit");
    assert_eq!(spr.memory.total_bytes, Some(263596724 * 1024));
    assert_eq!(spr.memory.available_bytes, Some(256983412 * 1024));
    assert!(
        !spr.environment
            .as_ref()
            .unwrap()
            .container
            .as_ref()
            .unwrap()
            .detected
    );

    let orin = probe("jetson-orin-agx");
    assert_eq!(
        (orin.cpu.logical_cpus, orin.cpu.usable_threads),
        (Some(12), Some(12))
    );
    assert_eq!(orin.memory.total_bytes, Some(64335836 * 1024));
}

#[test]
fn gpus_jetson_and_android() {
    let h100 = probe("x86-h100-server");
    let nvidia: Vec<_> = h100.gpus.iter().filter(|g| g.vendor == "nvidia").collect();
    assert_eq!(nvidia.len(), 1);
    assert_eq!(nvidia[0].name.as_deref(), Some("NVIDIA H100 PCIe"));
    assert_eq!(nvidia[0].compute_capability.as_deref(), Some("9.0"));
    assert_eq!(nvidia[0].memory_bytes, Some(80 << 30), "device-id table");
    assert_eq!(nvidia[0].device_id.as_deref(), Some("0x2331"));
    assert_eq!(nvidia[0].driver.as_deref(), Some("nvidia"));
    let bmc = h100.gpus.iter().find(|g| g.vendor == "aspeed").unwrap();
    assert_eq!(bmc.compute_capability, None);

    let t4 = probe("x86-t4-server");
    assert_eq!(t4.gpus.len(), 1);
    assert_eq!(t4.gpus[0].name.as_deref(), Some("Tesla T4"));
    assert_eq!(t4.gpus[0].compute_capability.as_deref(), Some("7.5"));

    let orin = probe("jetson-orin-agx");
    let j = orin.jetson.as_ref().unwrap();
    assert_eq!(j.soc.as_deref(), Some("tegra234"));
    assert_eq!(j.l4t.as_deref(), Some("36.4.3"));
    assert_eq!(j.jetpack.as_deref(), Some("6.2"));
    assert_eq!(j.compute_capability.as_deref(), Some("8.7"));
    assert_eq!(
        j.model.as_deref(),
        Some("NVIDIA Jetson AGX Orin Developer Kit")
    );
    assert_eq!(orin.gpus.len(), 1);
    assert_eq!(
        orin.gpus[0].pci_bdf, None,
        "the Orin GPU is integrated, not PCI"
    );

    let phone = probe("android-sm8650");
    let a = phone.android.as_ref().unwrap();
    assert_eq!(a.soc_model.as_deref(), Some("SM8650"));
    assert_eq!(a.manufacturer.as_deref(), Some("QTI"));
    assert_eq!(a.board_platform.as_deref(), Some("pineapple"));
    let npu = a.npu.as_ref().unwrap();
    assert_eq!(npu.htp_arch.as_deref(), Some("v75"));
    assert!(npu.present && !npu.verified);
    assert!(a.qnn_libraries.iter().any(|l| l.ends_with("libQnnHtp.so")));
    assert!(phone.gpus.is_empty());
}

fn normalized(mut v: Value) -> Value {
    v["tool"]["version"] = Value::String("VERSION".into());
    v
}

#[test]
fn fixture_profiles_do_not_drift() {
    for machine in MACHINES {
        let path = fixture(&format!("profiles/{machine}.json"));
        let text = std::fs::read_to_string(&path).unwrap();
        let stored: Value = serde_json::from_str(&text).unwrap();
        let out = edgeplan()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args([
                "probe",
                "--format",
                "json",
                "--sysroot",
                &format!("fixtures/sysroots/{machine}"),
            ])
            .output()
            .unwrap();
        assert!(out.status.success());
        let fresh: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            normalized(stored.clone()),
            normalized(fresh),
            "fixtures/profiles/{machine}.json is stale: run `sh fixtures/regenerate.sh` and review the diff"
        );
        assert_eq!(stored["source"], "sysroot");
        Profile::from_json(&text, machine).unwrap();
    }
}

#[test]
fn missing_or_non_directory_sysroot_is_66() {
    edgeplan()
        .args(["probe", "--sysroot", "/definitely/not/a/tree"])
        .assert()
        .code(66)
        .stderr(
            predicate::str::contains("/definitely/not/a/tree")
                .and(predicate::str::contains("does not exist")),
        );
    let file = tempfile::NamedTempFile::new().unwrap();
    edgeplan()
        .args(["probe", "--sysroot"])
        .arg(file.path())
        .assert()
        .code(66);
}

fn tree() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn put(root: &Path, rel: &str, bytes: &[u8]) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

const X86_CPUINFO: &str = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Test CPU\nflags\t\t: fpu lm avx avx2 avx512f amx_tile amx_int8\n\n";

#[test]
fn garbage_cpuinfo_without_other_signals_is_65() {
    let dir = tree();
    let junk: Vec<u8> = (0..4096u32).map(|i| (i * 7919 % 256) as u8).collect();
    put(dir.path(), "proc/cpuinfo", &junk);
    edgeplan()
        .args(["probe", "--sysroot"])
        .arg(dir.path())
        .assert()
        .code(65)
        .stderr(
            predicate::str::contains("cannot tell the architecture")
                .and(predicate::str::contains("cpuinfo")),
        )
        .stderr(predicate::str::contains("panicked").not());
    // An empty tree says nothing either, and the error says the file is missing.
    edgeplan()
        .args(["probe", "--sysroot"])
        .arg(tree().path())
        .assert()
        .code(65)
        .stderr(predicate::str::contains(
            "missing, and nothing else in the tree",
        ));
}

#[test]
fn garbage_cpuinfo_with_a_device_tree_is_aarch64_with_unknown_features() {
    let dir = tree();
    put(
        dir.path(),
        "proc/cpuinfo",
        b"\0\0\0\xff\xfe garbage: \0\0\n:::\n",
    );
    put(
        dir.path(),
        "proc/device-tree/compatible",
        b"raspberrypi,5-model-b\0brcm,bcm2712\0",
    );
    let out = edgeplan()
        .args(["probe", "--format", "json", "--sysroot"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let p = Profile::from_json(&String::from_utf8_lossy(&out.stdout), "out").unwrap();
    assert_eq!(p.hardware_class, HardwareClass::Arm64Cpu);
    assert!(p.cpu.features.is_empty() && p.cpu.flags.is_empty());
    assert_eq!(p.memory.total_bytes, None);
    assert!(
        p.warnings.iter().any(|w| w.contains("inferred")),
        "{:?}",
        p.warnings
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning"));
}

#[test]
fn bad_files_become_unknown_facts_with_warnings() {
    let dir = tree();
    let r = dir.path();
    put(r, "proc/cpuinfo", X86_CPUINFO.as_bytes());
    // meminfo is a directory, a symlink loop stands for /sys/devices/system/cpu/online,
    // cgroup files are empty or binary, the PCI class file is a FIFO-like directory.
    std::fs::create_dir_all(r.join("proc/meminfo")).unwrap();
    std::fs::create_dir_all(r.join("sys/devices/system/cpu")).unwrap();
    std::os::unix::fs::symlink("online2", r.join("sys/devices/system/cpu/online")).unwrap();
    std::os::unix::fs::symlink("online", r.join("sys/devices/system/cpu/online2")).unwrap();
    put(r, "proc/self/cgroup", b"0::/\n");
    put(r, "sys/fs/cgroup/cgroup.controllers", b"");
    put(r, "sys/fs/cgroup/cpu.max", b"");
    put(r, "sys/fs/cgroup/memory.max", b"\xff\xfe\0\0max?");
    std::fs::create_dir_all(r.join("sys/bus/pci/devices/0000:01:00.0/class")).unwrap();
    put(r, "sys/bus/pci/devices/0000:02:00.0/class", b"");
    put(r, "etc/nv_tegra_release", b"\0\0\0");
    let out = edgeplan()
        .args(["probe", "--format", "json", "--sysroot"])
        .arg(r)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = Profile::from_json(&String::from_utf8_lossy(&out.stdout), "out").unwrap();
    assert_eq!(p.memory.total_bytes, None);
    assert_eq!(p.memory.limit_bytes, None);
    assert_eq!(
        p.cpu.logical_cpus,
        Some(1),
        "falls back to the processor count"
    );
    assert!(p.cpu.features["amx_int8"].usable);
    assert_eq!(
        p.hardware_class,
        HardwareClass::Jetson,
        "nv_tegra_release exists, even if garbled"
    );
    assert_eq!(p.jetson.as_ref().unwrap().l4t, None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("meminfo: not a regular file"), "{stderr}");
    assert!(stderr.contains("online: cannot read"), "{stderr}");
    assert!(p.warnings.iter().any(|w| w.contains("L4T unknown")));
    assert!(!stderr.contains("panicked"));
}

#[test]
fn a_fifo_in_the_tree_does_not_hang_the_probe() {
    let dir = tree();
    put(dir.path(), "proc/cpuinfo", X86_CPUINFO.as_bytes());
    let fifo = dir.path().join("proc/meminfo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    edgeplan()
        .args(["probe", "--format", "json", "--sysroot"])
        .arg(dir.path())
        .timeout(std::time::Duration::from_secs(20))
        .assert()
        .success()
        .stderr(predicate::str::contains("not a regular file"));
}

#[test]
fn an_enormous_cpuinfo_is_cut_at_one_mib() {
    let dir = tree();
    let mut text = X86_CPUINFO.to_string();
    while text.len() < 3 << 20 {
        text.push_str("processor\t: 1\nbogus\t: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n\n");
    }
    put(dir.path(), "proc/cpuinfo", text.as_bytes());
    let out = edgeplan()
        .args(["probe", "--format", "json", "--sysroot"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let p = Profile::from_json(&String::from_utf8_lossy(&out.stdout), "out").unwrap();
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("only the start was read")),
        "{:?}",
        p.warnings
    );
    assert!(p.cpu.logical_cpus.unwrap() < 20_000);
}

#[test]
fn dump_round_trips_and_redacts() {
    for machine in [
        "x86-h100-server",
        "android-sm8650",
        "jetson-orin-agx",
        "x86-container-cgroup2",
        "arm64-rpi5",
    ] {
        let dump = tempfile::tempdir().unwrap();
        let dump_dir = dump.path().join(machine);
        edgeplan()
            .args(["probe", "--format", "json", "--sysroot"])
            .arg(fixture(&format!("sysroots/{machine}")))
            .arg("--dump")
            .arg(&dump_dir)
            .assert()
            .success()
            .stderr(predicate::str::contains("replay with --sysroot"));
        let original = probe_json(&fixture(&format!("sysroots/{machine}")));
        let replayed = probe_json(&dump_dir);
        assert_eq!(
            original, replayed,
            "{machine}: the dump does not reproduce the profile"
        );
    }
    let dump = tempfile::tempdir().unwrap();
    edgeplan()
        .args(["probe", "--format", "json", "--sysroot"])
        .arg(fixture("sysroots/x86-h100-server"))
        .arg("--dump")
        .arg(dump.path())
        .assert()
        .success();
    let info = std::fs::read_to_string(
        dump.path()
            .join("proc/driver/nvidia/gpus/0000:41:00.0/information"),
    )
    .unwrap();
    assert!(
        info.contains("NVIDIA H100 PCIe")
            && info.contains("REDACTED")
            && !info.contains("GPU-9c1f2a77")
    );

    let dump = tempfile::tempdir().unwrap();
    edgeplan()
        .args(["probe", "--format", "json", "--sysroot"])
        .arg(fixture("sysroots/android-sm8650"))
        .arg("--dump")
        .arg(dump.path())
        .assert()
        .success();
    let props = std::fs::read_to_string(dump.path().join("system/build.prop")).unwrap();
    assert!(props.contains("ro.serialno=REDACTED") && !props.contains("R5CX20ABCDE"));
    let vendor = std::fs::read_to_string(dump.path().join("vendor/build.prop")).unwrap();
    assert!(!vendor.contains("a4:c6:9a:12:34:56"));
    assert!(dump.path().join("vendor/lib64/libQnnHtp.so").exists());
}

#[test]
fn table_format_is_for_people_and_json_is_the_default_off_a_terminal() {
    edgeplan()
        .args(["probe", "--format", "table", "--sysroot"])
        .arg(fixture("sysroots/x86-container-cgroup2"))
        .assert()
        .success()
        .stdout(
            predicate::str::contains("hardware_class")
                .and(predicate::str::contains("x86_cpu"))
                .and(predicate::str::contains("3 usable of 32 logical"))
                .and(predicate::str::contains("amx_int8"))
                .and(predicate::str::contains("limit 8.0 GiB")),
        );
    let out = edgeplan()
        .args(["probe", "--sysroot"])
        .arg(fixture("sysroots/jetson-orin-agx"))
        .output()
        .unwrap();
    let v: Value =
        serde_json::from_slice(&out.stdout).expect("stdout is not a terminal here, so JSON");
    assert_eq!(v["hardware_class"], "jetson");
}

/// The live probe agrees with this host's own /proc/cpuinfo, whatever the host.
#[test]
fn live_probe_is_consistent_with_proc_cpuinfo() {
    let out = edgeplan()
        .args(["probe", "--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = Profile::from_json(&String::from_utf8_lossy(&out.stdout), "live").unwrap();
    assert_eq!(p.source.as_deref(), Some("live"));
    assert_eq!(p.arch.as_str(), std::env::consts::ARCH);
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    let key = if p.arch.as_str() == "x86_64" {
        "flags"
    } else {
        "Features"
    };
    let flags: Vec<&str> = cpuinfo
        .lines()
        .find(|l| l.split(':').next().map(str::trim) == Some(key))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.split_whitespace().collect())
        .unwrap_or_default();
    assert!(!p.cpu.features.is_empty());
    for (name, f) in &p.cpu.features {
        assert!(f.os.is_some(), "{name}: the live probe knows the OS's word");
        if f.usable {
            assert!(
                f.cpu && f.os == Some(true),
                "{name}: usable needs the CPU's and the OS's word"
            );
        } else if !name.starts_with("amx") {
            assert!(
                !(f.cpu && f.os == Some(true)),
                "{name}: reported and enabled, yet not usable"
            );
        }
        if f.usable && !flags.is_empty() {
            assert!(
                flags.contains(&name.as_str()),
                "{name} usable but not in /proc/cpuinfo"
            );
        }
        if flags.contains(&name.as_str()) && f.os == Some(true) && !name.starts_with("amx") {
            assert!(
                f.usable,
                "{name}: listed by the kernel and enabled, yet not usable"
            );
        }
    }
    let processors = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count() as u32;
    assert_eq!(p.cpu.logical_cpus, Some(processors));
    let threads = p.cpu.usable_threads.unwrap();
    assert!(threads >= 1 && threads <= processors);
    assert!(threads as usize <= std::thread::available_parallelism().unwrap().get());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let total_kb: u64 = meminfo
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(p.memory.total_bytes, Some(total_kb * 1024));
    let bf16 = if p.arch.as_str() == "x86_64" {
        p.feature_usable("avx512_bf16") || p.feature_usable("amx_bf16")
    } else {
        p.feature_usable("bf16")
    };
    if matches!(
        p.hardware_class,
        HardwareClass::X86Cpu | HardwareClass::Arm64Cpu
    ) {
        assert_eq!(p.supports_bf16, bf16);
    }
}

/// Each `$ edgeplan ...` example in docs/profile.md runs, and every output line shown
/// under it appears in the real output (examples may elide lines with `...`).
#[test]
fn docs_examples_run_against_fixtures() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/profile.md")).unwrap();
    let mut examples = 0;
    let mut lines = doc.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(cmd) = line.strip_prefix("$ edgeplan ") else {
            continue;
        };
        let mut shown = Vec::new();
        while let Some(next) = lines.peek() {
            if next.starts_with("```") || next.starts_with("$ ") {
                break;
            }
            shown.push(lines.next().unwrap().trim().to_string());
        }
        let args: Vec<&str> = cmd.split_whitespace().collect();
        let out = edgeplan().current_dir(root).args(&args).output().unwrap();
        assert!(
            out.status.success(),
            "docs example `{cmd}` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        for want in shown.iter().filter(|l| !l.is_empty() && *l != "...") {
            assert!(
                stdout.lines().any(|l| l.trim() == want),
                "docs example `{cmd}`: no line {want:?} in\n{stdout}"
            );
        }
        examples += 1;
    }
    assert!(
        examples >= 3,
        "docs/profile.md has {examples} runnable examples"
    );
}

#[test]
fn an_android_soc_without_a_known_npu_is_arm64_cpu() {
    let dir = tree();
    let r = dir.path();
    put(r, "proc/cpuinfo", b"processor\t: 0\nFeatures\t: fp asimd asimddp i8mm bf16\nCPU implementer\t: 0x41\nCPU part\t: 0xd81\n\n");
    put(
        r,
        "vendor/build.prop",
        b"ro.soc.manufacturer=Mediatek\nro.soc.model=MT6989\nro.board.platform=mt6989\n",
    );
    let p = Profile::from_value(probe_json(r), "mtk").unwrap();
    assert_eq!(p.hardware_class, HardwareClass::Arm64Cpu);
    let a = p.android.as_ref().unwrap();
    assert_eq!(a.soc_model.as_deref(), Some("MT6989"));
    assert!(a.npu.is_none());
    assert!(p.supports_bf16, "the CPU runs the model, and it has bf16");
}

#[test]
fn a_dump_that_cannot_be_written_is_74() {
    let file = tempfile::NamedTempFile::new().unwrap();
    edgeplan()
        .args(["probe", "--format", "json", "--sysroot"])
        .arg(fixture("sysroots/arm64-rpi5"))
        .arg("--dump")
        .arg(file.path().join("below-a-file"))
        .assert()
        .code(74)
        .stderr(predicate::str::contains("cannot write dump"));
}

/// One entry of `fixtures/real/manifest.toml`.
fn real_manifest() -> Vec<toml::Table> {
    let text = std::fs::read_to_string(fixture("real/manifest.toml")).unwrap();
    let table: toml::Table = text.parse().unwrap();
    table["tree"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_table().unwrap().clone())
        .collect()
}

/// The profile's facts with the tree's own path taken out of its warnings.
fn facts_of(json: &Value, root: &Path) -> Value {
    let mut v = json.clone();
    let obj = v.as_object_mut().unwrap();
    obj.remove("label");
    obj.insert("tool".into(), Value::Null);
    let shown = root.display().to_string();
    if let Some(Value::Array(warnings)) = obj.get_mut("warnings") {
        for w in warnings {
            *w = Value::String(w.as_str().unwrap().replace(&shown, "<root>"));
        }
    }
    v
}

#[test]
fn real_capture_corpus_matches_its_manifest() {
    let trees = real_manifest();
    assert!(trees.len() >= 40, "the corpus has {} trees", trees.len());
    let on_disk = std::fs::read_dir(fixture("real"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().is_dir())
        .count();
    assert_eq!(
        on_disk,
        trees.len(),
        "every tree in fixtures/real has a manifest entry"
    );
    let mut failures = Vec::new();
    for t in &trees {
        let name = t["name"].as_str().unwrap();
        assert!(
            t.get("source")
                .and_then(|s| s.as_str())
                .is_some_and(|s| s.len() > 20),
            "{name}: no citation"
        );
        let root = fixture(&format!("real/{name}"));
        let out = edgeplan()
            .args(["probe", "--format", "json", "--sysroot"])
            .arg(&root)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
        if let Some(code) = t.get("exit").and_then(|c| c.as_integer()) {
            let error = t["error"].as_str().unwrap();
            if out.status.code() != Some(code as i32) || !stderr.contains(error) {
                failures.push(format!(
                    "{name}: want exit {code} with {error:?}, got {:?}: {stderr}",
                    out.status.code()
                ));
            }
            assert_eq!(stderr.lines().count(), 1, "{name}: one line: {stderr}");
            continue;
        }
        if !out.status.success() {
            failures.push(format!("{name}: failed: {stderr}"));
            continue;
        }
        let json: Value = serde_json::from_slice(&out.stdout).unwrap();
        for (key, want) in t {
            let got = match key.as_str() {
                "name" | "source" => continue,
                "arch" | "hardware_class" => json[key].clone(),
                "soc_model" => json["android"]["soc_model"].clone(),
                "soc_model_source" => {
                    let got = json["android"]["soc_model_source"].as_str().unwrap_or("");
                    if !got.starts_with(want.as_str().unwrap()) {
                        failures.push(format!("{name}: soc_model_source {got:?}, want {want}"));
                    }
                    continue;
                }
                "htp_arch" => json["android"]["npu"]["htp_arch"].clone(),
                // Pointers to values that must be null (TOML has no null): unknown, not guessed.
                "null" => {
                    for pointer in want.as_array().into_iter().flatten() {
                        let pointer = pointer.as_str().unwrap_or("");
                        let got = json.pointer(pointer).cloned().unwrap_or(Value::Null);
                        if !got.is_null() {
                            failures.push(format!("{name}: {pointer} = {got}, want null"));
                        }
                    }
                    continue;
                }
                // Any other profile value, by JSON pointer (`"/jetson/soc"`, `"/gpus/0/name"`).
                pointer if pointer.starts_with('/') => {
                    json.pointer(pointer).cloned().unwrap_or(Value::Null)
                }
                // The features the profile calls usable, in the profile's (sorted) order.
                "usable_features" => Value::Array(
                    json["cpu"]["features"]
                        .as_object()
                        .unwrap()
                        .iter()
                        .filter(|(_, f)| f["usable"] == Value::Bool(true))
                        .map(|(n, _)| Value::String(n.clone()))
                        .collect(),
                ),
                "total_bytes" | "available_bytes" => json["memory"][key].clone(),
                "hypervisor" => json["environment"]["hypervisor"]["detected"].clone(),
                // One fragment, or a list of them, each in some warning.
                "warning" => {
                    let fragments: Vec<&str> = match want.as_array() {
                        Some(list) => list.iter().filter_map(|f| f.as_str()).collect(),
                        None => want.as_str().into_iter().collect(),
                    };
                    let warnings = json["warnings"].as_array().cloned().unwrap_or_default();
                    for fragment in fragments {
                        if !warnings
                            .iter()
                            .any(|w| w.as_str().is_some_and(|w| w.contains(fragment)))
                        {
                            failures
                                .push(format!("{name}: no warning has {fragment:?}: {warnings:?}"));
                        }
                    }
                    continue;
                }
                // `plan --sysroot` on the tree: the path at speed priority and how it is backed.
                "plan" | "plan_verified" => {
                    let out = edgeplan()
                        .args(["plan", "--format", "json", "--sysroot"])
                        .arg(&root)
                        .output()
                        .unwrap();
                    if !out.status.success() {
                        failures.push(format!(
                            "{name}: plan failed: {}",
                            String::from_utf8_lossy(&out.stderr)
                        ));
                        continue;
                    }
                    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
                    let field = if key == "plan" { "name" } else { "verified" };
                    plan["path"][field].clone()
                }
                cpu_key => json["cpu"][cpu_key].clone(),
            };
            let want = serde_json::to_value(want).unwrap();
            if got != want {
                failures.push(format!("{name}: {key} = {got}, want {want}"));
            }
        }

        // `--dump` then `--sysroot` of the dump gives the same facts.
        let dump = tempfile::tempdir().unwrap();
        edgeplan()
            .args(["probe", "--format", "json", "--sysroot"])
            .arg(&root)
            .arg("--dump")
            .arg(dump.path())
            .assert()
            .success();
        let replayed = probe_json(dump.path());
        if facts_of(&json, &root) != facts_of(&replayed, dump.path()) {
            failures.push(format!("{name}: the dump does not reproduce the facts"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn truncated_real_captures_never_panic() {
    for t in real_manifest() {
        let name = t["name"].as_str().unwrap();
        let original = fixture(&format!("real/{name}"));
        // GPU and Jetson captures without a cpuinfo: cut every file they hold at half.
        let Ok(text) = std::fs::read(original.join("proc/cpuinfo")) else {
            let dir = tempfile::tempdir().unwrap();
            copy_cut(&original, dir.path());
            let out = edgeplan()
                .args(["probe", "--format", "json", "--sysroot"])
                .arg(dir.path())
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                matches!(out.status.code(), Some(0 | 65)) && !stderr.contains("panicked"),
                "{name} cut in half: {:?} {stderr}",
                out.status.code()
            );
            continue;
        };
        for cut in [text.len() / 3, text.len() / 2, text.len().saturating_sub(7)] {
            let dir = tempfile::tempdir().unwrap();
            put(dir.path(), "proc/cpuinfo", &text[..cut]);
            let out = edgeplan()
                .args(["probe", "--format", "json", "--sysroot"])
                .arg(dir.path())
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                matches!(out.status.code(), Some(0 | 65)) && !stderr.contains("panicked"),
                "{name} cut at {cut}: {:?} {stderr}",
                out.status.code()
            );
        }
    }
}

/// Copies the tree `from` into `to` with every file cut to its first half.
fn copy_cut(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_cut(&entry.path(), &target);
        } else {
            let bytes = std::fs::read(entry.path()).unwrap();
            std::fs::write(&target, &bytes[..bytes.len() / 2]).unwrap();
        }
    }
}

const ARM64_CPUINFO: &str = "processor\t: 0\nFeatures\t: fp asimd asimddp\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: 0xd05\n\nprocessor\t: 1\nFeatures\t: fp asimd asimddp\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: 0xd41\n";

fn plan_path(root: &Path) -> String {
    let out = edgeplan()
        .args(["plan", "--format", "json", "--sysroot"])
        .arg(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    plan["path"]["name"].as_str().unwrap().to_string()
}

#[test]
fn a_shared_codename_claims_no_npu_and_plan_exports_nothing() {
    let dir = tree();
    put(dir.path(), "proc/cpuinfo", ARM64_CPUINFO.as_bytes());
    put(
        dir.path(),
        "system/build.prop",
        b"ro.board.platform=lahaina\n",
    );
    let p = Profile::from_value(probe_json(dir.path()), "lahaina").unwrap();
    assert_eq!(p.hardware_class, HardwareClass::Arm64Cpu);
    let android = p.android.as_ref().unwrap();
    assert_eq!(android.soc_model, None);
    assert_eq!(android.soc_candidates, ["SM8350", "SM7325"]);
    assert!(!android.npu.as_ref().unwrap().present);
    assert!(p.warnings.iter().any(|w| w.contains("ro.soc.model")));
    assert_ne!(plan_path(dir.path()), "export-qnn-w8a16");

    // The numeric soc_id settles it: SM8350 is in the HTP table.
    put(dir.path(), "sys/devices/soc0/soc_id", b"439\n");
    put(dir.path(), "sys/devices/soc0/machine", b"Snapdragon\n");
    let p = Profile::from_value(probe_json(dir.path()), "lahaina").unwrap();
    assert_eq!(p.hardware_class, HardwareClass::NpuPhone);
    let android = p.android.as_ref().unwrap();
    assert_eq!(android.soc_model.as_deref(), Some("SM8350"));
    assert!(
        android
            .soc_model_source
            .as_deref()
            .unwrap()
            .contains("soc_id 439")
    );
    assert_eq!(
        android.npu.as_ref().unwrap().htp_arch.as_deref(),
        Some("v68")
    );
    assert_eq!(plan_path(dir.path()), "export-qnn-w8a16");
}

#[test]
fn a_hand_written_npu_phone_without_an_htp_arch_is_not_exported() {
    let text = std::fs::read_to_string(fixture("profiles/hand-android-npu.json")).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["android"]["npu"]["htp_arch"] = Value::Null;
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), v.to_string()).unwrap();
    let out = edgeplan()
        .args(["plan", "--format", "json", "--explain", "--profile"])
        .arg(file.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_ne!(plan["path"]["name"], "export-qnn-w8a16");
    assert!(plan.to_string().contains("npu_unsure"));
}

#[test]
fn xen_pv_and_virtualbox_guests_are_seen_as_lscpu_sees_them() {
    let dir = tree();
    put(dir.path(), "proc/cpuinfo", X86_CPUINFO.as_bytes());
    put(dir.path(), "proc/xen/capabilities", b"");
    let p = probe_json(dir.path());
    assert_eq!(p["environment"]["hypervisor"]["name"], "xen");

    let dir = tree();
    put(dir.path(), "proc/cpuinfo", X86_CPUINFO.as_bytes());
    put(
        dir.path(),
        "sys/bus/pci/devices/0000:00:04.0/vendor",
        b"0x80ee\n",
    );
    put(
        dir.path(),
        "sys/bus/pci/devices/0000:00:04.0/class",
        b"0x088000\n",
    );
    let p = probe_json(dir.path());
    assert_eq!(p["environment"]["hypervisor"]["name"], "virtualbox");
}

#[test]
fn usable_cpus_follow_the_process_mask_and_cpuset_within_online() {
    let dir = tree();
    put(dir.path(), "proc/cpuinfo", X86_CPUINFO.as_bytes());
    put(dir.path(), "sys/devices/system/cpu/online", b"0-15\n");
    put(dir.path(), "sys/devices/system/cpu/possible", b"0-63\n");
    put(
        dir.path(),
        "proc/self/status",
        b"Name:\tjob\nCpus_allowed_list:\t0-5\n",
    );
    let p = probe_tree(dir.path());
    assert_eq!(p.cpu.logical_cpus, Some(16));
    assert_eq!(p.cpu.possible_cpus, Some(64));
    assert_eq!(p.cpu.usable_threads, Some(6));
    let lists = p.cpu.cpulists.as_ref().unwrap();
    assert_eq!(
        (
            lists.possible.as_deref(),
            lists.online.as_deref(),
            lists.usable.as_deref()
        ),
        (Some("0-63"), Some("0-15"), Some("0-5"))
    );

    // A v1 cpuset reached through /proc/self/cpuset narrows it further.
    put(dir.path(), "proc/self/cpuset", b"/slurm/job7\n");
    put(
        dir.path(),
        "sys/fs/cgroup/cpuset/slurm/job7/cpuset.cpus",
        b"4-9\n",
    );
    let p = probe_tree(dir.path());
    assert_eq!(p.cpu.usable_threads, Some(2));
    assert!(p.cpu.sources["usable_threads"].contains("slurm/job7"));
}

fn probe_tree(root: &Path) -> Profile {
    Profile::from_value(probe_json(root), "tree").unwrap()
}

#[test]
fn an_x86_cpu_without_avx_carries_a_caveat_into_the_plan() {
    let dir = tree();
    put(
        dir.path(),
        "proc/cpuinfo",
        b"processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel name\t: Intel(R) Celeron(R) CPU N3050\nflags\t\t: fpu lm sse sse2 ssse3 sse4_1 sse4_2\n",
    );
    let p = probe_tree(dir.path());
    assert!(
        p.cpu.caveats.iter().any(|c| c.starts_with("no AVX")),
        "{:?}",
        p.cpu.caveats
    );
    let out = edgeplan()
        .args(["plan", "--format", "json", "--sysroot"])
        .arg(dir.path())
        .output()
        .unwrap();
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        plan["path"]["notes"]
            .to_string()
            .contains("CPU caveat: no AVX")
    );
}

#[test]
fn a_slurm_v2_cpuset_without_mountinfo_still_limits_threads() {
    let dir = tree();
    put(dir.path(), "proc/cpuinfo", X86_CPUINFO.as_bytes());
    put(dir.path(), "sys/devices/system/cpu/online", b"0-63\n");
    put(
        dir.path(),
        "proc/self/cgroup",
        b"0::/system.slice/slurmstepd.scope/job_42/step_0\n",
    );
    put(
        dir.path(),
        "sys/fs/cgroup/system.slice/slurmstepd.scope/job_42/step_0/cpuset.cpus.effective",
        b"8-15\n",
    );
    let p = probe_tree(dir.path());
    assert_eq!(p.cpu.usable_threads, Some(8));
    assert_eq!(p.cpu.cpulists.unwrap().usable.as_deref(), Some("8-15"));
}

#[test]
fn a_firmware_build_prop_alone_names_the_architecture() {
    let dir = tree();
    put(
        dir.path(),
        "vendor/build.prop",
        b"ro.vendor.product.cpu.abilist=arm64-v8a,armeabi-v7a,armeabi\nro.soc.manufacturer=QTI\nro.soc.model=SM8650\nro.board.platform=pineapple\n",
    );
    let p = probe_tree(dir.path());
    assert_eq!(p.arch, edgeplan::profile::Arch::Aarch64);
    assert_eq!(p.hardware_class, HardwareClass::NpuPhone);
    assert_eq!(p.android.unwrap().soc_model.as_deref(), Some("SM8650"));

    let dir = tree();
    put(
        dir.path(),
        "system/build.prop",
        b"ro.product.cpu.abilist=armeabi-v7a,armeabi\n",
    );
    edgeplan()
        .args(["probe", "--sysroot"])
        .arg(dir.path())
        .assert()
        .code(65)
        .stderr(predicate::str::contains(
            "32-bit ARM is not a supported target",
        ));
}

#[test]
fn a_fleet_plan_goes_on_past_an_unsupported_architecture() {
    let dir = tree();
    let good = std::fs::read_to_string(fixture("profiles/arm64-rpi5.json")).unwrap();
    put(dir.path(), "a.json", good.as_bytes());
    put(
        dir.path(),
        "b.json",
        good.replace("\"arch\": \"aarch64\"", "\"arch\": \"s390x\"")
            .as_bytes(),
    );
    let out = edgeplan()
        .args(["plan", "--format", "jsonl", "--profile"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // One plan, and for the s390x profile the JSON Lines error record (`exit` 65).
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert_eq!(lines[0]["path"]["name"], "fp16", "{stdout}");
    assert_eq!(lines[1]["exit"], 65, "{stdout}");
    assert!(
        lines[1]["source"].as_str().unwrap().ends_with("b.json"),
        "{stdout}"
    );
    assert!(
        stderr.contains("b.json") && stderr.contains("s390x"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"));
}

#[test]
fn hybrid_parts_are_named_from_the_kernels_per_type_cpu_lists() {
    // A 2 P-core + 8 E-core part as the kernel describes it: uniform-looking cpuinfo
    // blocks (no siblings lines), and the hybrid PMU devices' cpu lists in sysfs.
    let dir = tree();
    let blocks: String = (0..12)
        .map(|n| {
            format!("processor\t: {n}\nvendor_id\t: GenuineIntel\nflags\t\t: fpu lm avx avx2\n\n")
        })
        .collect();
    put(dir.path(), "proc/cpuinfo", blocks.as_bytes());
    put(dir.path(), "sys/devices/system/cpu/online", b"0-11\n");
    put(dir.path(), "sys/devices/cpu_core/cpus", b"0-3\n");
    put(dir.path(), "sys/devices/cpu_atom/cpus", b"4-11\n");
    let json = probe_json(dir.path());
    let warnings = json["warnings"].to_string();
    assert!(
        warnings.contains("hybrid CPU: performance cores on CPUs 0-3")
            && warnings.contains("efficiency cores on CPUs 4-11"),
        "{warnings}"
    );
    assert_eq!(json["cpu"]["logical_cpus"], 12, "the counts are left alone");
    // `--dump` keeps the two files, so the replay says the same.
    let dump = tree();
    edgeplan()
        .args(["probe", "--format", "json", "--sysroot"])
        .arg(dir.path())
        .arg("--dump")
        .arg(dump.path())
        .assert()
        .success();
    assert!(
        probe_json(dump.path())["warnings"]
            .to_string()
            .contains("performance cores on CPUs 0-3")
    );
    // Without the sysfs lists nothing says hybrid (the blocks are uniform).
    std::fs::remove_dir_all(dir.path().join("sys/devices/cpu_core")).unwrap();
    assert!(
        !probe_json(dir.path())["warnings"]
            .to_string()
            .contains("hybrid")
    );
}

#[test]
fn a_memtotal_that_is_not_a_count_is_named_as_such() {
    for (meminfo, says) in [
        (
            "MemTotal: 99999999999999999999 kB\n",
            "not a byte count in kB",
        ),
        ("MemFree: 5 kB\n", "no MemTotal line"),
    ] {
        let dir = tree();
        put(dir.path(), "proc/cpuinfo", X86_CPUINFO.as_bytes());
        put(dir.path(), "proc/meminfo", meminfo.as_bytes());
        edgeplan()
            .args(["probe", "--sysroot"])
            .arg(dir.path())
            .assert()
            .success()
            .stderr(predicate::str::contains(says))
            .stdout(predicate::str::contains("\"total_bytes\": null"));
    }
}

/// The `information` file text NVIDIA's container tooling quotes for a V100 (Go doc comment
/// of its `/proc/driver/nvidia/gpus/*/information` parser), UUID redacted as `--dump` does.
const V100_INFORMATION: &str = "Model:           Tesla V100-SXM2-16GB\nIRQ:             408\nGPU UUID:        REDACTED\nVideo BIOS:      88.00.41.00.01\nBus Type:        PCIe\nDMA Size:        47 bits\nDMA Mask:        0x7fffffffffff\nBus Location:    0000:06:00.0\nDevice Minor:    0\nGPU Excluded:    No\n";

#[test]
fn a_gpu_only_the_nvidia_driver_lists_is_still_a_cuda_gpu() {
    // A capture of /proc alone: no sysfs, no cpuinfo. The NVRM line names the
    // architecture; the driver's per-GPU entry names the GPU.
    let dir = tree();
    put(
        dir.path(),
        "proc/driver/nvidia/version",
        b"NVRM version: NVIDIA UNIX x86_64 Kernel Module  384.98  Thu Oct 26 15:16:01 PDT 2017\n",
    );
    put(
        dir.path(),
        "proc/driver/nvidia/gpus/0000:06:00.0/information",
        V100_INFORMATION.as_bytes(),
    );
    let p = probe_json(dir.path());
    assert_eq!(p["arch"], "x86_64");
    assert_eq!(p["hardware_class"], "cuda_discrete");
    let gpu = &p["gpus"][0];
    assert_eq!(gpu["name"], "Tesla V100-SXM2-16GB");
    assert_eq!(gpu["compute_capability"], "7.0");
    assert_eq!(gpu["pci_bdf"], "0000:06:00.0");
    assert_eq!(gpu["driver_version"], "384.98");
    // No device id was captured, so no marketed size: unknown, with a warning.
    assert!(gpu["memory_bytes"].is_null());
    assert!(
        gpu["sources"]["listed"]
            .as_str()
            .unwrap()
            .contains("not in")
    );
    assert_eq!(p["supports_bf16"], false);

    // With sysfs present too, the GPU is listed once, from sysfs.
    put(
        dir.path(),
        "sys/bus/pci/devices/0000:06:00.0/vendor",
        b"0x10de\n",
    );
    put(
        dir.path(),
        "sys/bus/pci/devices/0000:06:00.0/device",
        b"0x1db1\n",
    );
    put(
        dir.path(),
        "sys/bus/pci/devices/0000:06:00.0/class",
        b"0x030200\n",
    );
    let p = probe_json(dir.path());
    assert_eq!(p["gpus"].as_array().unwrap().len(), 1);
    assert_eq!(p["gpus"][0]["memory_bytes"], 16u64 << 30);
    assert!(p["gpus"][0]["sources"].get("listed").is_none());
}

#[test]
fn an_unknown_nvrm_architecture_is_refused_by_name() {
    let dir = tree();
    put(
        dir.path(),
        "proc/driver/nvidia/version",
        b"NVRM version: NVIDIA UNIX ppc64le Kernel Module  418.67  Sat Apr  6 03:07:24 CDT 2019\n",
    );
    let out = edgeplan()
        .args(["probe", "--format", "json", "--sysroot"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(65), "{stderr}");
    assert!(stderr.contains("ppc64le"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn on_a_jetson_the_drivers_own_gpu_entry_is_not_a_second_gpu() {
    let dir = tree();
    put(
        dir.path(),
        "etc/nv_tegra_release",
        b"# R35 (release), REVISION: 3.1, GCID: 32827747, BOARD: t186ref, EABI: aarch64, DATE: Sun Mar 19 15:19:21 UTC 2023\n",
    );
    put(
        dir.path(),
        "proc/device-tree/compatible",
        b"nvidia,p3768-0000+p3767-0003\0nvidia,p3767-0003\0nvidia,tegra234\0",
    );
    put(
        dir.path(),
        "proc/driver/nvidia/gpus/0000:00:00.0/information",
        b"Model:           Orin (nvgpu)\n",
    );
    put(
        dir.path(),
        "proc/driver/nvidia/gpus/17000000.gpu/information",
        b"Model:           Orin (nvgpu)\n",
    );
    let p = probe_json(dir.path());
    assert_eq!(p["hardware_class"], "jetson");
    let gpus = p["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), 1, "{gpus:?}");
    assert_eq!(gpus[0]["name"], "Orin (integrated)");
}

#[test]
fn a_gpu_held_for_a_virtual_machine_does_not_make_a_cuda_host() {
    // HikariKnight/quickpassthrough#22: `lspci -k` shows an RTX 3060 (10de:2504, per the
    // same report's dmesg) at 07:00.0 with `Kernel driver in use: vfio-pci`.
    let dir = tree();
    put(dir.path(), "proc/cpuinfo", X86_CPUINFO.as_bytes());
    let dev = "sys/bus/pci/devices/0000:07:00.0";
    put(dir.path(), &format!("{dev}/vendor"), b"0x10de\n");
    put(dir.path(), &format!("{dev}/device"), b"0x2504\n");
    put(dir.path(), &format!("{dev}/class"), b"0x030000\n");
    put(dir.path(), &format!("{dev}/driver"), b"vfio-pci\n");
    let p = probe_json(dir.path());
    assert_eq!(p["hardware_class"], "x86_cpu");
    assert_eq!(p["gpus"][0]["driver"], "vfio-pci");
    assert_eq!(p["gpus"][0]["compute_capability"], "8.6");
    let warnings = p["warnings"].to_string();
    assert!(warnings.contains("bound to vfio-pci"), "{warnings}");

    // Bound to nouveau: still an NVIDIA GPU host, but told that CUDA needs nvidia.
    put(dir.path(), &format!("{dev}/driver"), b"nouveau\n");
    let p = probe_json(dir.path());
    assert_eq!(p["hardware_class"], "cuda_discrete");
    let warnings = p["warnings"].to_string();
    assert!(warnings.contains("bound to nouveau"), "{warnings}");
}

const ARM_CPUINFO: &str =
    "processor\t: 0\nFeatures\t: fp asimd\nCPU implementer\t: 0x51\nCPU part\t: 0x205\n\n";

#[test]
fn soc_id_305_is_the_8996_pro_and_agrees_with_its_machine_name() {
    let dir = tree();
    let r = dir.path();
    put(r, "proc/cpuinfo", ARM_CPUINFO.as_bytes());
    put(r, "system/build.prop", b"ro.board.platform=msm8996\n");
    put(r, "sys/devices/soc0/soc_id", b"305\n");
    put(r, "sys/devices/soc0/machine", b"MSM8996pro\n");
    let p = probe_tree(r);
    let a = p.android.as_ref().unwrap();
    assert_eq!(a.soc_model.as_deref(), Some("MSM8996SG"));
    assert!(
        !p.warnings.iter().any(|w| w.contains("disagreement")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn a_v2_container_cpuset_named_only_by_proc_self_cpuset_limits_threads() {
    let dir = tree();
    let r = dir.path();
    put(r, "proc/cpuinfo", X86_CPUINFO.as_bytes());
    put(r, "sys/devices/system/cpu/online", b"0-31\n");
    put(r, "proc/self/cpuset", b"/kubepods/pod7/ctr\n");
    put(
        r,
        "proc/mounts",
        b"cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev 0 0\n",
    );
    put(
        r,
        "sys/fs/cgroup/kubepods/pod7/ctr/cpuset.cpus.effective",
        b"2-7\n",
    );
    let p = probe_tree(r);
    assert_eq!(p.cpu.usable_threads, Some(6));
    assert_eq!(p.cpu.cpulists.unwrap().usable.as_deref(), Some("2-7"));
}

#[test]
fn a_mediatek_part_in_cpuinfo_wins_over_the_platform_property_and_both_are_named() {
    let dir = tree();
    let r = dir.path();
    put(
        r,
        "proc/cpuinfo",
        b"processor\t: 0\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\nCPU part\t: 0xd05\n\nHardware\t: MT6769V/CZ\n",
    );
    put(
        r,
        "vendor/build.prop",
        b"ro.mediatek.platform=MT6768\nro.board.platform=mt6768\n",
    );
    let p = probe_tree(r);
    let a = p.android.as_ref().unwrap();
    assert_eq!(a.soc_model.as_deref(), Some("MT6769V"));
    assert_eq!(
        a.soc_model_source.as_deref(),
        Some("/proc/cpuinfo Hardware")
    );
    assert!(
        p.warnings.iter().any(|w| w.contains("disagreement")
            && w.contains("MT6769V")
            && w.contains("ro.mediatek.platform says MT6768")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn a_board_suffix_goes_to_its_own_field() {
    let dir = tree();
    let r = dir.path();
    put(r, "proc/cpuinfo", ARM_CPUINFO.as_bytes());
    put(
        r,
        "system/build.prop",
        b"ro.board.platform=tegra210_dragon\nro.hardware=dragon\n",
    );
    let p = probe_tree(r);
    let a = p.android.as_ref().unwrap();
    assert_eq!(a.soc_model.as_deref(), Some("TEGRA210"));
    assert_eq!(a.soc_board.as_deref(), Some("dragon"));
    assert_eq!(a.soc_model_source.as_deref(), Some("ro.board.platform"));
}

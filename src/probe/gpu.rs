//! PCI display devices from sysfs, and NVIDIA names and compute capabilities without NVML.
//!
//! Every `/sys/bus/pci/devices/*` whose `class` is `0x0300xx` (VGA) or `0x0302xx` (3D) is
//! listed, and so is every `/proc/driver/nvidia/gpus/<bdf>` the NVIDIA driver lists that
//! sysfs does not (a capture of `/proc` alone, or a container that hides `/sys`): the
//! driver only creates that directory for a GPU it drives. The driver version comes from
//! `/proc/driver/nvidia/version` (`NVRM version:` line). For NVIDIA (`vendor` `0x10de`)
//! the model comes from the driver's
//! `/proc/driver/nvidia/gpus/<bdf>/information` `Model:` line, else from the device-ID
//! table; the compute capability from the name table, then the device-ID table, then
//! the chip family encoded in the device ID's high byte. `memory_bytes` (sysfs does not
//! report VRAM) comes from NVML when the driver's `libnvidia-ml.so.1` loads at run time
//! (live probes only; its absence is a normal case), else from the device-ID table's
//! marketed size; `sources.memory_bytes` names which. Otherwise it stays `null` with a
//! warning, and the memory fit says it does not know.

use std::collections::BTreeMap;

use crate::probe::sysroot::SysRoot;
use crate::profile::Gpu;

const PCI_DEVICES: &str = "/sys/bus/pci/devices";
const PROC_GPUS: &str = "/proc/driver/nvidia/gpus";
pub const NVIDIA_VERSION: &str = "/proc/driver/nvidia/version";

/// The driver version and the CPU architecture the kernel module was built for, from the
/// `NVRM version:` line of `/proc/driver/nvidia/version`: the proprietary module writes
/// `NVIDIA UNIX x86_64 Kernel Module  535.129.03  <date>`, the open one `NVIDIA UNIX
/// Open Kernel Module for x86_64  555.58  Release Build ...` (and on Jetson `... for
/// aarch64  35.3.1 ...`, where the number is the L4T release).
pub fn nvrm_line(text: &str) -> Option<(String, String)> {
    let line = text
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("NVRM version:"))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let module = words.iter().position(|w| *w == "Module")?;
    let mut rest = &words[module + 1..];
    let arch_before = words[..module]
        .iter()
        .find(|w| ["x86_64", "aarch64", "ppc64le", "x86", "arm"].contains(w));
    if rest.first() == Some(&"for") {
        rest = &rest[1..];
    }
    let (arch, version) = match arch_before {
        Some(arch) => (arch.to_string(), rest.first()?),
        None => (rest.first()?.to_string(), rest.get(1)?),
    };
    let version_shaped = version.split('.').count() >= 2
        && version
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    version_shaped.then(|| (arch, version.to_string()))
}

/// `0000:41:00.0` (a domain of 4 or more hex digits: Hyper-V guests use 8).
fn pci_address_shaped(name: &str) -> bool {
    let hex = |t: &str, n: usize| t.len() == n && t.bytes().all(|b| b.is_ascii_hexdigit());
    let mut parts = name.split(':');
    let (Some(domain), Some(bus), Some(rest), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let Some((device, function)) = rest.split_once('.') else {
        return false;
    };
    (4..=8).contains(&domain.len())
        && hex(domain, domain.len())
        && hex(bus, 2)
        && hex(device, 2)
        && function.len() == 1
        && function.bytes().all(|b| (b'0'..=b'7').contains(&b))
}

/// The driver version of the `NVRM version:` line.
pub fn driver_version(text: &str) -> Option<String> {
    nvrm_line(text).map(|(_, v)| v)
}

/// Lists the GPUs. Other vendors' GPUs are listed with no compute capability.
pub fn read(sys: &SysRoot) -> Vec<Gpu> {
    let mut gpus = list(sys);
    for bdf in sys.list(PROC_GPUS) {
        if !pci_address_shaped(&bdf)
            || gpus
                .iter()
                .any(|g| g.pci_bdf.as_deref() == Some(bdf.as_str()))
        {
            continue;
        }
        let mut gpu = Gpu {
            vendor: "nvidia".into(),
            pci_bdf: Some(bdf.clone()),
            ..Gpu::default()
        };
        describe_nvidia(sys, &bdf, None, &mut gpu);
        gpu.sources.insert(
            "listed".into(),
            format!("{PROC_GPUS}/{bdf} (the NVIDIA driver's entry; not in {PCI_DEVICES})"),
        );
        gpus.push(gpu);
    }
    let version = sys.read(NVIDIA_VERSION).as_deref().and_then(driver_version);
    if let Some(version) = &version {
        for gpu in gpus.iter_mut().filter(|g| g.vendor == "nvidia") {
            gpu.driver_version = Some(version.clone());
            gpu.sources
                .insert("driver_version".into(), format!("{NVIDIA_VERSION} NVRM"));
        }
    }
    let nvidia: Vec<String> = gpus
        .iter()
        .filter(|g| g.vendor == "nvidia")
        .filter_map(|g| g.pci_bdf.clone())
        .collect();
    let from_nvml = if sys.is_live() && !nvidia.is_empty() {
        nvml::total_memory(&nvidia)
    } else {
        Err("not a live probe".into())
    };
    for gpu in gpus.iter_mut().filter(|g| g.vendor == "nvidia") {
        let bdf = gpu.pci_bdf.clone().unwrap_or_default();
        let by_table = gpu
            .device_id
            .as_deref()
            .and_then(parse_hex)
            .and_then(device_entry)
            .map(|e| e.memory_gib << 30);
        let (bytes, source) = match (from_nvml.as_ref().ok().and_then(|m| m.get(&bdf)), by_table) {
            (Some(&bytes), _) => (Some(bytes), "NVML (libnvidia-ml.so.1)".to_string()),
            (None, Some(bytes)) => (Some(bytes), "device-id table (marketed size)".to_string()),
            (None, None) => {
                let why = match &from_nvml {
                    Err(e) => e.clone(),
                    Ok(_) => "NVML did not report this GPU".into(),
                };
                let table = match gpu.device_id.as_deref() {
                    Some(_) => "device id not in the table",
                    None => "no device id captured (sysfs absent)",
                };
                sys.warn(format!(
                    "NVIDIA GPU {bdf} (device {}): memory unknown (NVML: {why}; {table}); a memory fit will say unknown",
                    gpu.device_id.as_deref().unwrap_or("?")
                ));
                (None, format!("unknown: NVML: {why}; {table}"))
            }
        };
        gpu.memory_bytes = bytes;
        gpu.sources.insert("memory_bytes".into(), source);
    }
    gpus
}

/// The display devices sysfs lists, described without NVML.
fn list(sys: &SysRoot) -> Vec<Gpu> {
    let mut gpus = Vec::new();
    for bdf in sys.list(PCI_DEVICES) {
        let dir = format!("{PCI_DEVICES}/{bdf}");
        let Some(class) = sys
            .read_line(&format!("{dir}/class"))
            .map(|c| c.to_lowercase())
        else {
            continue;
        };
        if !(class.starts_with("0x0300") || class.starts_with("0x0302")) {
            continue;
        }
        let vendor_id = sys
            .read_line(&format!("{dir}/vendor"))
            .map(|v| v.to_lowercase());
        let device_id = sys
            .read_line(&format!("{dir}/device"))
            .map(|d| d.to_lowercase());
        let mut gpu = Gpu {
            vendor: vendor_name(vendor_id.as_deref().unwrap_or("unknown")).to_string(),
            pci_bdf: Some(bdf.clone()),
            device_id: device_id.clone(),
            pci_class: Some(class),
            driver: sys.link_name(&format!("{dir}/driver")),
            ..Gpu::default()
        };
        if gpu.vendor == "nvidia" {
            describe_nvidia(sys, &bdf, device_id.as_deref(), &mut gpu);
            warn_other_driver(sys, &bdf, gpu.driver.as_deref());
        } else {
            gpu.name = other_name(vendor_id.as_deref(), device_id.as_deref()).map(str::to_string);
        }
        gpus.push(gpu);
    }
    gpus
}

fn describe_nvidia(sys: &SysRoot, bdf: &str, device_id: Option<&str>, gpu: &mut Gpu) {
    let mut sources = BTreeMap::new();
    let info_path = format!("/proc/driver/nvidia/gpus/{bdf}/information");
    if let Some(model) = sys.read(&info_path).as_deref().and_then(model_line) {
        gpu.name = Some(model);
        sources.insert("name".into(), format!("{info_path} Model"));
    }
    let by_id = device_id.and_then(parse_hex).and_then(device_entry);
    if gpu.name.is_none()
        && let Some(entry) = by_id
    {
        gpu.name = Some(entry.name.to_string());
        sources.insert("name".into(), "device-id table".into());
    }
    let cc = gpu
        .name
        .as_deref()
        .and_then(cc_from_name)
        .map(|cc| (cc, "name table"))
        .or_else(|| by_id.map(|e| (e.cc, "device-id table")))
        .or_else(|| {
            device_id
                .and_then(parse_hex)
                .and_then(cc_from_family)
                .map(|cc| (cc, "device-id chip family"))
        });
    if let Some((cc, how)) = cc {
        gpu.compute_capability = Some(cc.to_string());
        sources.insert("compute_capability".into(), how.into());
    } else {
        sys.warn(format!(
            "NVIDIA GPU {bdf} (device {}): compute capability unknown to edgeplan's table",
            device_id.unwrap_or("?")
        ));
    }
    gpu.sources = sources;
}

/// An NVIDIA GPU held by a passthrough stub (`vfio-pci`, `pci-stub`): reserved for a
/// virtual machine, so CUDA on this host cannot use it.
pub fn reserved_for_vms(gpu: &Gpu) -> bool {
    gpu.vendor == "nvidia" && matches!(gpu.driver.as_deref(), Some("vfio-pci" | "pci-stub"))
}

/// Says so when an NVIDIA GPU is bound to a driver other than NVIDIA's: CUDA needs `nvidia`.
fn warn_other_driver(sys: &SysRoot, bdf: &str, driver: Option<&str>) {
    match driver {
        Some(d @ ("vfio-pci" | "pci-stub")) => sys.warn(format!(
            "NVIDIA GPU {bdf} is bound to {d} (passed through to a virtual machine): CUDA on this host cannot use it, so it does not make this a cuda_discrete host"
        )),
        Some(d) if d != "nvidia" => sys.warn(format!(
            "NVIDIA GPU {bdf} is bound to {d}, not the NVIDIA driver: CUDA cannot use it until the nvidia driver is installed and bound"
        )),
        _ => {}
    }
}

/// The `Model:` line of the driver's information file.
pub fn model_line(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let value = line.strip_prefix("Model:")?.trim();
        (!value.is_empty()).then(|| value.to_string())
    })
}

pub fn vendor_name(vendor_id: &str) -> &str {
    match vendor_id {
        "0x10de" => "nvidia",
        "0x1002" => "amd",
        "0x8086" => "intel",
        "0x1a03" => "aspeed",
        "0x102b" => "matrox",
        "0x1af4" => "virtio",
        "0x1234" => "qemu",
        "0x15ad" => "vmware",
        other => other,
    }
}

/// Names for the non-CUDA display devices servers and VMs commonly show.
fn other_name(vendor: Option<&str>, device: Option<&str>) -> Option<&'static str> {
    Some(match (vendor?, device?) {
        ("0x1a03", "0x2000") => "ASPEED Graphics Family (BMC display)",
        ("0x1234", "0x1111") => "QEMU standard VGA",
        ("0x1af4", "0x1050") => "virtio-gpu",
        ("0x102b", "0x0522" | "0x0532" | "0x0536" | "0x0538") => "Matrox G200 (BMC display)",
        _ => return None,
    })
}

fn parse_hex(text: &str) -> Option<u32> {
    u32::from_str_radix(text.trim().trim_start_matches("0x"), 16).ok()
}

/// One known NVIDIA device ID: marketing name, compute capability, marketed memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceEntry {
    pub name: &'static str,
    pub cc: &'static str,
    /// The memory NVIDIA's datasheet gives, in GiB (the driver keeps a few hundred MiB
    /// of it; the memory fit's headroom covers that).
    pub memory_gib: u64,
}

/// Known NVIDIA device IDs (PCI IDs as the pci.ids database lists them; names,
/// compute capabilities from NVIDIA's CUDA GPUs list, memory from NVIDIA's datasheets).
pub fn device_entry(id: u32) -> Option<DeviceEntry> {
    let (name, cc, memory_gib) = match id {
        0x1db1 => ("Tesla V100-SXM2-16GB", "7.0", 16),
        0x1db4 => ("Tesla V100-PCIE-16GB", "7.0", 16),
        0x1db5 => ("Tesla V100-SXM2-32GB", "7.0", 32),
        0x1db6 => ("Tesla V100-PCIE-32GB", "7.0", 32),
        0x1eb8 => ("Tesla T4", "7.5", 16),
        0x1e04 | 0x1e07 => ("GeForce RTX 2080 Ti", "7.5", 11),
        0x20b0 => ("A100-SXM4-40GB", "8.0", 40),
        0x20b2 => ("A100-SXM4-80GB", "8.0", 80),
        0x20b5 => ("A100 80GB PCIe", "8.0", 80),
        0x20f1 => ("A100-PCIE-40GB", "8.0", 40),
        0x20b7 => ("A30", "8.0", 24),
        0x2235 => ("A40", "8.6", 48),
        0x2236 => ("A10", "8.6", 24),
        0x2204 => ("GeForce RTX 3090", "8.6", 24),
        0x2206 => ("GeForce RTX 3080", "8.6", 10),
        0x27b8 => ("L4", "8.9", 24),
        0x26b5 => ("L40", "8.9", 48),
        0x26b9 => ("L40S", "8.9", 48),
        0x2684 => ("GeForce RTX 4090", "8.9", 24),
        0x2330 => ("H100 80GB HBM3", "9.0", 80),
        0x2331 => ("H100 PCIe", "9.0", 80),
        0x2321 => ("H100 NVL", "9.0", 94),
        0x2335 => ("H200", "9.0", 141),
        0x2342 => ("GH200 480GB", "9.0", 96),
        0x2901 => ("B200", "10.0", 180),
        0x2b85 => ("GeForce RTX 5090", "12.0", 32),
        _ => return None,
    };
    Some(DeviceEntry {
        name,
        cc,
        memory_gib,
    })
}

/// The compute capability a chip family's device-ID block implies (NVIDIA allocates IDs
/// per chip: 0x1db_ GV100, 0x1e/0x1f/0x21 Turing, 0x20 GA100, 0x22-0x25 GA10x, 0x23
/// GH100, 0x26-0x28 AD10x, 0x29 GB100, 0x2b-0x2f GB20x).
pub fn cc_from_family(id: u32) -> Option<&'static str> {
    Some(match id >> 8 {
        0x1d if id & 0xf0 == 0xb0 => "7.0",
        0x1e | 0x1f | 0x21 => "7.5",
        0x20 => "8.0",
        0x22 | 0x24 | 0x25 => "8.6",
        0x23 => "9.0",
        0x26..=0x28 => "8.9",
        0x29 => "10.0",
        0x2b..=0x2f => "12.0",
        _ => return None,
    })
}

/// The compute capability a marketing name implies (Volta through Blackwell).
pub fn cc_from_name(name: &str) -> Option<&'static str> {
    let tokens: Vec<String> = name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(|t| t.to_ascii_uppercase())
        .collect();
    let has = |t: &str| tokens.iter().any(|x| x == t);
    let starts = |p: &str| tokens.iter().any(|x| x.starts_with(p));
    if has("GB300") || has("B300") {
        return Some("10.3");
    }
    if has("GB200") || has("B200") || has("B100") {
        return Some("10.0");
    }
    if has("GH200") || has("H200") || has("H100") || has("H800") || has("H20") {
        return Some("9.0");
    }
    if has("PRO")
        && has("RTX")
        && (has("BLACKWELL") || starts("6000") || starts("5000") || starts("4500"))
    {
        return Some("12.0");
    }
    if has("ADA") || has("L4") || has("L40") || has("L40S") || has("L20") {
        return Some("8.9");
    }
    if has("A100") || has("A30") || has("A800") {
        return Some("8.0");
    }
    if has("A10")
        || has("A10G")
        || has("A40")
        || has("A16")
        || has("A2")
        || tokens.iter().any(|t| is_ampere_workstation(t))
    {
        return Some("8.6");
    }
    if has("V100") || has("V100S") || (has("TITAN") && has("V")) {
        return Some("7.0");
    }
    if has("T4") || has("T1000") || has("T400") || has("T600") || has("TITAN") && has("RTX") {
        return Some("7.5");
    }
    // Quadro RTX 3000..8000 are Turing: their four digits are not a GeForce series
    // (`Quadro RTX 4000` is not an RTX 40 part; NVIDIA's CUDA GPUs list: 7.5).
    if has("QUADRO") && has("RTX") {
        return Some("7.5");
    }
    // GeForce numbering: the series number after RTX or GTX.
    for pair in tokens.windows(2) {
        if pair[0] == "RTX" || pair[0] == "GTX" {
            let series: Option<u32> = pair[1].get(..2).and_then(|d| d.parse().ok());
            let four_digits = pair[1].len() == 4 && pair[1].chars().all(|c| c.is_ascii_digit());
            match series {
                Some(50) if four_digits => return Some("12.0"),
                Some(40) if four_digits => return Some("8.9"),
                Some(30) if four_digits => return Some("8.6"),
                Some(20 | 16) if four_digits => return Some("7.5"),
                _ => {}
            }
        }
    }
    None
}

fn is_ampere_workstation(token: &str) -> bool {
    // RTX A2000 .. A6000 (not A100/A30/A800, handled above).
    token.len() == 5
        && token.starts_with('A')
        && token[1..].chars().all(|c| c.is_ascii_digit())
        && token.ends_with("000")
}

/// NVML, loaded at run time: the driver's library is optional, so it is opened with
/// `dlopen` (no link-time dependency) and its absence is an `Err` saying so.
mod nvml {
    use std::collections::BTreeMap;
    use std::ffi::{CStr, CString, c_char, c_int, c_void};

    /// `nvmlMemory_t`.
    #[repr(C)]
    struct Memory {
        total: u64,
        free: u64,
        used: u64,
    }

    type InitFn = unsafe extern "C" fn() -> c_int;
    type ByBusIdFn = unsafe extern "C" fn(*const c_char, *mut *mut c_void) -> c_int;
    type MemoryFn = unsafe extern "C" fn(*mut c_void, *mut Memory) -> c_int;

    const LIBRARY: &CStr = c"libnvidia-ml.so.1";

    /// Total memory per PCI address (`0000:41:00.0`) for the GPUs NVML knows.
    pub fn total_memory(bdfs: &[String]) -> Result<BTreeMap<String, u64>, String> {
        // SAFETY: dlopen takes a NUL-terminated name; a null return is handled.
        let lib = unsafe { libc::dlopen(LIBRARY.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if lib.is_null() {
            return Err("libnvidia-ml.so.1 not found".into());
        }
        let symbol = |name: &CStr| {
            // SAFETY: `lib` is a live handle from dlopen and `name` is NUL-terminated.
            let ptr = unsafe { libc::dlsym(lib, name.as_ptr()) };
            (!ptr.is_null()).then_some(ptr)
        };
        let (Some(init), Some(by_bus), Some(memory), Some(shutdown)) = (
            symbol(c"nvmlInit_v2"),
            symbol(c"nvmlDeviceGetHandleByPciBusId_v2"),
            symbol(c"nvmlDeviceGetMemoryInfo"),
            symbol(c"nvmlShutdown"),
        ) else {
            return Err("libnvidia-ml.so.1 lacks the NVML functions used".into());
        };
        // SAFETY: the symbols are NVML's documented entry points with these C
        // signatures (nvml.h): nvmlInit_v2(void), nvmlDeviceGetHandleByPciBusId_v2(const
        // char*, nvmlDevice_t*), nvmlDeviceGetMemoryInfo(nvmlDevice_t, nvmlMemory_t*),
        // nvmlShutdown(void), all returning nvmlReturn_t (an int enum).
        let (init, by_bus, memory, shutdown) = unsafe {
            (
                std::mem::transmute::<*mut c_void, InitFn>(init),
                std::mem::transmute::<*mut c_void, ByBusIdFn>(by_bus),
                std::mem::transmute::<*mut c_void, MemoryFn>(memory),
                std::mem::transmute::<*mut c_void, InitFn>(shutdown),
            )
        };
        // SAFETY: NVML's init takes no arguments; 0 is NVML_SUCCESS.
        let rc = unsafe { init() };
        if rc != 0 {
            return Err(format!("nvmlInit failed (NVML error {rc})"));
        }
        let mut totals = BTreeMap::new();
        for bdf in bdfs {
            let Ok(id) = CString::new(bdf.as_str()) else {
                continue;
            };
            let mut device: *mut c_void = std::ptr::null_mut();
            // SAFETY: `id` is NUL-terminated and `device` a valid out-pointer.
            if unsafe { by_bus(id.as_ptr(), &mut device) } != 0 {
                continue;
            }
            let mut info = Memory {
                total: 0,
                free: 0,
                used: 0,
            };
            // SAFETY: `device` is the handle NVML just returned; `info` is a valid
            // nvmlMemory_t to fill.
            if unsafe { memory(device, &mut info) } == 0 && info.total > 0 {
                totals.insert(bdf.clone(), info.total);
            }
        }
        // SAFETY: balances the successful init above. The library stays loaded (NVML
        // may keep threads), so no dlclose.
        unsafe { shutdown() };
        Ok(totals)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_to_compute_capability() {
        let cases = [
            ("Tesla V100-SXM2-32GB", "7.0"),
            ("Tesla T4", "7.5"),
            ("NVIDIA GeForce RTX 2080 Ti", "7.5"),
            ("NVIDIA A100-SXM4-80GB", "8.0"),
            ("NVIDIA A30", "8.0"),
            ("NVIDIA A10", "8.6"),
            ("NVIDIA A40", "8.6"),
            ("NVIDIA RTX A6000", "8.6"),
            ("NVIDIA GeForce RTX 3090", "8.6"),
            ("NVIDIA L4", "8.9"),
            ("NVIDIA L40S", "8.9"),
            ("NVIDIA GeForce RTX 4090", "8.9"),
            ("NVIDIA RTX 6000 Ada Generation", "8.9"),
            ("NVIDIA H100 PCIe", "9.0"),
            ("NVIDIA H200", "9.0"),
            ("NVIDIA GH200 480GB", "9.0"),
            ("NVIDIA B200", "10.0"),
            ("NVIDIA GB200", "10.0"),
            ("NVIDIA GeForce RTX 5090", "12.0"),
            ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0"),
            // nvidia-smi names from akash-network/provider-configs PR #12 and the like:
            // Turing Quadros whose digits look like a GeForce 40/50 series.
            ("Quadro RTX 4000", "7.5"),
            ("Quadro RTX 5000", "7.5"),
            ("Quadro RTX 8000", "7.5"),
            ("NVIDIA RTX 4000 Ada Generation", "8.9"),
        ];
        for (name, cc) in cases {
            assert_eq!(cc_from_name(name), Some(cc), "{name}");
        }
        assert_eq!(cc_from_name("NVIDIA GeForce GTX 1080"), None);
        assert_eq!(cc_from_name(""), None);
    }

    #[test]
    fn device_ids() {
        assert_eq!(
            device_entry(0x2331).map(|e| (e.name, e.cc)),
            Some(("H100 PCIe", "9.0"))
        );
        assert_eq!(
            device_entry(0x1eb8).map(|e| (e.cc, e.memory_gib)),
            Some(("7.5", 16))
        );
        assert_eq!(cc_from_family(0x2335), Some("9.0"));
        assert_eq!(cc_from_family(0x2182), Some("7.5")); // GTX 1660 Ti, TU116
        assert_eq!(cc_from_family(0x1d01), None); // GT 1030, Pascal
        assert_eq!(cc_from_family(0x2c02), Some("12.0"));
        assert_eq!(cc_from_family(0x1b80), None);
        // Every table entry agrees with its chip family.
        for id in [
            0x1db1, 0x1eb8, 0x20b0, 0x2236, 0x27b8, 0x2331, 0x2901, 0x2b85,
        ] {
            assert_eq!(
                device_entry(id).map(|e| e.cc),
                cc_from_family(id),
                "{id:#x}"
            );
            assert_eq!(
                cc_from_name(device_entry(id).unwrap().name),
                cc_from_family(id),
                "{id:#x}"
            );
        }
    }

    #[test]
    fn nvrm_version_lines() {
        // Verbatim first lines of /proc/driver/nvidia/version: dylanaraps/neofetch#876
        // (proprietary module), hyprwm/Hyprland PR #6715 (open module) and
        // nix-community/nixGL#139 (Jetson Orin NX, where the number is the L4T release).
        let cases = [
            (
                "NVRM version: NVIDIA UNIX x86_64 Kernel Module  384.98  Thu Oct 26 15:16:01 PDT 2017\nGCC version:  gcc version 7.2.0 (Ubuntu 7.2.0-8ubuntu3) \n",
                ("x86_64", "384.98"),
            ),
            (
                "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  555.58  Release Build  (portage@localhost)  Сб 29 июн 2024 14:36:22 MSK\n",
                ("x86_64", "555.58"),
            ),
            (
                "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  35.3.1  Release Build  (buildbrain@mobile-u64-6289-d7000)  Sun Mar 19 08:09:33 PDT 2023\n",
                ("aarch64", "35.3.1"),
            ),
        ];
        for (text, (arch, version)) in cases {
            assert_eq!(
                nvrm_line(text),
                Some((arch.to_string(), version.to_string())),
                "{text}"
            );
        }
        assert_eq!(nvrm_line("NVRM version: garbage\n"), None);
        assert_eq!(
            nvrm_line("NVRM version: NVIDIA UNIX x86_64 Kernel Module\n"),
            None
        );
        assert_eq!(nvrm_line(""), None);
    }

    #[test]
    fn pci_addresses() {
        assert!(pci_address_shaped("0000:41:00.0"));
        assert!(pci_address_shaped("03f8cfdd:00:00.0"));
        assert!(!pci_address_shaped("17000000.gpu"));
        assert!(!pci_address_shaped("0000:41:00.8"));
        assert!(!pci_address_shaped("0000:41:00"));
        assert!(!pci_address_shaped(""));
    }

    #[test]
    fn model_line_parses() {
        let text = "Model: \t\t NVIDIA H100 PCIe\nIRQ:   123\nGPU UUID: GPU-xxx\n";
        assert_eq!(model_line(text).as_deref(), Some("NVIDIA H100 PCIe"));
        assert_eq!(model_line("Model:   \n"), None);
    }
}

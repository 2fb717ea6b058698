//! PCI display devices from sysfs, and NVIDIA names and compute capabilities without NVML.
//!
//! Every `/sys/bus/pci/devices/*` whose `class` is `0x0300xx` (VGA) or `0x0302xx` (3D) is
//! listed. For NVIDIA (`vendor` `0x10de`) the model comes from the driver's
//! `/proc/driver/nvidia/gpus/<bdf>/information` `Model:` line, else from the device-ID
//! table; the compute capability from the name table, then the device-ID table, then
//! the chip family encoded in the device ID's high byte. `memory_bytes` stays `null`:
//! only NVML (not used here) reports VRAM, and sysfs does not.

use std::collections::BTreeMap;

use crate::probe::sysroot::SysRoot;
use crate::profile::Gpu;

const PCI_DEVICES: &str = "/sys/bus/pci/devices";

/// Lists the GPUs. Other vendors' GPUs are listed with no compute capability.
pub fn read(sys: &SysRoot) -> Vec<Gpu> {
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
        && let Some((name, _)) = by_id
    {
        gpu.name = Some(name.to_string());
        sources.insert("name".into(), "device-id table".into());
    }
    let cc = gpu
        .name
        .as_deref()
        .and_then(cc_from_name)
        .map(|cc| (cc, "name table"))
        .or_else(|| by_id.map(|(_, cc)| (cc, "device-id table")))
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
    sources.insert(
        "memory_bytes".into(),
        "unknown without NVML (not read by this probe)".into(),
    );
    gpu.sources = sources;
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

/// Known NVIDIA device IDs: marketing name and compute capability.
pub fn device_entry(id: u32) -> Option<(&'static str, &'static str)> {
    Some(match id {
        0x1db1 => ("Tesla V100-SXM2-16GB", "7.0"),
        0x1db4 => ("Tesla V100-PCIE-16GB", "7.0"),
        0x1db5 => ("Tesla V100-SXM2-32GB", "7.0"),
        0x1db6 => ("Tesla V100-PCIE-32GB", "7.0"),
        0x1eb8 => ("Tesla T4", "7.5"),
        0x1e04 | 0x1e07 => ("GeForce RTX 2080 Ti", "7.5"),
        0x20b0 => ("A100-SXM4-40GB", "8.0"),
        0x20b2 => ("A100-SXM4-80GB", "8.0"),
        0x20b5 => ("A100 80GB PCIe", "8.0"),
        0x20f1 => ("A100-PCIE-40GB", "8.0"),
        0x20b7 => ("A30", "8.0"),
        0x2235 => ("A40", "8.6"),
        0x2236 => ("A10", "8.6"),
        0x2204 => ("GeForce RTX 3090", "8.6"),
        0x2206 => ("GeForce RTX 3080", "8.6"),
        0x27b8 => ("L4", "8.9"),
        0x26b5 => ("L40", "8.9"),
        0x26b9 => ("L40S", "8.9"),
        0x2684 => ("GeForce RTX 4090", "8.9"),
        0x2330 => ("H100 80GB HBM3", "9.0"),
        0x2331 => ("H100 PCIe", "9.0"),
        0x2321 => ("H100 NVL", "9.0"),
        0x2335 => ("H200", "9.0"),
        0x2342 => ("GH200 480GB", "9.0"),
        0x2901 => ("B200", "10.0"),
        0x2b85 => ("GeForce RTX 5090", "12.0"),
        _ => return None,
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
    // GeForce / Quadro numbering: the series number after RTX or GTX.
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
    if has("QUADRO") && has("RTX") {
        return Some("7.5");
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
        ];
        for (name, cc) in cases {
            assert_eq!(cc_from_name(name), Some(cc), "{name}");
        }
        assert_eq!(cc_from_name("NVIDIA GeForce GTX 1080"), None);
        assert_eq!(cc_from_name(""), None);
    }

    #[test]
    fn device_ids() {
        assert_eq!(device_entry(0x2331), Some(("H100 PCIe", "9.0")));
        assert_eq!(device_entry(0x1eb8).map(|e| e.1), Some("7.5"));
        assert_eq!(cc_from_family(0x2335), Some("9.0"));
        assert_eq!(cc_from_family(0x2182), Some("7.5")); // GTX 1660 Ti, TU116
        assert_eq!(cc_from_family(0x1d01), None); // GT 1030, Pascal
        assert_eq!(cc_from_family(0x2c02), Some("12.0"));
        assert_eq!(cc_from_family(0x1b80), None);
        // Every table entry agrees with its chip family.
        for id in [
            0x1db1, 0x1eb8, 0x20b0, 0x2236, 0x27b8, 0x2331, 0x2901, 0x2b85,
        ] {
            assert_eq!(device_entry(id).map(|e| e.1), cc_from_family(id), "{id:#x}");
            assert_eq!(
                cc_from_name(device_entry(id).unwrap().0),
                cc_from_family(id),
                "{id:#x}"
            );
        }
    }

    #[test]
    fn model_line_parses() {
        let text = "Model: \t\t NVIDIA H100 PCIe\nIRQ:   123\nGPU UUID: GPU-xxx\n";
        assert_eq!(model_line(text).as_deref(), Some("NVIDIA H100 PCIe"));
        assert_eq!(model_line("Model:   \n"), None);
    }
}

//! `probe --format table`: a summary for a person (device, class, key features, memory,
//! GPUs, environment, warnings). The JSON is the full record; this is not parsed by tools.

use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};

use crate::profile::{Detection, Profile};

/// Features worth a glance, in display order; only those present in the profile show.
const KEY_FEATURES: &[&str] = &[
    "avx2",
    "avx_vnni",
    "avx512f",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
    "asimddp",
    "i8mm",
    "bf16",
    "sve",
    "sve2",
    "sme",
];

/// One GPU for the table: vendor, name, compute capability, memory, address, driver.
fn gpu_line(g: &crate::profile::Gpu) -> String {
    format!(
        "{} {} ({}, memory {}{}{})",
        g.vendor,
        opt(g.name.as_deref()),
        match (g.vendor.as_str(), g.compute_capability.as_deref()) {
            (_, Some(cc)) => format!("cc {cc}"),
            ("nvidia", None) => "cc unknown".to_string(),
            _ => "not CUDA".to_string(),
        },
        g.memory_bytes
            .map_or("unknown".into(), |b| crate::output::gib_short(Some(b))),
        g.pci_bdf
            .as_deref()
            .map(|b| format!(", {b}"))
            .unwrap_or_default(),
        g.driver_version
            .as_deref()
            .map(|v| format!(", driver {v}"))
            .unwrap_or_default()
    )
}

fn opt(value: Option<&str>) -> &str {
    value.unwrap_or("unknown")
}

fn detection(d: Option<&Detection>) -> String {
    match d {
        Some(Detection {
            detected: true,
            name,
            how,
        }) => {
            format!(
                "{} ({})",
                name.as_deref().unwrap_or("yes"),
                how.as_deref().unwrap_or("?")
            )
        }
        Some(_) => "no".into(),
        None => "unknown".into(),
    }
}

pub fn table(p: &Profile) -> String {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled);
    t.set_header(vec!["fact", "value"]);
    let device = p
        .android
        .as_ref()
        .and_then(|a| a.soc_model.clone())
        .or_else(|| p.jetson.as_ref().and_then(|j| j.model.clone()))
        .or_else(|| p.cpu.model_name.clone())
        .unwrap_or_else(|| "unknown".into());
    t.add_row(vec!["device".to_string(), device]);
    t.add_row(vec![
        "source".to_string(),
        format!(
            "{} {}",
            opt(p.source.as_deref()),
            p.label.as_deref().unwrap_or("")
        ),
    ]);
    t.add_row(vec!["arch".to_string(), p.arch.as_str().to_string()]);
    t.add_row(vec![
        "hardware_class".to_string(),
        p.hardware_class.to_string(),
    ]);
    t.add_row(vec![
        "supports_bf16".to_string(),
        p.supports_bf16.to_string(),
    ]);
    t.add_row(vec![
        "cpu".to_string(),
        format!(
            "{} / {}",
            opt(p.cpu.vendor.as_deref()),
            opt(p.cpu.model_name.as_deref())
        ),
    ]);
    let count = |n: Option<u32>| n.map_or("unknown".to_string(), |n| n.to_string());
    t.add_row(vec![
        "threads".to_string(),
        format!(
            "{} usable of {} logical{}",
            count(p.cpu.usable_threads),
            count(p.cpu.logical_cpus),
            match (p.cpu.possible_cpus, p.cpu.logical_cpus) {
                (Some(possible), Some(online)) if possible > online => {
                    format!(" ({possible} possible)")
                }
                _ => String::new(),
            }
        ),
    ]);
    for caveat in &p.cpu.caveats {
        t.add_row(vec!["caveat".to_string(), caveat.clone()]);
    }
    let present: Vec<_> = KEY_FEATURES
        .iter()
        .filter_map(|name| p.cpu.features.get(*name).map(|f| (*name, f)))
        .filter(|(_, f)| f.cpu)
        .collect();
    let mut features: Vec<String> = present
        .iter()
        .map(|(name, f)| {
            if f.usable {
                name.to_string()
            } else {
                format!("{name}[not usable]")
            }
        })
        .collect();
    if features.is_empty() {
        features.push("none".into());
    }
    t.add_row(vec!["key features".to_string(), features.join(" ")]);
    if let Some(source) = p.cpu.sources.get("features") {
        t.add_row(vec!["features from".to_string(), source.clone()]);
    }
    let m = &p.memory;
    t.add_row(vec![
        "memory".to_string(),
        format!(
            "total {}, available {}, limit {}, budget {}",
            crate::output::gib_short(m.total_bytes),
            crate::output::gib_short(m.available_bytes),
            m.limit_bytes
                .map_or("none".into(), |b| crate::output::gib_short(Some(b))),
            crate::output::gib_short(m.budget_bytes)
        ),
    ]);
    if p.gpus.is_empty() {
        t.add_row(vec!["gpus".to_string(), "none".to_string()]);
    }
    for (i, g) in p.gpus.iter().enumerate() {
        t.add_row(vec![format!("gpu {i}"), gpu_line(g)]);
    }
    if let Some(j) = &p.jetson {
        t.add_row(vec![
            "jetson".to_string(),
            format!(
                "{} L4T {} JetPack {}",
                opt(j.soc.as_deref()),
                opt(j.l4t.as_deref()),
                opt(j.jetpack.as_deref())
            ),
        ]);
    }
    if let Some(a) = &p.android {
        let npu = a.npu.as_ref().map_or("no known NPU".to_string(), |n| {
            format!(
                "{} {} (present {}, verified {})",
                n.kind,
                opt(n.htp_arch.as_deref()),
                n.present,
                n.verified
            )
        });
        let soc = if a.soc_candidates.is_empty() {
            opt(a.soc_model.as_deref()).to_string()
        } else {
            format!("ambiguous ({})", a.soc_candidates.join(" or "))
        };
        let from = a
            .soc_model_source
            .as_deref()
            .map(|s| format!(" [SoC from {s}]"))
            .unwrap_or_default();
        t.add_row(vec![
            "android".to_string(),
            format!("{} {soc}: {npu}{from}", opt(a.manufacturer.as_deref())),
        ]);
    }
    if let Some(e) = &p.environment {
        t.add_row(vec![
            "container".to_string(),
            detection(e.container.as_ref()),
        ]);
        t.add_row(vec![
            "hypervisor".to_string(),
            detection(e.hypervisor.as_ref()),
        ]);
        t.add_row(vec!["wsl".to_string(), detection(e.wsl.as_ref())]);
    }
    if !p.warnings.is_empty() {
        t.add_row(vec![
            "warnings".to_string(),
            format!("{} (see stderr or --format json)", p.warnings.len()),
        ]);
    }
    format!("{t}\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Arch, Cpu, Feature, Gpu, HardwareClass, Memory, SCHEMA_VERSION, Tool};

    #[test]
    fn table_shows_the_facts_a_person_needs() {
        let mut cpu = Cpu {
            usable_threads: Some(3),
            logical_cpus: Some(32),
            ..Cpu::default()
        };
        cpu.features.insert(
            "amx_int8".into(),
            Feature {
                cpu: true,
                os: Some(false),
                usable: false,
            },
        );
        cpu.features.insert(
            "avx2".into(),
            Feature {
                cpu: true,
                os: Some(true),
                usable: true,
            },
        );
        let p = Profile {
            schema_version: SCHEMA_VERSION,
            tool: Tool::this(),
            source: Some("live".into()),
            label: None,
            arch: Arch::X86_64,
            hardware_class: HardwareClass::CudaDiscrete,
            supports_bf16: false,
            cpu,
            memory: Memory {
                total_bytes: Some(8 << 30),
                limit_bytes: None,
                ..Memory::default()
            },
            gpus: vec![
                Gpu {
                    vendor: "nvidia".into(),
                    name: Some("Tesla T4".into()),
                    compute_capability: Some("7.5".into()),
                    ..Gpu::default()
                },
                Gpu {
                    vendor: "aspeed".into(),
                    ..Gpu::default()
                },
            ],
            jetson: None,
            android: None,
            environment: None,
            warnings: vec!["something".into()],
            measurements: None,
        };
        let text = table(&p);
        for needle in [
            "cuda_discrete",
            "3 usable of 32 logical",
            "avx2 amx_int8[not usable]",
            "total 8.0 GiB",
            "limit none",
            "nvidia Tesla T4 (cc 7.5",
            "aspeed unknown (not CUDA",
            "1 (see stderr",
        ] {
            assert!(text.contains(needle), "{needle:?} missing from\n{text}");
        }
    }
}

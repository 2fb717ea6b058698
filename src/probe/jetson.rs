//! NVIDIA Jetson / Tegra: detected before any GPU search, since its GPU is not on PCI.
//!
//! Signals, any of which makes it Tegra: `/etc/nv_tegra_release`, `nvidia,tegra*` in
//! `/proc/device-tree/compatible` (NUL-separated), "Jetson" in `/proc/device-tree/model`,
//! `/sys/class/tegra-firmware`, `-tegra` in the kernel release, and an aarch64 NVIDIA
//! kernel module numbered like an L4T release (`/proc/driver/nvidia/version`: `... for
//! aarch64  35.3.1`; discrete-GPU drivers are numbered 300 and up). The SoC comes from the
//! `nvidia,tegraNNN` compatible entry, else the `tegraNNN-` prefix of the device tree's
//! source file name, else the Jetson module part number in `compatible` (`p3701` AGX
//! Orin, `p3767` Orin NX/Nano, `p2888` AGX Xavier, `p3668` Xavier NX, `p3310`/`p3636`
//! TX2, `p2180` TX1, `p3448` Nano: the module numbers in the upstream kernel's
//! `arch/arm64/boot/dts/nvidia` file names and in the board reports of
//! rbonghi/jetson_stats issues #864, #400, #291, #515, #586), else the L4T `BOARD: t210ref`
//! (used only by TX1 and Nano; `t186ref` is shared by TX2, Xavier and Orin, so it decides
//! nothing); `soc_source` names which. The SoC decides the compute capability (tegra194
//! Xavier 7.2, tegra234 Orin 8.7, tegra264 Thor 11.0); the L4T release decides JetPack,
//! and an L4T major edgeplan does not know leaves JetPack unknown rather than guessed.

use crate::probe::sysroot::SysRoot;
use crate::profile::Jetson;

/// `# R36 (release), REVISION: 4.3, ...` -> `36.4.3`.
pub fn parse_l4t(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.trim_start().starts_with("# R"))?;
    let after_r = line.trim_start().strip_prefix("# R")?;
    let major: String = after_r.chars().take_while(|c| c.is_ascii_digit()).collect();
    if major.is_empty() {
        return None;
    }
    let revision = line.split("REVISION:").nth(1).and_then(|rest| {
        let rev: String = rest
            .trim()
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let rev = rev.trim_end_matches('.').to_string();
        (!rev.is_empty()).then_some(rev)
    });
    Some(match revision {
        Some(rev) => format!("{major}.{rev}"),
        None => major,
    })
}

/// L4T -> JetPack (NVIDIA's release notes). Unknown minors give the major (`6`).
pub fn jetpack_for(l4t: &str) -> Option<String> {
    let known = [
        ("32.4.3", "4.4"),
        ("32.4.4", "4.4.1"),
        ("32.5.0", "4.5"),
        ("32.5.1", "4.5.1"),
        ("32.6.1", "4.6"),
        ("32.7.1", "4.6.1"),
        ("32.7.2", "4.6.2"),
        ("32.7.3", "4.6.3"),
        ("32.7.4", "4.6.4"),
        ("32.7.5", "4.6.5"),
        ("32.7.6", "4.6.6"),
        ("34.1.0", "5.0 DP"),
        ("34.1.1", "5.0.1 DP"),
        ("35.1.0", "5.0.2"),
        ("35.2.1", "5.1"),
        ("35.3.1", "5.1.1"),
        ("35.4.1", "5.1.2"),
        ("35.5.0", "5.1.3"),
        ("35.6.0", "5.1.4"),
        ("36.2.0", "6.0 DP"),
        ("36.3.0", "6.0"),
        ("36.4.0", "6.1"),
        ("36.4.3", "6.2"),
        ("36.4.4", "6.2.1"),
        ("38.2.0", "7.0"),
    ];
    let mut parts: Vec<&str> = l4t.split('.').collect();
    while parts.len() < 3 {
        parts.push("0");
    }
    let full = parts[..3].join(".");
    if let Some((_, jp)) = known.iter().find(|(l, _)| *l == full) {
        return Some(jp.to_string());
    }
    match parts[0] {
        "28" => Some("3".into()),
        "32" => Some("4".into()),
        "34" | "35" => Some("5".into()),
        "36" => Some("6".into()),
        "38" => Some("7".into()),
        _ => None,
    }
}

/// SoC -> (family, compute capability).
pub fn soc_entry(soc: &str) -> Option<(&'static str, &'static str)> {
    Some(match soc {
        "tegra194" => ("Xavier", "7.2"),
        "tegra234" => ("Orin", "8.7"),
        "tegra264" => ("Thor", "11.0"),
        "tegra210" => ("TX1/Nano", "5.3"),
        "tegra186" => ("TX2", "6.2"),
        _ => return None,
    })
}

/// The entries of a `compatible` list: NUL-separated as the kernel writes it, or run
/// together where a terminal paste dropped the NULs (`...p3767-0003nvidia,tegra234`), so
/// a new entry also starts at every `nvidia,`.
fn compatible_entries(text: &str) -> Vec<String> {
    text.split(['\0', '\n'])
        .flat_map(|chunk| {
            let mut entries = Vec::new();
            let mut rest = chunk.trim();
            while let Some(at) = rest.get(1..).and_then(|r| r.find("nvidia,")).map(|i| i + 1) {
                entries.push(rest[..at].to_string());
                rest = &rest[at..];
            }
            if !rest.is_empty() {
                entries.push(rest.to_string());
            }
            entries
        })
        .collect()
}

/// The SoC named in a `compatible` list (`nvidia,tegra234` -> `tegra234`).
pub fn soc_from_compatible(text: &str) -> Option<String> {
    compatible_entries(text)
        .iter()
        .filter_map(|entry| entry.trim().strip_prefix("nvidia,tegra"))
        .filter(|rest| !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit()))
        .map(|digits| format!("tegra{digits}"))
        .next_back()
}

/// Jetson module part number -> SoC (module numbers only: carrier boards such as p3509
/// carry more than one module generation).
pub fn soc_for_module(part: &str) -> Option<&'static str> {
    Some(match part {
        "p3701" | "p3767" => "tegra234",
        "p2888" | "p3668" => "tegra194",
        "p3310" | "p3636" => "tegra186",
        "p2180" | "p3448" => "tegra210",
        _ => return None,
    })
}

/// The SoC the module part numbers in a `compatible` list name (`nvidia,p3737-0000+p3701-0000`
/// -> p3701 -> tegra234), with the part number; `None` when they name none or disagree.
pub fn soc_from_module_numbers(text: &str) -> Option<(&'static str, String)> {
    let mut found: Vec<(&'static str, String)> = Vec::new();
    for entry in compatible_entries(text) {
        let Some(boards) = entry.trim().strip_prefix("nvidia,") else {
            continue;
        };
        for board in boards.split('+') {
            let part = board.split('-').next().unwrap_or("");
            if let Some(soc) = soc_for_module(part) {
                found.push((soc, part.to_string()));
            }
        }
    }
    let first = found.first()?.clone();
    found
        .iter()
        .all(|(soc, _)| *soc == first.0)
        .then_some(first)
}

/// `tegra234-p3767-0003-p3768-0000-a0.dts` -> `tegra234`.
fn soc_from_dts_name(name: &str) -> Option<String> {
    let digits = name.strip_prefix("tegra")?.split('-').next()?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| format!("tegra{digits}"))
}

fn clean(text: &str) -> Option<String> {
    let t = text.trim_matches(|c: char| c == '\0' || c.is_whitespace());
    (!t.is_empty() && !t.chars().any(char::is_control)).then(|| t.to_string())
}

/// An aarch64 NVIDIA module numbered like an L4T release (35.3.1), not like a
/// discrete-GPU driver (535.129.03): its version.
fn nvrm_l4t(sys: &SysRoot) -> Option<String> {
    sys.read(crate::probe::gpu::NVIDIA_VERSION)
        .as_deref()
        .and_then(crate::probe::gpu::nvrm_line)
        .filter(|(arch, version)| {
            arch == "aarch64"
                && version
                    .split('.')
                    .next()
                    .and_then(|m| m.parse::<u32>().ok())
                    .is_some_and(|m| (20..100).contains(&m))
        })
        .map(|(_, version)| version)
}

/// The SoC and where it came from, strongest evidence first (see the module docs).
fn decide_soc(
    mut soc: Option<String>,
    dts_name: Option<&str>,
    compatible: Option<&str>,
    release: Option<&str>,
) -> (Option<String>, Option<String>) {
    let mut soc_source = soc
        .as_ref()
        .map(|_| "/proc/device-tree/compatible nvidia,tegraNNN".to_string());
    if soc.is_none()
        && let Some(from_dts) = dts_name.and_then(soc_from_dts_name)
    {
        soc = Some(from_dts);
        soc_source = Some("/proc/device-tree/nvidia,dtsfilename tegraNNN- prefix".into());
    }
    if soc.is_none()
        && let Some((from_module, part)) = compatible.and_then(soc_from_module_numbers)
    {
        soc = Some(from_module.to_string());
        soc_source = Some(format!(
            "/proc/device-tree/compatible module part number {part}"
        ));
    }
    if soc.is_none()
        && release
            .and_then(|t| t.split("BOARD:").nth(1))
            .is_some_and(|b| b.split(',').next().map(str::trim) == Some("t210ref"))
    {
        soc = Some("tegra210".into());
        soc_source = Some("/etc/nv_tegra_release BOARD: t210ref (TX1 and Nano only)".into());
    }
    (soc, soc_source)
}

/// The warnings for a Tegra SoC or JetPack edgeplan cannot name.
fn warn_unknowns(
    sys: &SysRoot,
    soc: Option<&str>,
    soc_unknown: bool,
    l4t: Option<&str>,
    jetpack_unknown: bool,
) {
    if soc_unknown {
        sys.warn(format!(
            "Tegra device whose SoC is unknown ({}): compute capability unknown",
            match soc {
                Some(s) => format!("{s} is not in edgeplan's Tegra table"),
                None => "no nvidia,tegraNNN or known module part number in /proc/device-tree/compatible, no device-tree file name, no L4T board that names one".into(),
            }
        ));
    }
    if let (Some(l4t), true) = (l4t, jetpack_unknown) {
        sys.warn(format!(
            "L4T {l4t}: a release edgeplan has no JetPack mapping for; JetPack unknown"
        ));
    }
}

/// The `jetson` section, or `None` when nothing says Tegra.
pub fn read(sys: &SysRoot) -> Option<Jetson> {
    let mut detected_by = Vec::new();
    let release = sys.read("/etc/nv_tegra_release");
    if release.is_some() {
        detected_by.push("/etc/nv_tegra_release".to_string());
    }
    let compatible = sys.read("/proc/device-tree/compatible");
    let soc = compatible.as_deref().and_then(soc_from_compatible);
    if soc.is_some() {
        detected_by.push("/proc/device-tree/compatible".to_string());
    }
    let (model, model_path) = match sys.read("/proc/device-tree/model") {
        Some(text) => (clean(&text), "/proc/device-tree/model"),
        None => (
            sys.read("/sys/firmware/devicetree/base/model")
                .as_deref()
                .and_then(clean),
            "/sys/firmware/devicetree/base/model",
        ),
    };
    if model.as_deref().is_some_and(|m| m.contains("Jetson")) {
        detected_by.push(model_path.to_string());
    }
    if sys.exists("/sys/class/tegra-firmware") {
        detected_by.push("/sys/class/tegra-firmware".to_string());
    }
    if sys
        .read_line("/proc/sys/kernel/osrelease")
        .is_some_and(|r| r.contains("-tegra"))
    {
        detected_by.push("/proc/sys/kernel/osrelease (-tegra)".to_string());
    }
    let nvrm_l4t = nvrm_l4t(sys);
    if nvrm_l4t.is_some() {
        detected_by.push(format!(
            "{} (aarch64 module numbered like an L4T release)",
            crate::probe::gpu::NVIDIA_VERSION
        ));
    }
    if detected_by.is_empty() {
        return None;
    }
    let mut l4t = release.as_deref().and_then(parse_l4t);
    if release.is_some() && l4t.is_none() {
        sys.warn(format!(
            "{}: no `# R<major> ... REVISION:` line; L4T unknown",
            sys.shown("/etc/nv_tegra_release")
        ));
    }
    if l4t.is_none()
        && let Some(version) = &nvrm_l4t
    {
        l4t = Some(version.clone());
    }
    let dts_name = sys
        .read("/proc/device-tree/nvidia,dtsfilename")
        .as_deref()
        .and_then(clean)
        .map(|p| p.rsplit('/').next().unwrap_or(&p).to_string());
    let (soc, soc_source) = decide_soc(
        soc,
        dts_name.as_deref(),
        compatible.as_deref(),
        release.as_deref(),
    );
    let entry = soc.as_deref().and_then(soc_entry);
    let jetpack = l4t.as_deref().and_then(jetpack_for);
    warn_unknowns(
        sys,
        soc.as_deref(),
        entry.is_none(),
        l4t.as_deref(),
        jetpack.is_none(),
    );
    Some(Jetson {
        model,
        soc,
        soc_source,
        jetpack,
        l4t,
        compute_capability: entry.map(|e| e.1.to_string()),
        family: entry.map(|e| e.0.to_string()),
        module: dts_name,
        detected_by,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn l4t_and_jetpack() {
        let text = "# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 01:49:37 UTC 2025\n";
        assert_eq!(parse_l4t(text).as_deref(), Some("36.4.3"));
        assert_eq!(jetpack_for("36.4.3").as_deref(), Some("6.2"));
        assert_eq!(jetpack_for("36.4").as_deref(), Some("6.1"));
        assert_eq!(jetpack_for("36.3").as_deref(), Some("6.0"));
        assert_eq!(jetpack_for("36.9.9").as_deref(), Some("6"));
        assert_eq!(jetpack_for("35.4.1").as_deref(), Some("5.1.2"));
        assert_eq!(jetpack_for("35.9").as_deref(), Some("5"));
        assert_eq!(jetpack_for("38.2").as_deref(), Some("7.0"));
        assert_eq!(jetpack_for("38.9").as_deref(), Some("7"));
        // An L4T major with no published JetPack mapping is not guessed
        // (rbonghi/jetson_stats#864: R39.2.0 on an AGX Orin, "Jetpack: MISSING").
        assert_eq!(jetpack_for("39.2.0"), None);
        assert_eq!(jetpack_for("32.7.1").as_deref(), Some("4.6.1"));
        assert_eq!(jetpack_for("32.5").as_deref(), Some("4.5"));
        // R34 was the JetPack 5.0 developer preview line (jetson_stats#291: a Clara AGX
        // on R34.1.2).
        assert_eq!(jetpack_for("34.1.1").as_deref(), Some("5.0.1 DP"));
        assert_eq!(jetpack_for("34.1.2").as_deref(), Some("5"));
        assert_eq!(jetpack_for("12"), None);
        assert_eq!(
            parse_l4t("# R35 (release), REVISION: 4.1, GCID: 33958178").as_deref(),
            Some("35.4.1")
        );
        assert_eq!(parse_l4t("# R38 (release)").as_deref(), Some("38"));
        assert_eq!(parse_l4t("garbage"), None);
        assert_eq!(parse_l4t("# Rx"), None);
    }

    #[test]
    fn soc_from_nul_separated_compatible() {
        let text = "nvidia,p3737-0000+p3701-0005\0nvidia,p3701-0005\0nvidia,tegra234\0";
        assert_eq!(soc_from_compatible(text).as_deref(), Some("tegra234"));
        assert_eq!(soc_entry("tegra234"), Some(("Orin", "8.7")));
        assert_eq!(soc_entry("tegra194").unwrap().1, "7.2");
        assert_eq!(soc_entry("tegra264").unwrap().1, "11.0");
        assert_eq!(
            soc_from_compatible("raspberrypi,5-model-b\0brcm,bcm2712\0"),
            None
        );
        assert_eq!(soc_from_compatible("nvidia,tegra\0"), None);
        // As pasted in rbonghi/jetson_stats#400 (Orin Nano): the NULs lost.
        let pasted = "nvidia,p3768-0000+p3767-0003nvidia,p3768-0000+p3767-0005nvidia,p3767-0003nvidia,p3767-0005nvidia,tegra234nvidia,tegra23x";
        assert_eq!(soc_from_compatible(pasted).as_deref(), Some("tegra234"));
        assert_eq!(
            soc_from_module_numbers(pasted),
            Some(("tegra234", "p3767".to_string()))
        );
    }

    #[test]
    fn soc_from_module_part_numbers() {
        // rbonghi/jetson_stats#864: only the board entry was captured.
        assert_eq!(
            soc_from_module_numbers("nvidia,p3737-0000+p3701-0000"),
            Some(("tegra234", "p3701".to_string()))
        );
        assert_eq!(
            soc_from_module_numbers("nvidia,p3509-0000+p3668-0001\0"),
            Some(("tegra194", "p3668".to_string()))
        );
        // A carrier alone decides nothing; disagreeing modules neither.
        assert_eq!(soc_from_module_numbers("nvidia,p3509-0000"), None);
        assert_eq!(
            soc_from_module_numbers("nvidia,p3701-0000\0nvidia,p3668-0001"),
            None
        );
        assert_eq!(
            soc_from_dts_name("tegra234-p3767-0003-p3768-0000-a0.dts").as_deref(),
            Some("tegra234")
        );
        assert_eq!(soc_from_dts_name("tegraX-p1.dts"), None);
    }
}

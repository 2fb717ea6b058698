//! NVIDIA Jetson / Tegra: detected before any GPU search, since its GPU is not on PCI.
//!
//! Signals, any of which makes it Tegra: `/etc/nv_tegra_release`, `nvidia,tegra*` in
//! `/proc/device-tree/compatible` (NUL-separated), "Jetson" in `/proc/device-tree/model`,
//! `/sys/class/tegra-firmware`, and `-tegra` in the kernel release. The SoC decides the
//! compute capability (tegra194 Xavier 7.2, tegra234 Orin 8.7, tegra264 Thor 11.0); the
//! L4T release decides JetPack.

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
        "32" => Some("4".into()),
        "35" => Some("5".into()),
        "36" => Some("6".into()),
        "38" | "39" => Some("7".into()),
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

/// The SoC named in a NUL-separated `compatible` list (`nvidia,tegra234` -> `tegra234`).
pub fn soc_from_compatible(text: &str) -> Option<String> {
    text.split(['\0', '\n'])
        .filter_map(|entry| entry.trim().strip_prefix("nvidia,tegra"))
        .filter(|rest| !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit()))
        .map(|digits| format!("tegra{digits}"))
        .next_back()
}

fn clean(text: &str) -> Option<String> {
    let t = text.trim_matches(|c: char| c == '\0' || c.is_whitespace());
    (!t.is_empty() && !t.chars().any(char::is_control)).then(|| t.to_string())
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
    let model = sys
        .read("/proc/device-tree/model")
        .or_else(|| sys.read("/sys/firmware/devicetree/base/model"))
        .as_deref()
        .and_then(clean);
    if model.as_deref().is_some_and(|m| m.contains("Jetson")) {
        detected_by.push("/proc/device-tree/model".to_string());
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
    if detected_by.is_empty() {
        return None;
    }
    let l4t = release.as_deref().and_then(parse_l4t);
    if release.is_some() && l4t.is_none() {
        sys.warn(format!(
            "{}: no `# R<major> ... REVISION:` line; L4T unknown",
            sys.shown("/etc/nv_tegra_release")
        ));
    }
    let entry = soc.as_deref().and_then(soc_entry);
    if entry.is_none() {
        sys.warn("Tegra device whose SoC is unknown (no nvidia,tegraNNN in /proc/device-tree/compatible): compute capability unknown");
    }
    let module = sys
        .read("/proc/device-tree/nvidia,dtsfilename")
        .as_deref()
        .and_then(clean)
        .map(|p| p.rsplit('/').next().unwrap_or(&p).to_string());
    Some(Jetson {
        model,
        soc,
        jetpack: l4t.as_deref().and_then(jetpack_for),
        l4t,
        compute_capability: entry.map(|e| e.1.to_string()),
        family: entry.map(|e| e.0.to_string()),
        module,
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
        assert_eq!(jetpack_for("39.0").as_deref(), Some("7"));
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
    }
}

//! Android: SoC identity from build properties, the Hexagon HTP table, QNN libraries.
//!
//! A tree is Android when `/system/build.prop` or `/vendor/build.prop` exists (both are
//! read; vendor values win for `ro.soc.*`, which the vendor partition owns). The SoC
//! comes from the strongest evidence present, in this order, and `soc_model_source`
//! names the one used:
//! 1. `ro.soc.model` (Android 12+);
//! 2. the numeric Qualcomm `/sys/devices/soc0/soc_id` (it names the exact chip);
//! 3. `/sys/devices/soc0/machine`, only when it looks like a chip name (`SM8650`, not
//!    `Snapdragon` or a board sentence);
//! 4. `ro.chipname` / `ro.hardware.chipname`, the cpuinfo `Hardware` line's chip token,
//!    `ro.board.platform` or `ro.hardware`, each only when chip-shaped;
//! 5. a Qualcomm platform codename, only when the codename is used by one chip.
//!
//! A codename shared by several chips (`lahaina`: SM8350 and SM7325) leaves `soc_model`
//! null, lists `soc_candidates`, claims no NPU unless every candidate has the same HTP
//! entry, and warns which property would settle it. `npu.present` comes from the SoC
//! -> HTP table; QNN libraries found on the image are listed but are not proof of
//! anything (apps usually bundle their own), and `npu.verified` is always false: only
//! a real QNN session could set it.

use std::collections::BTreeMap;

use crate::probe::sysroot::SysRoot;
use crate::profile::{Android, Npu};

/// `key=value` lines; `#` comments and junk skipped. Later files override earlier ones.
pub fn parse_props(text: &str, into: &mut BTreeMap<String, String>) {
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if key.is_empty()
            || !key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        {
            continue;
        }
        into.insert(key.to_string(), value.trim().to_string());
    }
}

/// SoC -> (HTP architecture, VTCM MB when documented). ExecuTorch's SoC table
/// (`backends/qualcomm/serialization/qc_schema.py`, `_soc_info_table`, pytorch/executorch
/// @ 0e9182a36b1ca9e423e28c4fa862e47887b050c1); QCS6490 from its earlier `QcomChipset`.
/// Chips it does not list (SM7325, SM8635, ...) have no entry: no export targets them.
pub fn htp_entry(soc: &str) -> Option<(&'static str, Option<u32>)> {
    Some(match soc {
        "SM8350" => ("v68", Some(4)),
        "SM8450" | "SM8475" => ("v69", Some(8)),
        "SM8550" => ("v73", Some(8)),
        "SM8650" => ("v75", Some(8)),
        "SM8750" => ("v79", Some(8)),
        "SM8850" | "SM8845" => ("v81", Some(8)),
        "QCS6490" | "QCM6490" => ("v68", Some(2)),
        "SA8295" | "SA8295P" | "SA8540" | "SA8540P" => ("v68", Some(8)),
        "SA8255" | "SA8255P" => ("v73", Some(8)),
        "SA8797" => ("v81", Some(16)),
        "QCS9100" => ("v73", Some(8)),
        "SSG2115P" | "SSG2125P" | "SXR1230P" => ("v73", Some(2)),
        "SXR2230P" => ("v69", Some(8)),
        "SXR2330P" => ("v79", Some(8)),
        "SAR2230P" | "SW6100" => ("v81", Some(4)),
        _ => return None,
    })
}

/// Qualcomm platform codenames -> every chip known to use it. One entry means the
/// codename names the chip; more mean it cannot (`lahaina` is SM8350 and SM7325,
/// `pineapple` SM8650 and SM8635; Qualcomm's per-SoC kernel trees and device configs).
pub fn chips_for_platform(platform: &str) -> &'static [&'static str] {
    match platform {
        "lahaina" => &["SM8350", "SM7325"],
        "pineapple" => &["SM8650", "SM8635"],
        "taro" => &["SM8450"],
        "cape" => &["SM8475"],
        "kalama" => &["SM8550"],
        "sun" => &["SM8750"],
        _ => &[],
    }
}

/// Qualcomm socinfo `soc_id` -> chip. Values from Linux
/// `include/dt-bindings/arm/qcom,ids.h` (`QCOM_ID_*`), as the kernel's socinfo driver
/// reports them in `/sys/devices/soc0/soc_id`; second-revision ids give the base chip.
pub fn chip_for_soc_id(id: u32) -> Option<&'static str> {
    Some(match id {
        126 => "MSM8974",
        178 => "APQ8084",
        206 => "MSM8916",
        207 => "MSM8994",
        239 => "MSM8939",
        245 => "MSM8909",
        246 | 305 => "MSM8996",
        251 => "MSM8992",
        264 => "MSM8952",
        266 => "MSM8956",
        278 => "MSM8976",
        291 => "APQ8096",
        292 => "MSM8998",
        293 => "MSM8953",
        294 => "MSM8937",
        303 => "MSM8917",
        317 => "SDM660",
        318 => "SDM630",
        321 => "SDM845",
        338 => "SDM450",
        339 => "SM8150",
        341 => "SDA845",
        345 => "SDM636",
        349 => "SDM632",
        353 => "SDM439",
        354 => "SDM429",
        356 => "SM8250",
        362 => "SA8155",
        365 => "SM7150",
        366 => "SM7150P",
        394 => "SM6125",
        417 => "SM4250",
        425 => "SC7180",
        434 => "SM6350",
        439 => "SM8350",
        443 => "SM7125",
        444 => "SM6115",
        449 => "SC8280XP",
        455 => "QRB5165",
        457 | 480 | 482 => "SM8450",
        459 => "SM7225",
        460 => "SA8295P",
        461 => "SA8540P",
        475 => "SM7325",
        487 => "SC7280",
        497 => "QCM6490",
        499 => "SM7325P",
        507 => "SM6375",
        519 => "SM8550",
        530 | 540 => "SM8475",
        531 => "SM8475P",
        534 => "SA8775P",
        555 => "X1E80100",
        557 => "SM8650",
        568 => "SM4450",
        603 => "QCS8550",
        604 => "QCM8550",
        618 => "SM8750",
        667 => "QCS9100",
        674 => "QCS8300",
        675 => "QCS8275",
        676 => "QCS9075",
        680 => "QCS615",
        _ => return None,
    })
}

/// A chip name: one token that starts with a letter and holds at least three digits
/// (`SM8650`, `SDM845`, `MT6989`, `Exynos9820`, `s5e9925`, `Kirin970`, `sm8650-ab`), never a
/// marketing word, a codename without digits (`lahaina`) or a sentence.
pub fn chip_shaped(text: &str) -> bool {
    let t = text.trim();
    let base = t.split(['-', '_']).next().unwrap_or("");
    (2..=24).contains(&t.len())
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && base.starts_with(|c: char| c.is_ascii_alphabetic())
        && base.bytes().filter(u8::is_ascii_digit).count() >= 3
        && !base.to_ascii_lowercase().starts_with("universal")
}

/// Samsung's `universal8890` board platform -> `EXYNOS8890`.
fn exynos_board(text: &str) -> Option<String> {
    let digits = text.trim().strip_prefix("universal")?;
    (digits.len() >= 4 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| format!("EXYNOS{digits}"))
}

/// The chip token of an old kernel's cpuinfo `Hardware` line
/// (`Qualcomm Technologies, Inc SDM845` -> `SDM845`).
fn hardware_chip(line: &str) -> Option<String> {
    line.split([' ', ','])
        .rev()
        .find(|w| chip_shaped(w))
        .map(str::to_string)
}

/// The SoC's HTP entry; says so when the SoC is a lettered variant (`SM8750P`) of a chip in
/// the table: the NPU is not claimed for a part the table does not list, but the user
/// should know why.
fn warn_lettered_variant(sys: &SysRoot, soc: &str) -> Option<(&'static str, Option<u32>)> {
    if htp_entry(soc).is_none()
        && let Some(base) = lettered_variant_base(soc).filter(|b| htp_entry(b).is_some())
    {
        sys.warn(format!(
            "Android SoC {soc} is a lettered variant of {base}, whose Hexagon HTP edgeplan knows; the HTP table (ExecuTorch's) does not list {soc}, so no NPU is claimed: check that the QNN SDK lists it before exporting for {base}"
        ));
    }
    htp_entry(soc)
}

/// Two normalized names for one chip: equal, or one a vendor-prefixed form of the other
/// (Samsung's `ro.hardware=samsungexynos7870` beside `ro.hardware.chipname=exynos7870`).
fn same_chip(a: &str, b: &str) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    short == long || (short.len() >= 5 && long.ends_with(short))
}

/// `SM8750P` -> `SM8750`: a Qualcomm part number with one trailing letter.
fn lettered_variant_base(soc: &str) -> Option<&str> {
    let base = soc.get(..soc.len().checked_sub(1)?)?;
    let letter = soc.chars().last()?;
    (letter.is_ascii_uppercase()
        && base.len() >= 5
        && base.starts_with(|c: char| c.is_ascii_uppercase())
        && base.ends_with(|c: char| c.is_ascii_digit()))
    .then_some(base)
}

/// Upper case, without a variant suffix (`sm8650-ab` -> `SM8650`). `ro.soc.model` is often
/// written as words: a brand and a number run together as the chip name the other
/// properties use (`Exynos 9810` -> `EXYNOS9810`, as `ro.hardware.chipname=exynos9810`),
/// other words are kept (`Tensor G2` -> `TENSOR G2`), never cut to the brand alone.
pub fn normalize_soc(model: &str) -> String {
    let upper = model.trim().to_ascii_uppercase();
    let words: Vec<&str> = upper.split_whitespace().collect();
    match words.as_slice() {
        [] => String::new(),
        [one] => one.split('-').next().unwrap_or("").to_string(),
        [brand, number] if number.bytes().all(|b| b.is_ascii_digit()) => {
            format!("{brand}{number}")
        }
        many => many.join(" "),
    }
}

const LIB_DIRS: &[&str] = &[
    "/vendor/lib64",
    "/system/lib64",
    "/vendor/lib/rfsa/adsp",
    "/system/lib/rfsa/adsp",
    "/dsp",
];

/// The `android` section, or `None` when the tree has no build.prop. `cpuinfo_hardware`
/// is the cpuinfo `Hardware` line, if any.
pub fn read(sys: &SysRoot, cpuinfo_hardware: Option<&str>) -> Option<Android> {
    let mut props = BTreeMap::new();
    let mut found = false;
    for file in ["/system/build.prop", "/vendor/build.prop"] {
        if let Some(text) = sys.read(file) {
            parse_props(&text, &mut props);
            found = true;
        }
    }
    if !found {
        return None;
    }
    let prop = |k: &str| props.get(k).filter(|v| !v.is_empty()).cloned();
    let mut android = Android {
        manufacturer: prop("ro.soc.manufacturer"),
        board_platform: prop("ro.board.platform"),
        hardware: prop("ro.hardware"),
        ..Android::default()
    };
    let soc0 = sys.read_line("/sys/devices/soc0/machine");
    let soc0_vendor = sys
        .read_line("/sys/devices/soc0/vendor")
        .or_else(|| sys.read_line("/sys/devices/soc0/family"));
    let qualcomm_soc0 = soc0_vendor
        .as_deref()
        .is_none_or(|v| v.contains("Qualcomm") || v.contains("Snapdragon"));
    let soc_id = sys
        .read_line("/sys/devices/soc0/soc_id")
        .filter(|_| qualcomm_soc0)
        .and_then(|t| t.trim().parse::<u32>().ok());

    let mut evidence: Vec<(String, String)> = Vec::new(); // (chip, source)
    if let Some(model) = prop("ro.soc.model") {
        evidence.push((model, "ro.soc.model".into()));
    }
    if let Some(id) = soc_id {
        match chip_for_soc_id(id) {
            Some(chip) => evidence.push((
                chip.to_string(),
                format!("/sys/devices/soc0/soc_id {id} (Qualcomm socinfo id)"),
            )),
            None => sys.warn(format!(
                "/sys/devices/soc0/soc_id {id} is not in edgeplan's Qualcomm id table"
            )),
        }
    }
    if let Some(m) = soc0.as_deref().filter(|m| chip_shaped(m)) {
        evidence.push((m.to_string(), "/sys/devices/soc0/machine".into()));
    }
    // Samsung's socinfo writes the chip name itself (`EXYNOS8895`) into soc_id.
    if let Some(id) = sys
        .read_line("/sys/devices/soc0/soc_id")
        .filter(|t| t.parse::<u32>().is_err() && chip_shaped(t))
    {
        evidence.push((id, "/sys/devices/soc0/soc_id (a chip name)".into()));
    }
    for key in [
        "ro.chipname",
        "ro.hardware.chipname",
        "ro.vendor.mediatek.platform",
        "ro.mediatek.platform",
    ] {
        if let Some(v) = prop(key).filter(|v| chip_shaped(v)) {
            evidence.push((v, key.into()));
        }
    }
    if let Some(chip) = cpuinfo_hardware.and_then(hardware_chip) {
        evidence.push((chip, "/proc/cpuinfo Hardware".into()));
    }
    if let Some(platform) = android.board_platform.as_deref() {
        if chip_shaped(platform) {
            evidence.push((platform.to_string(), "ro.board.platform".into()));
        } else if let Some(chip) = exynos_board(platform) {
            evidence.push((chip, "ro.board.platform (Samsung universalNNNN)".into()));
        }
    }
    if let Some(hw) = android.hardware.as_deref().filter(|h| chip_shaped(h)) {
        evidence.push((hw.to_string(), "ro.hardware".into()));
    }

    let mut candidates: Vec<String> = Vec::new();
    if let Some((chip, source)) = evidence.first() {
        android.soc_model = Some(normalize_soc(chip));
        android.soc_model_source = Some(source.clone());
        if let Some((other, other_source)) = evidence
            .iter()
            .skip(1)
            .find(|(c, _)| !same_chip(&normalize_soc(c), &normalize_soc(chip)))
        {
            sys.warn(format!(
                "Android SoC disagreement: {source} says {chip}, {other_source} says {other} (spoofed properties, or a board name?); using {source}"
            ));
        }
    } else if let Some(platform) = android.board_platform.clone() {
        match chips_for_platform(&platform) {
            [] => {}
            [one] => {
                android.soc_model = Some(one.to_string());
                android.soc_model_source = Some(format!("ro.board.platform codename {platform}"));
            }
            many => {
                candidates = many.iter().map(|c| c.to_string()).collect();
                android.soc_model_source = Some(format!(
                    "ro.board.platform codename {platform} (shared by {})",
                    many.join(", ")
                ));
                sys.warn(format!(
                    "Android SoC ambiguous: ro.board.platform {platform} is used by {}; ro.soc.model (Android 12+) or /sys/devices/soc0/soc_id would settle it, so no NPU is claimed",
                    many.join(" and ")
                ));
            }
        }
    }
    if android.soc_model.is_none() && candidates.is_empty() {
        sys.warn("Android device whose SoC is unknown (no ro.soc.model, Qualcomm soc_id, chip-shaped soc0/machine or build property, or known ro.board.platform)");
    }
    android.soc_candidates = candidates;

    for dir in LIB_DIRS {
        for name in sys.list(dir) {
            if (name.starts_with("libQnn") || name == "libcdsprpc.so") && name.ends_with(".so") {
                android.qnn_libraries.push(format!("{dir}/{name}"));
            }
        }
    }
    let entry = match (&android.soc_model, android.soc_candidates.as_slice()) {
        (Some(soc), _) => warn_lettered_variant(sys, soc).map(Some),
        (None, []) => None,
        (None, many) => {
            // Sure only when every candidate has the same HTP entry.
            let first = htp_entry(&many[0]);
            if many.iter().all(|c| htp_entry(c) == first) {
                first.map(Some)
            } else if many.iter().any(|c| htp_entry(c).is_some()) {
                Some(None)
            } else {
                None
            }
        }
    };
    android.npu = entry.map(|entry| match entry {
        Some((arch, vtcm)) => Npu {
            kind: "qualcomm-htp".into(),
            htp_arch: Some(arch.to_string()),
            vtcm_mb: vtcm,
            present: true,
            verified: false,
        },
        None => Npu {
            kind: "qualcomm-htp".into(),
            htp_arch: None,
            vtcm_mb: None,
            present: false,
            verified: false,
        },
    });
    Some(android)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn props_and_overrides() {
        let mut props = BTreeMap::new();
        parse_props(
            "# comment\nro.board.platform=pineapple\nro.soc.model=SM8650\ngarbage line\n=x\n",
            &mut props,
        );
        parse_props("ro.soc.model = SM8650 \nbad key=1\n", &mut props);
        assert_eq!(props["ro.board.platform"], "pineapple");
        assert_eq!(props["ro.soc.model"], "SM8650");
        assert_eq!(props.len(), 2);
    }

    #[test]
    fn htp_table() {
        assert_eq!(htp_entry("SM8650"), Some(("v75", Some(8))));
        assert_eq!(htp_entry("QCM6490"), Some(("v68", Some(2))));
        assert_eq!(htp_entry("SM7325"), None);
        assert_eq!(htp_entry("SM8635"), None);
        assert_eq!(htp_entry("SM8350"), Some(("v68", Some(4))));
        assert_eq!(htp_entry("QCS6490"), Some(("v68", Some(2))));
        assert_eq!(htp_entry("SA8797"), Some(("v81", Some(16))));
        assert_eq!(htp_entry("SM8475").unwrap().0, "v69");
        assert_eq!(htp_entry("SM8845").unwrap().0, "v81");
        assert_eq!(htp_entry("QCS9100").unwrap().0, "v73");
        assert_eq!(htp_entry("MT6989"), None);
        assert_eq!(normalize_soc("sm8650-ab"), "SM8650");
        // ro.soc.model as devices write it: Pixel 7 `Tensor G2`, Samsung `Exynos 9810`
        // (`Exynos2200` on others); the brand alone would be a wrong fact.
        assert_eq!(normalize_soc("Tensor G2"), "TENSOR G2");
        assert_eq!(normalize_soc("Exynos 9810"), "EXYNOS9810");
        assert_eq!(normalize_soc("Exynos2200"), "EXYNOS2200");
        assert_eq!(normalize_soc(" "), "");
        assert_eq!(chips_for_platform("kalama"), ["SM8550"]);
        assert_eq!(chips_for_platform("lahaina"), ["SM8350", "SM7325"]);
        assert_eq!(chip_for_soc_id(321), Some("SDM845"));
        assert_eq!(chip_for_soc_id(557), Some("SM8650"));
        assert_eq!(chip_for_soc_id(1), None);
    }

    #[test]
    fn chip_shapes() {
        for yes in [
            "SM8650",
            "SDM845",
            "MT6989",
            "Exynos9820",
            "Kirin970",
            "sm8650-ab",
            "msm8996",
        ] {
            assert!(chip_shaped(yes), "{yes}");
        }
        for no in [
            "Snapdragon",
            "SAMSUNG",
            "Samsung EXYNOS8890 board",
            "qcom",
            "exynos5",
            "universal8890",
            "",
            "1.0",
        ] {
            assert!(!chip_shaped(no), "{no}");
        }
        assert_eq!(exynos_board("universal8890").as_deref(), Some("EXYNOS8890"));
        assert_eq!(
            hardware_chip("Qualcomm Technologies, Inc SDM845").as_deref(),
            Some("SDM845")
        );
        assert_eq!(hardware_chip("Raspberry Pi 5 Model B Rev 1.0"), None);
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

    #[test]
    fn evidence_order_and_ambiguity() {
        // A marketing string in soc0/machine is not a chip; the numeric id is.
        let dir = tree(&[
            ("system/build.prop", "ro.board.platform=lahaina\n"),
            ("sys/devices/soc0/machine", "Snapdragon\n"),
            ("sys/devices/soc0/soc_id", "475\n"),
        ]);
        let sys = SysRoot::at(dir.path());
        let a = read(&sys, None).unwrap();
        assert_eq!(a.soc_model.as_deref(), Some("SM7325"));
        assert!(a.soc_model_source.unwrap().contains("soc_id 475"));
        assert!(a.npu.is_none(), "SM7325 is not in the HTP table");

        // The shared codename alone: candidates, no NPU claimed, a note.
        let dir = tree(&[("system/build.prop", "ro.board.platform=pineapple\n")]);
        let sys = SysRoot::at(dir.path());
        let a = read(&sys, None).unwrap();
        assert_eq!(a.soc_model, None);
        assert_eq!(a.soc_candidates, ["SM8650", "SM8635"]);
        let npu = a.npu.unwrap();
        assert!(!npu.present && npu.htp_arch.is_none());
        assert!(
            sys.take_warnings()
                .iter()
                .any(|w| w.contains("ro.soc.model"))
        );

        // ro.soc.model beats everything; a board sentence in soc0 is ignored.
        let dir = tree(&[
            (
                "vendor/build.prop",
                "ro.soc.model=SM8650\nro.board.platform=pineapple\n",
            ),
            (
                "sys/devices/soc0/machine",
                "Samsung Galaxy board based on SM8650\n",
            ),
        ]);
        let sys = SysRoot::at(dir.path());
        let a = read(&sys, Some("Qualcomm Technologies, Inc SM8650")).unwrap();
        assert_eq!(a.soc_model.as_deref(), Some("SM8650"));
        assert_eq!(a.npu.unwrap().htp_arch.as_deref(), Some("v75"));
        assert!(sys.take_warnings().is_empty());

        // A lettered variant of a chip in the table: not claimed, but said. The values a
        // Snapdragon 8 Elite tablet reported in pytorch/executorch#21586 (SM8750P,
        // soc_id 639, ro.board.platform sun), where QNN found "No Snapdragon SOC" until
        // told SM8750.
        let dir = tree(&[
            (
                "vendor/build.prop",
                "ro.board.platform=sun\nro.soc.model=SM8750P\n",
            ),
            ("sys/devices/soc0/soc_id", "639\n"),
        ]);
        let sys = SysRoot::at(dir.path());
        let a = read(&sys, None).unwrap();
        assert_eq!(a.soc_model.as_deref(), Some("SM8750P"));
        assert!(a.npu.is_none());
        assert!(
            sys.take_warnings()
                .iter()
                .any(|w| w.contains("lettered variant of SM8750"))
        );
        // A spaced ro.soc.model agrees with the chip-name property that says the same, and
        // with Samsung's vendor-prefixed ro.hardware.
        let dir = tree(&[(
            "vendor/build.prop",
            "ro.soc.model=Exynos 9810\nro.hardware.chipname=exynos9810\nro.hardware=samsungexynos9810\n",
        )]);
        let sys = SysRoot::at(dir.path());
        let a = read(&sys, None).unwrap();
        assert_eq!(a.soc_model.as_deref(), Some("EXYNOS9810"));
        assert!(
            !sys.take_warnings()
                .iter()
                .any(|w| w.contains("disagreement"))
        );

        // pytorch/executorch#16465: ro.soc.model=CQ8750S, ro.board.platform=sun,
        // soc_id=705, where QNN fails the same way: no chip edgeplan knows, no NPU.
        let dir = tree(&[
            (
                "vendor/build.prop",
                "ro.board.platform=sun\nro.soc.model=CQ8750S\n",
            ),
            ("sys/devices/soc0/soc_id", "705\n"),
        ]);
        let sys = SysRoot::at(dir.path());
        let a = read(&sys, None).unwrap();
        assert_eq!(a.soc_model.as_deref(), Some("CQ8750S"));
        assert!(a.npu.is_none());
        assert!(
            sys.take_warnings()
                .iter()
                .any(|w| w.contains("soc_id 705 is not in edgeplan's Qualcomm id table"))
        );
        assert_eq!(lettered_variant_base("SM8750P"), Some("SM8750"));
        assert!(same_chip("SAMSUNGEXYNOS7870", "EXYNOS7870"));
        assert!(!same_chip("SM8650", "SM8550"));
        assert!(!same_chip("SM8750P", "SM8750"));
        assert_eq!(lettered_variant_base("SM8750"), None);
        assert_eq!(lettered_variant_base("P"), None);
    }
}

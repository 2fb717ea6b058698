//! Android: SoC identity from build properties, the Hexagon HTP table, QNN libraries.
//!
//! A tree is Android when `/system/build.prop` or `/vendor/build.prop` exists (both are
//! read; vendor values win for `ro.soc.*`, which the vendor partition owns). The SoC is
//! `ro.soc.model`, else `/sys/devices/soc0/machine`, else the `ro.board.platform`
//! codename. `npu.present` comes from the SoC -> HTP table; QNN libraries found on the
//! image are listed but are not proof of anything (apps usually bundle their own), and
//! `npu.verified` is always false: only a real QNN session could set it.

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

/// SoC -> (HTP architecture, VTCM MB when documented). ExecuTorch's `QcomChipset` table.
pub fn htp_entry(soc: &str) -> Option<(&'static str, Option<u32>)> {
    Some(match soc {
        "SM8350" => ("v68", Some(4)),
        "SM8450" | "SM8475" => ("v69", None),
        "SM8550" => ("v73", None),
        "SM8650" => ("v75", None),
        "SM8750" => ("v79", None),
        "SM8850" | "SM8845" => ("v81", None),
        "QCS6490" => ("v68", Some(2)),
        "SA8295" => ("v68", None),
        "SA8797" => ("v81", Some(16)),
        "QCS9100" => ("v73", None),
        _ => return None,
    })
}

/// Qualcomm platform codenames -> SoC, used only when no SoC model is given.
pub fn soc_for_platform(platform: &str) -> Option<&'static str> {
    Some(match platform {
        "lahaina" => "SM8350",
        "taro" => "SM8450",
        "kalama" => "SM8550",
        "pineapple" => "SM8650",
        "sun" => "SM8750",
        _ => return None,
    })
}

/// Upper case, without a variant suffix (`sm8650-ab` -> `SM8650`).
pub fn normalize_soc(model: &str) -> String {
    let upper = model.trim().to_ascii_uppercase();
    upper.split(['-', ' ']).next().unwrap_or("").to_string()
}

const LIB_DIRS: &[&str] = &[
    "/vendor/lib64",
    "/system/lib64",
    "/vendor/lib/rfsa/adsp",
    "/system/lib/rfsa/adsp",
    "/dsp",
];

/// The `android` section, or `None` when the tree has no build.prop.
pub fn read(sys: &SysRoot) -> Option<Android> {
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
    let (soc, source) = if let Some(model) = prop("ro.soc.model") {
        (Some(model), "ro.soc.model")
    } else if let Some(machine) = soc0.clone() {
        (Some(machine), "/sys/devices/soc0/machine")
    } else if let Some(soc) = android.board_platform.as_deref().and_then(soc_for_platform) {
        (Some(soc.to_string()), "ro.board.platform codename")
    } else {
        (None, "")
    };
    if let (Some(s), Some(m)) = (soc.as_deref(), soc0.as_deref())
        && normalize_soc(s) != normalize_soc(m)
    {
        sys.warn(format!("Android SoC disagreement: {source} says {s}, /sys/devices/soc0/machine says {m} (spoofed properties?)"));
    }
    android.soc_model = soc.as_deref().map(normalize_soc);
    android.soc_model_source = soc.is_some().then(|| source.to_string());
    if android.soc_model.is_none() {
        sys.warn("Android device whose SoC is unknown (no ro.soc.model, /sys/devices/soc0/machine or known ro.board.platform)");
    }

    for dir in LIB_DIRS {
        for name in sys.list(dir) {
            if (name.starts_with("libQnn") || name == "libcdsprpc.so") && name.ends_with(".so") {
                android.qnn_libraries.push(format!("{dir}/{name}"));
            }
        }
    }
    let entry = android.soc_model.as_deref().and_then(htp_entry);
    android.npu = entry.map(|(arch, vtcm)| Npu {
        kind: "qualcomm-htp".into(),
        htp_arch: Some(arch.to_string()),
        vtcm_mb: vtcm,
        present: true,
        verified: false,
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
        assert_eq!(htp_entry("SM8650"), Some(("v75", None)));
        assert_eq!(htp_entry("SM8350"), Some(("v68", Some(4))));
        assert_eq!(htp_entry("QCS6490"), Some(("v68", Some(2))));
        assert_eq!(htp_entry("SA8797"), Some(("v81", Some(16))));
        assert_eq!(htp_entry("SM8475").unwrap().0, "v69");
        assert_eq!(htp_entry("SM8845").unwrap().0, "v81");
        assert_eq!(htp_entry("QCS9100").unwrap().0, "v73");
        assert_eq!(htp_entry("MT6989"), None);
        assert_eq!(normalize_soc("sm8650-ab"), "SM8650");
        assert_eq!(soc_for_platform("kalama"), Some("SM8550"));
    }
}

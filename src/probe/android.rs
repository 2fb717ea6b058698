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

/// Qualcomm socinfo `soc_id` -> chip, every `QCOM_ID_*` of Linux
/// `include/dt-bindings/arm/qcom,ids.h` (torvalds/linux c9cfca98, plus SM8635 614,
/// SM7635 636, SM6650 640, SM6650P 641, QCM6690 657, QCS6690 658 and QCS9075 676 from
/// the patches that add them), as the kernel's socinfo driver reports them in
/// `/sys/devices/soc0/soc_id`. Names are the header's: second-revision ids give the base
/// chip (`SM8450_2` -> `SM8450`), variants keep their letters (`MSM8996SG`, the 8996 Pro;
/// `MSM8996AU`; `MSM8974PRO-AC`, read as `MSM8974PRO`). Sorted by id.
#[rustfmt::skip]
const QCOM_IDS: &[(u32, &str)] = &[
    (70, "MSM8260"), (71, "MSM8660"), (86, "APQ8060"), (87, "MSM8960"), (109, "APQ8064"),
    (116, "MSM8930"), (117, "MSM8630"), (118, "MSM8230"), (119, "APQ8030"),
    (120, "MSM8627"), (121, "MSM8227"), (122, "MSM8660A"), (123, "MSM8260A"),
    (124, "APQ8060A"), (126, "MSM8974"), (127, "MSM8225"), (129, "MSM8625"),
    (130, "MPQ8064"), (138, "MSM8960AB"), (139, "APQ8060AB"), (140, "MSM8260AB"),
    (141, "MSM8660AB"), (142, "MSM8930AA"), (143, "MSM8630AA"), (144, "MSM8230AA"),
    (145, "MSM8626"), (147, "MSM8610"), (153, "APQ8064AB"), (154, "MSM8930AB"),
    (155, "MSM8630AB"), (156, "MSM8230AB"), (157, "APQ8030AB"), (158, "MSM8226"),
    (159, "MSM8526"), (160, "APQ8030AA"), (161, "MSM8110"), (162, "MSM8210"),
    (163, "MSM8810"), (164, "MSM8212"), (165, "MSM8612"), (166, "MSM8112"),
    (167, "MSM8125"), (168, "MSM8225Q"), (169, "MSM8625Q"), (170, "MSM8125Q"),
    (172, "APQ8064AA"), (178, "APQ8084"), (179, "MSM8130"), (180, "MSM8130AA"),
    (181, "MSM8130AB"), (182, "MSM8627AA"), (183, "MSM8227AA"), (184, "APQ8074"),
    (185, "MSM8274"), (186, "MSM8674"), (187, "MDM9635"), (194, "MSM8974PRO-AC"),
    (198, "MSM8126"), (199, "APQ8026"), (200, "MSM8926"), (201, "IPQ8062"),
    (202, "IPQ8064"), (203, "IPQ8066"), (204, "IPQ8068"), (205, "MSM8326"),
    (206, "MSM8916"), (207, "MSM8994"), (208, "APQ8074PRO-AA"), (209, "APQ8074PRO-AB"),
    (210, "APQ8074PRO-AC"), (211, "MSM8274PRO-AA"), (212, "MSM8274PRO-AB"),
    (213, "MSM8274PRO-AC"), (214, "MSM8674PRO-AA"), (215, "MSM8674PRO-AB"),
    (216, "MSM8674PRO-AC"), (217, "MSM8974PRO-AA"), (218, "MSM8974PRO-AB"),
    (219, "APQ8028"), (220, "MSM8128"), (221, "MSM8228"), (222, "MSM8528"),
    (223, "MSM8628"), (224, "MSM8928"), (225, "MSM8510"), (226, "MSM8512"),
    (233, "MSM8936"), (234, "MDM9640"), (239, "MSM8939"), (240, "APQ8036"),
    (241, "APQ8039"), (242, "MSM8236"), (243, "MSM8636"), (245, "MSM8909"),
    (246, "MSM8996"), (247, "APQ8016"), (248, "MSM8216"), (249, "MSM8116"),
    (250, "MSM8616"), (251, "MSM8992"), (252, "APQ8092"), (253, "APQ8094"),
    (258, "MSM8209"), (259, "MSM8208"), (260, "MDM9209"), (261, "MDM9309"),
    (262, "MDM9609"), (263, "MSM8239"), (264, "MSM8952"), (265, "APQ8009"),
    (266, "MSM8956"), (268, "MSM8929"), (269, "MSM8629"), (270, "MSM8229"),
    (271, "APQ8029"), (274, "APQ8056"), (275, "MSM8609"), (277, "APQ8076"),
    (278, "MSM8976"), (279, "MDM9650"), (280, "IPQ8065"), (281, "IPQ8069"),
    (283, "MDM9655"), (284, "MDM9250"), (285, "MDM9255"), (286, "MDM9350"),
    (289, "APQ8052"), (290, "MDM9607"), (291, "APQ8096"), (292, "MSM8998"),
    (293, "MSM8953"), (294, "MSM8937"), (295, "APQ8037"), (296, "MDM8207"),
    (297, "MDM9207"), (298, "MDM9307"), (299, "MDM9628"), (300, "MSM8909W"),
    (301, "APQ8009W"), (302, "MSM8996L"), (303, "MSM8917"), (304, "APQ8053"),
    (305, "MSM8996SG"), (307, "APQ8017"), (308, "MSM8217"), (309, "MSM8617"),
    (310, "MSM8996AU"), (311, "APQ8096AU"), (312, "APQ8096SG"), (313, "MSM8940"),
    (314, "SDX201"), (317, "SDM660"), (318, "SDM630"), (319, "APQ8098"), (320, "MSM8920"),
    (321, "SDM845"), (322, "MDM9206"), (323, "IPQ8074"), (324, "SDA660"), (325, "SDM658"),
    (326, "SDA658"), (327, "SDA630"), (331, "MSM8905"), (333, "SDX202"), (336, "SDM670"),
    (338, "SDM450"), (339, "SM8150"), (341, "SDA845"), (342, "IPQ8072"), (343, "IPQ8076"),
    (344, "IPQ8078"), (345, "SDM636"), (346, "SDA636"), (349, "SDM632"), (350, "SDA632"),
    (351, "SDA450"), (353, "SDM439"), (354, "SDM429"), (356, "SM8250"), (362, "SA8155"),
    (363, "SDA439"), (364, "SDA429"), (365, "SM7150"), (366, "SM7150P"), (375, "IPQ8070"),
    (376, "IPQ8071"), (386, "QM215"), (389, "IPQ8072A"), (390, "IPQ8074A"),
    (391, "IPQ8076A"), (392, "IPQ8078A"), (394, "SM6125"), (395, "IPQ8070A"),
    (396, "IPQ8071A"), (397, "IPQ8172"), (398, "IPQ8173"), (399, "IPQ8174"),
    (402, "IPQ6018"), (403, "IPQ6028"), (416, "SDM429W"), (417, "SM4250"), (421, "IPQ6000"),
    (422, "IPQ6010"), (425, "SC7180"), (434, "SM6350"), (436, "QCM2150"), (437, "SDA429W"),
    (439, "SM8350"), (441, "QCM2290"), (443, "SM7125"), (444, "SM6115"), (446, "IPQ5010"),
    (447, "IPQ5018"), (448, "IPQ5028"), (449, "SC8280XP"), (453, "IPQ6005"),
    (455, "QRB5165"), (457, "SM8450"), (459, "SM7225"), (460, "SA8295P"), (461, "SA8540P"),
    (469, "QCM4290"), (470, "QCS4290"), (475, "SM7325"), (480, "SM8450"), (482, "SM8450"),
    (487, "SC7280"), (495, "SC7180P"), (497, "QCM6490"), (499, "SM7325P"), (503, "IPQ5000"),
    (504, "IPQ0509"), (505, "IPQ0518"), (507, "SM6375"), (510, "IPQ9514"), (511, "IPQ9550"),
    (512, "IPQ9554"), (513, "IPQ9570"), (514, "IPQ9574"), (519, "SM8550"), (520, "IPQ5016"),
    (521, "IPQ9510"), (523, "QRB4210"), (524, "QRB2210"), (525, "SAR2130P"),
    (530, "SM8475"), (531, "SM8475P"), (532, "SA8255P"), (534, "SA8775P"), (539, "QRU1000"),
    (540, "SM8475"), (545, "QDU1000"), (555, "X1E80100"), (557, "SM8650"), (568, "SM4450"),
    (579, "SAR1130P"), (587, "QDU1010"), (588, "QRU1032"), (589, "QRU1052"),
    (590, "QRU1062"), (592, "IPQ5332"), (593, "IPQ5322"), (594, "IPQ5312"),
    (595, "IPQ5302"), (603, "QCS8550"), (604, "QCM8550"), (614, "SM8635"), (618, "SM8750"),
    (624, "IPQ5300"), (636, "SM7635"), (640, "SM6650"), (641, "SM6650P"), (650, "IPQ5321"),
    (651, "IPQ5424"), (657, "QCM6690"), (658, "QCS6690"), (667, "QCS9100"),
    (671, "IPQ5404"), (674, "QCS8300"), (675, "QCS8275"), (676, "QCS9075"), (680, "QCS615"),
];

/// The chip a Qualcomm socinfo `soc_id` names ([`QCOM_IDS`]).
pub fn chip_for_soc_id(id: u32) -> Option<&'static str> {
    QCOM_IDS
        .binary_search_by_key(&id, |(i, _)| *i)
        .ok()
        .map(|at| QCOM_IDS[at].1)
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
/// A MediaTek part's package code after a slash is dropped (`MT6833V/ZA` -> `MT6833V`).
fn hardware_chip(line: &str) -> Option<String> {
    line.split([' ', ','])
        .rev()
        .map(|w| w.split('/').next().unwrap_or(""))
        .find(|w| chip_shaped(w))
        .map(str::to_string)
}

/// `tegra210_dragon` -> (`TEGRA210`, `dragon`): a chip token followed by `_` and a
/// board name (letters only, four or more: a MediaTek package code such as `MT6789V_CZA`
/// is not a board and is dropped like a `-ab` variant).
pub fn split_board(value: &str) -> (String, Option<String>) {
    let t = value.trim();
    let chip = normalize_soc(t);
    let board = t
        .split_once('_')
        .map(|(_, b)| b)
        .filter(|b| b.len() >= 4 && b.bytes().all(|c| c.is_ascii_alphabetic()));
    (chip, board.map(str::to_ascii_lowercase))
}

/// The 8996 Pro is `MSM8996SG` in Linux's id header and `MSM8996pro` in downstream
/// kernels' `soc0/machine`: one chip (likewise APQ8096SG).
fn pro_alias(name: &str) -> String {
    match name.strip_suffix("SG") {
        Some(base @ ("MSM8996" | "APQ8096")) => format!("{base}PRO"),
        _ => name.to_string(),
    }
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
    let (a, b) = (pro_alias(a), pro_alias(b));
    let (short, long) = if a.len() <= b.len() {
        (a.as_str(), b.as_str())
    } else {
        (b.as_str(), a.as_str())
    };
    short == long || (short.len() >= 5 && long.ends_with(short)) || lettered_variant_of(long, short)
}

/// `MSM8996SG`, `MSM8996PRO`, `SM8750P` of `MSM8996`, `SM8750`: a chip and its lettered
/// variant, as a platform property (`ro.board.platform=msm8996`) names the family of a
/// variant part. Not a disagreement.
fn lettered_variant_of(long: &str, short: &str) -> bool {
    short.len() >= 5
        && short.ends_with(|c: char| c.is_ascii_digit())
        && long.strip_prefix(short).is_some_and(|rest| {
            (1..=3).contains(&rest.len()) && rest.bytes().all(|b| b.is_ascii_alphabetic())
        })
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

/// Upper case, without a variant or board suffix (`sm8650-ab` -> `SM8650`,
/// `tegra210_dragon` -> `TEGRA210`; [`split_board`] keeps the board). `ro.soc.model` is often
/// written as words: a brand and a number run together as the chip name the other
/// properties use (`Exynos 9810` -> `EXYNOS9810`, as `ro.hardware.chipname=exynos9810`),
/// other words are kept (`Tensor G2` -> `TENSOR G2`), never cut to the brand alone.
pub fn normalize_soc(model: &str) -> String {
    let upper = model.trim().to_ascii_uppercase();
    let words: Vec<&str> = upper.split_whitespace().collect();
    match words.as_slice() {
        [] => String::new(),
        [one] => one.split(['-', '_']).next().unwrap_or("").to_string(),
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

/// Every chip name the tree states, strongest first, each with where it came from
/// (the order of the module comment): (chip, source).
fn soc_evidence(
    sys: &SysRoot,
    prop: &dyn Fn(&str) -> Option<String>,
    android: &Android,
    cpuinfo_hardware: Option<&str>,
) -> Vec<(String, String)> {
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

    let mut evidence: Vec<(String, String)> = Vec::new();
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
    // MediaTek's cpuinfo `Hardware` names the part (`MT6769V/CZ`, `MT6833V/ZA`) while
    // `ro.mediatek.platform` names the platform a family of parts is built on (`MT6768`
    // for the MT6769V/T/Z Helio G70/G80/G85, and for MT8786 tablets): the part goes first.
    let hardware = cpuinfo_hardware.and_then(hardware_chip);
    let mediatek_part = hardware
        .as_deref()
        .filter(|c| c.to_ascii_uppercase().starts_with("MT"));
    for key in ["ro.chipname", "ro.hardware.chipname"] {
        if let Some(v) = prop(key).filter(|v| chip_shaped(v)) {
            evidence.push((v, key.into()));
        }
    }
    if let Some(chip) = mediatek_part {
        evidence.push((chip.to_string(), "/proc/cpuinfo Hardware".into()));
    }
    for key in ["ro.vendor.mediatek.platform", "ro.mediatek.platform"] {
        if let Some(v) = prop(key).filter(|v| chip_shaped(v)) {
            evidence.push((v, key.into()));
        }
    }
    if let Some(chip) = hardware.as_deref().filter(|_| mediatek_part.is_none()) {
        evidence.push((chip.to_string(), "/proc/cpuinfo Hardware".into()));
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

    evidence
}

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
    let evidence = soc_evidence(sys, &prop, &android, cpuinfo_hardware);

    let mut candidates: Vec<String> = Vec::new();
    if let Some((chip, source)) = evidence.first() {
        let (model, board) = split_board(chip);
        android.soc_model = Some(model);
        android.soc_board = board;
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
    fn the_soc_id_table_is_the_headers() {
        assert!(
            QCOM_IDS.windows(2).all(|w| w[0].0 < w[1].0),
            "sorted, unique"
        );
        assert_eq!(QCOM_IDS.len(), 282);
        // The 8996 variants are their own parts in qcom,ids.h.
        assert_eq!(chip_for_soc_id(246), Some("MSM8996"));
        assert_eq!(chip_for_soc_id(302), Some("MSM8996L"));
        assert_eq!(chip_for_soc_id(305), Some("MSM8996SG"));
        assert_eq!(chip_for_soc_id(310), Some("MSM8996AU"));
        assert_eq!(chip_for_soc_id(312), Some("APQ8096SG"));
        // Second-revision ids give the base chip; Pro bins keep the Pro.
        assert_eq!(chip_for_soc_id(480), Some("SM8450"));
        assert_eq!(chip_for_soc_id(540), Some("SM8475"));
        assert_eq!(chip_for_soc_id(194), Some("MSM8974PRO-AC"));
        assert_eq!(normalize_soc("MSM8974PRO-AC"), "MSM8974PRO");
        assert_eq!(chip_for_soc_id(336), Some("SDM670"));
        assert_eq!(chip_for_soc_id(614), Some("SM8635"));
        assert!(same_chip("MSM8996SG", "MSM8996PRO"));
        // A platform property names the family of a lettered variant.
        assert!(same_chip("MSM8996", "MSM8996SG"));
        assert!(!same_chip("MSM8996", "MSM8998"));
        assert!(!same_chip("MT6768", "MT6769V"));
    }

    #[test]
    fn board_suffixes_leave_the_chip() {
        assert_eq!(
            split_board("tegra210_dragon"),
            ("TEGRA210".to_string(), Some("dragon".to_string()))
        );
        assert_eq!(split_board("MT6789V_CZA"), ("MT6789V".to_string(), None));
        assert_eq!(split_board("sm8650-ab"), ("SM8650".to_string(), None));
        assert_eq!(hardware_chip("MT6769V/CZ").as_deref(), Some("MT6769V"));
    }

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
        // A lettered variant beside its base is not a disagreement (the HTP table still
        // tells them apart: warn_lettered_variant).
        assert!(same_chip("SM8750P", "SM8750"));
        assert_eq!(lettered_variant_base("SM8750"), None);
        assert_eq!(lettered_variant_base("P"), None);
    }
}

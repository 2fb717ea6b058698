//! No input drives the terminal: control characters, C1 controls and bidi overrides put
//! into every kind of input's text fields (a profile's label, a catalog's prose, a
//! manifest's profile path, a model config's fields, a captured tree's `build.prop`)
//! reach neither stdout nor stderr of the human formats; they are shown escaped.

use std::path::Path;

use crate::util::{edgeplan, fixture};

/// What a terminal may act on: C0 but newline and tab, DEL, C1, bidi controls.
fn unsafe_char(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// The hostile text: OSC 52 clipboard write, a screen clear, CSI as C1, a bidi override,
/// and a newline that would forge a line.
const EVIL: &str =
    "ev\u{1b}]52;c;ZXZpbA==\u{7}il\u{1b}[2J\u{9b}31m\u{202e}txt.exe\u{2066}\nedgeplan: all passed";

fn assert_clean(what: &str, out: &std::process::Output) {
    for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let text = String::from_utf8_lossy(bytes);
        let bad: Vec<char> = text.chars().filter(|c| unsafe_char(*c)).collect();
        assert!(bad.is_empty(), "{what}: {stream} carries {bad:?}:\n{text}");
        assert!(
            !text.lines().any(|l| l.starts_with("edgeplan: all passed")),
            "{what}: {stream} has a forged line:\n{text}"
        );
    }
}

fn labelled_profile(dir: &Path) -> std::path::PathBuf {
    let mut profile: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("profiles/x86-spr-amx.json")).unwrap(),
    )
    .unwrap();
    profile["label"] = serde_json::json!(EVIL);
    profile["cpu"]["model_name"] = serde_json::json!(EVIL);
    let file = dir.join("evil.json");
    std::fs::write(&file, profile.to_string()).unwrap();
    file
}

#[test]
fn no_control_character_from_any_input_reaches_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let profile = labelled_profile(dir.path());
    let run = |args: &[&str]| edgeplan().args(args).output().unwrap();
    let p = profile.to_str().unwrap();
    // Profiles: one device's table, a fleet's, and an --expect mismatch on stderr.
    assert_clean(
        "plan table",
        &run(&["plan", "--format", "table", "--profile", p]),
    );
    assert_clean(
        "plan fleet",
        &run(&["plan", "--format", "table", "--profile", p, "--profile", p]),
    );
    let out = run(&[
        "plan",
        "--expect",
        "bf16",
        "--format",
        "table",
        "--profile",
        p,
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_clean("plan --expect", &out);
    // Catalog prose.
    let catalog = dir.path().join("catalog.toml");
    let text = std::fs::read_to_string(fixture("catalogs/cpu-bf16.toml")).unwrap();
    let evil_toml = EVIL
        .replace('\u{1b}', "\\u001b")
        .replace('\u{7}', "\\u0007")
        .replace('\u{9b}', "\\u009b")
        .replace('\n', "\\n");
    std::fs::write(
        &catalog,
        text.replacen(
            "rationale = \"\"\"\\",
            &format!("rationale = \"\"\"{evil_toml} \\"),
            1,
        ),
    )
    .unwrap();
    let c = catalog.to_str().unwrap();
    assert_clean(
        "catalog",
        &run(&[
            "plan",
            "--catalog",
            c,
            "--format",
            "table",
            "--explain",
            "--profile",
            p,
        ]),
    );
    std::fs::write(&catalog, format!("[[path]]\nname = \"{evil_toml}\"\n")).unwrap();
    let out = run(&["plan", "--catalog", c, "--profile", p]);
    assert_eq!(out.status.code(), Some(65));
    assert_clean("bad catalog", &out);
    // A manifest: its profile path and the label in the check table, the failure lines.
    let manifest = dir.path().join("m.toml");
    std::fs::write(
        &manifest,
        format!("[[case]]\nprofile = \"evil.json\"\nexpect = \"bf16\"\n\n[[case]]\nprofile = \"{evil_toml}.json\"\nexpect = \"bf16\"\n"),
    )
    .unwrap();
    let out = run(&["check", manifest.to_str().unwrap()]);
    assert_ne!(out.status.code(), Some(0));
    assert_clean("check", &out);
    // A model config's fields (in the error that names them).
    let config = dir.path().join("config.json");
    std::fs::write(
        &config,
        serde_json::json!({"model_type": EVIL, "hidden_size": 1}).to_string(),
    )
    .unwrap();
    let out = run(&[
        "plan",
        "--profile",
        p,
        "--model",
        config.to_str().unwrap(),
        "--context",
        "4096",
        "--format",
        "table",
    ]);
    assert_clean("model config", &out);
    // A captured tree's build.prop in the probe table.
    let tree = dir.path().join("android");
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(fixture("sysroots/android-sm8650"))
        .arg(&tree)
        .status()
        .unwrap();
    assert!(status.success());
    let prop = tree.join("vendor/build.prop");
    let text = std::fs::read_to_string(&prop).unwrap();
    std::fs::write(
        &prop,
        text.replace(
            "ro.soc.model=SM8650",
            &format!("ro.soc.model={}", EVIL.replace('\n', " ")),
        ),
    )
    .unwrap();
    std::fs::write(
        &prop,
        std::fs::read_to_string(&prop).unwrap().replace(
            "ro.product.vendor.model=SM-S928B",
            &format!("ro.product.vendor.model={}", EVIL.replace('\n', " ")),
        ),
    )
    .unwrap();
    let out = run(&[
        "probe",
        "--format",
        "table",
        "--sysroot",
        tree.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("\\u{1b}"),
        "the model is shown, escaped"
    );
    assert_clean("probe table", &out);
}

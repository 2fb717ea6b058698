//! Issue 27: with stdout not a terminal and no `COLUMNS`, no human output is wider than
//! 80 columns: `plan` for every fixture profile at both priorities and both engines (the
//! one-device table, with a memory fit, with `--explain`), the fleet view, `check`,
//! every `--help`, and a fake `bench` run. `COLUMNS` widens the layout.
//!
//! stderr's `edgeplan: ...` diagnostics are exempt: each is one line by the project's
//! rule (a message a script greps), whatever its length.

use std::path::PathBuf;

use unicode_width::UnicodeWidthStr;

use crate::util::{edgeplan, fixture};

const WIDTH: usize = 80;

/// The lines of `text` wider than `width` terminal columns (wide characters count two).
fn too_wide(text: &str, width: usize) -> Vec<String> {
    text.lines()
        .filter(|l| UnicodeWidthStr::width(*l) > width)
        .map(|l| format!("{} columns: {l}", UnicodeWidthStr::width(l)))
        .collect()
}

/// Panics naming `what` when a line of stdout, or of stderr other than a diagnostic,
/// is wider than [`WIDTH`].
fn assert_fits(what: &str, out: &std::process::Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let wide = too_wide(&stdout, WIDTH);
    assert!(wide.is_empty(), "{what}: stdout:\n{}", wide.join("\n"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let prose: String = stderr
        .lines()
        .filter(|l| !l.starts_with("edgeplan: ") && !l.starts_with("NOT RUN"))
        .map(|l| format!("{l}\n"))
        .collect();
    let wide = too_wide(&prose, WIDTH);
    assert!(wide.is_empty(), "{what}: stderr:\n{}", wide.join("\n"));
}

/// `edgeplan ARGS` from the repository root, stdout a pipe and no `COLUMNS`.
fn run(args: &[&str]) -> std::process::Output {
    let out = edgeplan()
        .env_remove("COLUMNS")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        !out.stdout.is_empty() || !out.stderr.is_empty(),
        "{args:?} printed nothing"
    );
    out
}

fn profiles() -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = ["profiles", "profiles-measured"]
        .iter()
        .flat_map(|d| std::fs::read_dir(fixture(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    all.sort();
    assert!(all.len() >= 20, "{all:?}");
    all
}

#[test]
fn the_width_check_catches_a_wide_line() {
    assert!(too_wide(&"x".repeat(80), WIDTH).is_empty());
    assert_eq!(
        too_wide(&format!("ok\n{}\n", "x".repeat(81)), WIDTH).len(),
        1
    );
    // 41 wide characters are 82 columns though 41 chars.
    assert_eq!(too_wide(&"漢".repeat(41), WIDTH).len(), 1);
    let wide = std::process::Output {
        status: std::process::ExitStatus::default(),
        stdout: format!("| {} |\n", "y".repeat(77)).into_bytes(),
        stderr: Vec::new(),
    };
    let caught = std::panic::catch_unwind(|| assert_fits("a wide table", &wide));
    assert!(caught.is_err(), "an 81-column line must fail the check");
}

#[test]
fn plan_fits_80_columns_for_every_profile_priority_and_engine() {
    for profile in profiles() {
        let p = profile.to_str().unwrap();
        for priority in ["speed", "fidelity"] {
            for engine in ["vllm", "llama.cpp"] {
                let base = [
                    "plan",
                    "--profile",
                    p,
                    "--priority",
                    priority,
                    "--engine",
                    engine,
                ];
                let with = |extra: &[&'static str]| {
                    let mut args = base.to_vec();
                    args.extend_from_slice(extra);
                    args
                };
                for args in [
                    with(&[]),
                    with(&["--model", "qwen3-1.7b", "--context", "8192"]),
                    with(&["--explain"]),
                ] {
                    assert_fits(&args.join(" "), &run(&args));
                }
            }
        }
    }
}

#[test]
fn the_fleet_view_is_one_short_line_per_device() {
    for extra in [
        &[][..],
        &["--model", "qwen3-1.7b", "--context", "8192"],
        &["--explain"],
        &["--engine", "llama.cpp"],
    ] {
        let mut args = vec!["plan", "--profile", "fixtures/profiles"];
        args.extend_from_slice(extra);
        let out = run(&args);
        assert_fits(&args.join(" "), &out);
        // Every device's row is one line: its label, then nothing wrapped under it.
        let text = String::from_utf8(out.stdout).unwrap();
        let row = text
            .lines()
            .find(|l| l.starts_with("| hand-x86-amx-flags-only "))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(row.contains("| x86_cpu ") && row.ends_with('|'), "{row}");
    }
    // With a saved bench run, the measured column comes back.
    let out = run(&[
        "plan",
        "--profile",
        "fixtures/profiles-measured",
        "--profile",
        "fixtures/profiles/x86-epyc-zen4.json",
    ]);
    assert_fits("fleet with measurements", &out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("| measured "));
}

#[test]
fn check_and_every_help_fit_80_columns() {
    assert_fits("check", &run(&["check", "fixtures/expect.toml"]));
    for sub in [
        &[][..],
        &["probe"],
        &["plan"],
        &["check"],
        &["bench"],
        &["schema"],
        &["completions"],
        &["man"],
    ] {
        for help in ["-h", "--help"] {
            let mut args = sub.to_vec();
            args.push(help);
            assert_fits(&args.join(" "), &run(&args));
        }
    }
    // A usage error's text is wrapped too.
    assert_fits("a usage error", &run(&["plan", "--priority", "nope"]));
}

#[test]
fn a_fake_bench_fits_80_columns() {
    let tiny = fixture("bench/tiny-config.json");
    let host = fixture("bench/host-epyc-avx2.json");
    let out = edgeplan()
        .env_remove("COLUMNS")
        .env("EDGEPLAN_BENCH_EXECUTOR", "fake")
        .args(["bench", "--quick", "--model-config"])
        .arg(&tiny)
        .arg("--profile")
        .arg(&host)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_fits("bench --quick (fake)", &out);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("verdict: ") && text.contains("note: "),
        "{text}"
    );
    assert_fits("bench --list-kernels", &run(&["bench", "--list-kernels"]));
}

#[test]
fn columns_widens_the_layout() {
    let args = ["plan", "--profile", "fixtures/profiles"];
    let widest = |columns: Option<&str>| {
        let mut cmd = edgeplan();
        cmd.env_remove("COLUMNS").args(args);
        if let Some(c) = columns {
            cmd.env("COLUMNS", c);
        }
        let out = cmd
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(UnicodeWidthStr::width)
            .max()
            .unwrap()
    };
    assert!(widest(None) <= WIDTH);
    let wide = widest(Some("200"));
    assert!(wide > WIDTH && wide <= 200, "{wide}");
    assert!(widest(Some("50")) <= 50);
}

//! The outside contract from the user's side: usage errors, the version line, and bad
//! input met the way a hostile, careful user would meet it (binary, huge, contradictory
//! or missing files, `--save` over the input, `--dump` into a tree that holds data),
//! each a one-line error naming the input with the documented exit code, never a panic,
//! and never a change to what the user gave.

use crate::util::{edgeplan, fixture};

/// `bench --quick` on the fake executor (no kernel is timed) with the tiny model.
fn fake_bench() -> assert_cmd::Command {
    let mut cmd = edgeplan();
    cmd.env("EDGEPLAN_BENCH_EXECUTOR", "fake")
        .args(["bench", "--quick", "--model-config"])
        .arg(fixture("bench/tiny-config.json"));
    cmd
}

/// The one stderr line of a failed command: it names `input` and is not a panic.
fn one_line_naming(stderr: &[u8], input: &str) -> String {
    let text = String::from_utf8_lossy(stderr).into_owned();
    assert_eq!(text.lines().count(), 1, "not one line: {text}");
    assert!(text.starts_with("edgeplan: "), "{text}");
    assert!(text.contains(input), "does not name {input}: {text}");
    assert!(!text.contains("panicked"), "{text}");
    text
}

#[test]
fn unknown_subcommand_is_usage_error_2() {
    edgeplan().arg("frobnicate").assert().code(2);
}

#[test]
fn version_prints() {
    edgeplan()
        .arg("--version")
        .assert()
        .success()
        .stdout(predicates::str::contains("edgeplan"));
}

#[test]
fn a_negative_headroom_is_a_value_not_a_flag() {
    edgeplan()
        .args(["plan", "--profile"])
        .arg(crate::util::fixture("profiles/hand-x86-amx-usable.json"))
        .args([
            "--model",
            "qwen3-1.7b",
            "--context",
            "4096",
            "--headroom",
            "-1",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "--headroom -1 must be a fraction",
        ));
}

#[test]
fn completions_and_man_page_name_every_subcommand() {
    for shell in ["bash", "zsh", "fish"] {
        let out = edgeplan().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8(out.stdout).unwrap();
        for sub in ["probe", "plan", "check", "bench", "schema"] {
            assert!(text.contains(sub), "{shell} completions lack {sub}");
        }
    }
    let out = edgeplan().arg("man").output().unwrap();
    assert!(out.status.success());
    let man = String::from_utf8(out.stdout).unwrap();
    assert!(
        man.starts_with(".ie") || man.starts_with(".TH"),
        "{}",
        &man[..40]
    );
    assert!(man.contains(".SH \"EDGEPLAN PLAN\""));
    assert!(man.contains("\\-\\-priority"));
    edgeplan().args(["completions", "tcsh"]).assert().code(2);
}

/// The man page is one page: every subcommand is a section of it, so it names no
/// `edgeplan-NAME(1)` page (none is installed); it has EXIT STATUS with README.md's
/// codes, and EXAMPLES taken from README.md's examples (which tests/snippets.rs runs).
#[test]
fn the_man_page_has_exit_status_and_examples_and_names_no_missing_page() {
    let out = edgeplan().arg("man").output().unwrap();
    assert!(out.status.success());
    let man = String::from_utf8(out.stdout).unwrap();
    for section in [".SH \"EXIT STATUS\"", ".SH EXAMPLES", ".SH COMMANDS"] {
        assert!(man.contains(section), "{section} missing");
    }
    for (i, _) in man.match_indices("(1)") {
        let before = &man[man[..i].rfind(char::is_whitespace).map_or(0, |s| s + 1)..i];
        assert!(
            before.ends_with("edgeplan"),
            "the man page names a page that is not installed: {before}(1)"
        );
    }
    // The codes under EXIT STATUS, in order, are the README's table's.
    let status = &man[man.find(".SH \"EXIT STATUS\"").unwrap()..];
    let status = &status[..status[1..].find("\n.SH ").unwrap()];
    let man_codes: Vec<String> = status
        .lines()
        .filter_map(|l| l.strip_prefix("\\fB")?.strip_suffix("\\fR"))
        .map(str::to_string)
        .collect();
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let table = &readme[readme.find("## Exit codes").unwrap()..];
    let readme_codes: Vec<String> = table
        .lines()
        .skip_while(|l| !l.starts_with("| ---"))
        .skip(1)
        .take_while(|l| l.starts_with("| "))
        .map(|l| l.split('|').nth(1).unwrap().trim().to_string())
        .collect();
    assert_eq!(man_codes, readme_codes);
    assert_eq!(readme_codes.join(" "), "0 1 2 3 65 66 69 70 74 75");
    // Every example is one of the README's (roff escapes undone).
    let examples = &man[man.find(".SH EXAMPLES").unwrap()..];
    let readme = readme.replace("cargo run --release -- ", "edgeplan ");
    let mut count = 0;
    for line in examples.lines().filter(|l| l.starts_with("edgeplan ")) {
        let line = line.replace("\\-", "-").replace("\\e", "\\");
        assert!(
            readme.lines().any(|l| l.trim() == line),
            "not in README.md: {line}"
        );
        count += 1;
    }
    assert!(count >= 4, "{examples}");
}

#[test]
fn the_bash_completion_script_loads_in_bash() {
    let out = edgeplan().args(["completions", "bash"]).output().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("edgeplan.bash");
    std::fs::write(&file, out.stdout).unwrap();
    let status = std::process::Command::new("bash")
        .arg("-c")
        .arg("source \"$1\" && complete -p edgeplan")
        .arg("bash")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
}

#[test]
fn a_binary_profile_or_model_config_is_bad_data_65_not_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("binary.json");
    std::fs::write(&binary, [0x7b, 0xff, 0xfe, 0x00, 0x80]).unwrap();
    let out = fake_bench().arg("--profile").arg(&binary).output().unwrap();
    assert_eq!(out.status.code(), Some(65));
    assert!(out.stdout.is_empty());
    let line = one_line_naming(&out.stderr, "binary.json");
    assert!(line.contains("not UTF-8"), "{line}");
    let out = edgeplan()
        .args(["plan", "--format", "json", "--context", "4096", "--model"])
        .arg(&binary)
        .arg("--profile")
        .arg(fixture("profiles/x86-spr-amx.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(65));
    one_line_naming(&out.stderr, "binary.json");
}

#[test]
fn bench_refuses_a_profile_plan_refuses() {
    // x86_cpu on aarch64: plan says 65; bench used to time kernels against it.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("profiles/x86-spr-amx.json")).unwrap();
    let contradictory = dir.path().join("contradictory.json");
    std::fs::write(
        &contradictory,
        text.replace("\"arch\": \"x86_64\"", "\"arch\": \"aarch64\""),
    )
    .unwrap();
    edgeplan()
        .args(["plan", "--profile"])
        .arg(&contradictory)
        .assert()
        .code(65);
    let out = fake_bench()
        .arg("--profile")
        .arg(&contradictory)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(65));
    assert!(out.stdout.is_empty());
    let line = one_line_naming(&out.stderr, "contradictory.json");
    assert!(line.contains("contradicts arch aarch64"), "{line}");
    // Empty stdin reads as plan says it.
    let out = fake_bench().args(["--profile", "-"]).output().unwrap();
    assert_eq!(out.status.code(), Some(65));
    let line = one_line_naming(&out.stderr, "stdin");
    assert!(line.contains("empty input"), "{line}");
}

#[test]
fn an_oversized_profile_or_model_config_is_refused_before_it_is_read_whole() {
    // A sparse file past the 64 MiB cap (no disk used): refused by size, as plan's
    // reader does, instead of read whole (as /dev/zero would be, until the host kills it).
    let dir = tempfile::tempdir().unwrap();
    let huge = dir.path().join("huge.json");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len((64 << 20) + 1)
        .unwrap();
    let out = fake_bench().arg("--profile").arg(&huge).output().unwrap();
    assert_eq!(out.status.code(), Some(65));
    let line = one_line_naming(&out.stderr, "huge.json");
    assert!(line.contains("more than 64 MiB"), "{line}");
    let out = edgeplan()
        .args(["plan", "--context", "4096", "--model"])
        .arg(&huge)
        .arg("--profile")
        .arg(fixture("profiles/x86-spr-amx.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(65));
    let line = one_line_naming(&out.stderr, "huge.json");
    assert!(line.contains("more than 16 MiB"), "{line}");
}

#[test]
fn bench_save_over_its_input_keeps_every_field_it_does_not_know() {
    let dir = tempfile::tempdir().unwrap();
    let mut profile: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("bench/host-epyc-avx2.json")).unwrap(),
    )
    .unwrap();
    // A newer 1.x edgeplan's fields, at the top and inside a known object.
    profile["fleet_tags"] = serde_json::json!({"rack": "b7", "owner": "ops"});
    profile["cpu"]["microcode"] = serde_json::json!("0xa201016");
    let path = dir.path().join("host.json");
    std::fs::write(&path, serde_json::to_string_pretty(&profile).unwrap()).unwrap();
    let out = fake_bench()
        .arg("--profile")
        .arg(&path)
        .arg("--save")
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("updated in place"), "{stderr}");
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(saved["fleet_tags"], profile["fleet_tags"]);
    assert_eq!(saved["cpu"]["microcode"], "0xa201016");
    assert_eq!(saved["cpu"]["model_name"], profile["cpu"]["model_name"]);
    assert!(saved["measurements"]["bench"]["results"].is_array());
    // Nothing but the profile is left in the directory (no temporary file).
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("host.json")]);
    // It still plans, with its measurements.
    edgeplan()
        .args(["plan", "--format", "json", "--profile"])
        .arg(&path)
        .assert()
        .success()
        .stdout(predicates::str::contains("\"measured\": {"));
}

#[test]
fn bench_save_that_cannot_be_written_leaves_everything_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("host.json");
    std::fs::copy(fixture("bench/host-epyc-avx2.json"), &input).unwrap();
    let before = std::fs::read(&input).unwrap();
    for save in [
        dir.path().join("missing/dir/out.json"),
        dir.path().to_path_buf(),
    ] {
        let out = fake_bench()
            .arg("--profile")
            .arg(&input)
            .arg("--save")
            .arg(&save)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(74), "{}", save.display());
        assert!(out.stdout.is_empty(), "no run is spent before the check");
        one_line_naming(&out.stderr, "--save");
    }
    assert_eq!(std::fs::read(&input).unwrap(), before);
    assert!(!dir.path().join("missing").exists());
    // A read-only file is not replaced (the atomic rename would manage it, even
    // without root).
    let mut mode = std::fs::metadata(&input).unwrap().permissions();
    mode.set_readonly(true);
    std::fs::set_permissions(&input, mode).unwrap();
    let out = fake_bench()
        .arg("--profile")
        .arg(&input)
        .arg("--save")
        .arg(&input)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(74));
    let line = one_line_naming(&out.stderr, "read-only");
    assert!(line.contains("--save"), "{line}");
    assert_eq!(std::fs::read(&input).unwrap(), before);
}

#[test]
fn probe_dump_never_writes_into_a_directory_that_holds_files() {
    // Dumping into the tree being read used to rewrite it file by file (with redacted
    // copies) until it failed half-way; any non-empty directory is refused up front.
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    let cpuinfo = std::fs::read(fixture("sysroots/arm64-rpi5/proc/cpuinfo")).unwrap();
    std::fs::create_dir_all(tree.join("proc")).unwrap();
    std::fs::write(tree.join("proc/cpuinfo"), &cpuinfo).unwrap();
    let keep = dir.path().join("notes");
    std::fs::create_dir_all(&keep).unwrap();
    std::fs::write(keep.join("proc"), b"mine").unwrap();
    for target in [&tree, &keep] {
        let out = edgeplan()
            .args(["probe", "--format", "json", "--sysroot"])
            .arg(&tree)
            .arg("--dump")
            .arg(target)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(74));
        assert!(out.stdout.is_empty());
        let line = one_line_naming(&out.stderr, "--dump");
        assert!(line.contains("not empty"), "{line}");
    }
    assert_eq!(std::fs::read(tree.join("proc/cpuinfo")).unwrap(), cpuinfo);
    assert_eq!(std::fs::read(keep.join("proc")).unwrap(), b"mine");
    assert_eq!(std::fs::read_dir(&tree).unwrap().count(), 1);
    // A new or empty directory is fine.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for target in [empty, dir.path().join("new/deeper")] {
        edgeplan()
            .args(["probe", "--format", "json", "--sysroot"])
            .arg(&tree)
            .arg("--dump")
            .arg(&target)
            .assert()
            .success();
        assert!(target.join("proc/cpuinfo").exists());
    }
}

#[test]
fn a_failed_write_to_stdout_names_stdout_and_is_74() {
    // /dev/full: every write fails with ENOSPC. The error used to read "edgeplan: No
    // space left on device (os error 28)", naming nothing.
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return; // not Linux
    };
    let profile = fixture("profiles/x86-spr-amx.json");
    let sysroot = fixture("sysroots/x86-spr-amx");
    let manifest = fixture("expect.toml");
    let cases: Vec<Vec<&std::ffi::OsStr>> = vec![
        vec!["plan".as_ref(), "--profile".as_ref(), profile.as_os_str()],
        vec![
            "plan".as_ref(),
            "--format".as_ref(),
            "json".as_ref(),
            "--profile".as_ref(),
            profile.as_os_str(),
        ],
        vec!["probe".as_ref(), "--sysroot".as_ref(), sysroot.as_os_str()],
        vec!["check".as_ref(), manifest.as_os_str()],
        vec!["schema".as_ref(), "plan".as_ref()],
    ];
    for args in cases {
        let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("edgeplan"))
            .args(&args)
            .stdout(full.try_clone().unwrap())
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(74), "{args:?}");
        let line = one_line_naming(&out.stderr, "stdout: cannot write");
        assert!(line.contains("No space left"), "{args:?}: {line}");
    }
}

#[test]
fn a_reader_that_stops_early_is_not_an_error() {
    // `edgeplan plan ... | head -1`: the output (200 KB) is larger than a pipe holds, so
    // the writer meets the closed pipe whenever the reader goes; that is exit 0, silent.
    let dir = fixture("profiles");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("edgeplan"))
        .args(["plan", "--format", "jsonl"])
        .args(["--profile", dir.to_str().unwrap()].repeat(3))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 1];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn stdin_named_twice_and_a_negative_budget_are_usage_errors_naming_the_flag() {
    let profile = std::fs::read(fixture("profiles/x86-spr-amx.json")).unwrap();
    // The second `-` used to find stdin drained: a plan on stdout, then exit 65.
    let out = edgeplan()
        .args(["plan", "--profile", "-", "--profile", "-"])
        .write_stdin(profile)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    one_line_naming(&out.stderr, "--profile - is given 2 times");
    // `--budget -1` was clap's "unexpected argument '-1' found" (the value taken for a
    // flag); the bench's own range check now answers.
    let out = fake_bench().args(["--budget", "-1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    one_line_naming(&out.stderr, "--budget -1");
}

#[test]
fn too_many_sequences_is_told_how_many_fit_not_that_no_kv_fits() {
    // 100000 sequences of 4096 tokens on a 220 GiB budget: the KV cache has room for
    // hundreds of sequences, but the advice used to say "not one token of KV cache
    // fits next to the weights".
    let out = edgeplan()
        .args(["plan", "--format", "json", "--model", "qwen3-1.7b"])
        .args(["--context", "4096", "--concurrency", "100000", "--profile"])
        .arg(fixture("profiles/x86-spr-amx.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let most = plan["memory"]["max_concurrency"].as_u64().unwrap();
    assert!(most > 1, "{}", plan["memory"]);
    let line = one_line_naming(&out.stderr, "x86-spr-amx");
    assert!(
        line.contains(&format!("what fits: --concurrency {most} at 4096 tokens")),
        "{line}"
    );
    assert!(!line.contains("not one token"), "{line}");
}

#[test]
fn dash_is_no_file_name_for_save_or_dump() {
    // `bench --save -` wrote a file named `-` in the working directory.
    let dir = tempfile::tempdir().unwrap();
    let out = fake_bench()
        .arg("--profile")
        .arg(fixture("bench/host-epyc-avx2.json"))
        .args(["--save", "-"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    one_line_naming(&out.stderr, "--save -");
    let out = edgeplan()
        .args(["probe", "--format", "json", "--sysroot"])
        .arg(fixture("sysroots/arm64-rpi5"))
        .args(["--dump", "-"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    one_line_naming(&out.stderr, "--dump -");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_directory_where_a_file_belongs_is_66_naming_it() {
    // Was 74 "cannot read: Is a directory (os error 21)", an I/O failure; it is a
    // missing input file, as `--sysroot FILE` is 66 the other way round.
    let dir = tempfile::tempdir().unwrap();
    let profile = fixture("profiles/x86-spr-amx.json");
    let runs: Vec<assert_cmd::Command> = vec![
        {
            let mut c = edgeplan();
            c.args(["plan", "--catalog"])
                .arg(dir.path())
                .arg("--profile")
                .arg(&profile);
            c
        },
        {
            let mut c = fake_bench();
            c.arg("--profile").arg(dir.path());
            c
        },
        {
            let mut c = edgeplan();
            c.arg("check").arg(dir.path());
            c
        },
    ];
    for mut cmd in runs {
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(66), "{cmd:?}");
        let line = one_line_naming(&out.stderr, &dir.path().display().to_string());
        assert!(line.contains("is a directory"), "{line}");
    }
}

#[test]
fn a_model_directory_stands_for_its_config_json() {
    // A downloaded Hugging Face snapshot is a directory; --model reads its config.json,
    // and a directory without one is 66 naming the directory.
    let dir = tempfile::tempdir().unwrap();
    let profile = fixture("profiles/x86-spr-amx.json");
    let plan = |model: &std::path::Path| {
        edgeplan()
            .args(["plan", "--format", "json", "--context", "4096", "--model"])
            .arg(model)
            .arg("--profile")
            .arg(&profile)
            .output()
            .unwrap()
    };
    let out = plan(dir.path());
    assert_eq!(out.status.code(), Some(66));
    let line = one_line_naming(&out.stderr, &dir.path().display().to_string());
    assert!(line.contains("without a config.json"), "{line}");
    let config = fixture("models/real-full/qwen3-4b.json");
    std::fs::copy(&config, dir.path().join("config.json")).unwrap();
    let from_dir = plan(dir.path());
    let from_file = plan(&config);
    assert_eq!(from_dir.status.code(), Some(0), "{from_dir:?}");
    let memory = |out: &std::process::Output| {
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["memory"]["weights_bytes"].clone()
    };
    assert!(!memory(&from_dir).is_null());
    assert_eq!(memory(&from_dir), memory(&from_file));
}

#[test]
fn a_label_with_newlines_cannot_put_a_command_into_the_build_script() {
    // The label went into the script's header comment as is: "rack1\ntouch X" ended the
    // comment and ran `touch X` when the script ran.
    let dir = tempfile::tempdir().unwrap();
    let mut profile: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("profiles/x86-spr-amx.json")).unwrap(),
    )
    .unwrap();
    profile["label"] = serde_json::json!("rack1\ntouch INJECTED\r\n# ");
    let file = dir.path().join("labelled.json");
    std::fs::write(&file, profile.to_string()).unwrap();
    let out = edgeplan()
        .args(["plan", "--format", "script", "--profile"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let script = String::from_utf8(out.stdout).unwrap();
    assert!(
        script.lines().all(|l| !l.starts_with("touch")),
        "{}",
        &script[..300]
    );
    assert!(
        script.contains("for rack1 touch INJECTED"),
        "{}",
        &script[..300]
    );
    // Run it: it stops at its own argument check, and nothing was injected.
    let run = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(!run.status.success());
    assert!(!dir.path().join("INJECTED").exists());
}

#[test]
fn a_class_without_its_evidence_or_a_usable_feature_the_cpu_lacks_is_65() {
    // Each was planned as if the hardware were there: a GPU plan with no GPU, the NPU
    // export for an x86 server, W4A8-AMX on a CPU whose profile says it has no AMX.
    let dir = tempfile::tempdir().unwrap();
    let edit = |fixture_name: &str, name: &str, f: &dyn Fn(&mut serde_json::Value)| {
        let mut p: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(fixture(&format!("profiles/{fixture_name}.json"))).unwrap(),
        )
        .unwrap();
        f(&mut p);
        let path = dir.path().join(format!("{name}.json"));
        std::fs::write(&path, p.to_string()).unwrap();
        path
    };
    let cases = [
        (
            edit("x86-h100-server", "no-gpu", &|p| {
                p["gpus"] = serde_json::json!([])
            }),
            "no NVIDIA GPU in gpus",
        ),
        (
            edit("jetson-orin-agx", "no-jetson", &|p| {
                p["jetson"] = serde_json::Value::Null
            }),
            "jetson is null",
        ),
        (
            edit("x86-spr-amx", "x86-phone", &|p| {
                p["hardware_class"] = "npu_phone".into()
            }),
            "android.npu is null",
        ),
        (
            edit("x86-spr-amx", "amx-not-cpu", &|p| {
                p["cpu"]["features"]["amx_int8"] =
                    serde_json::json!({"cpu": false, "os": null, "usable": true})
            }),
            "cpu.features.amx_int8 is usable but",
        ),
    ];
    for (path, why) in cases {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let out = edgeplan()
            .args(["plan", "--format", "env", "--profile"])
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(65), "{name}");
        assert!(out.stdout.is_empty(), "{name}");
        let line = one_line_naming(&out.stderr, &name);
        assert!(line.contains(why), "{line}");
        fake_bench().arg("--profile").arg(&path).assert().code(65);
    }
}

#[test]
fn two_pretty_profiles_in_one_file_are_told_about_json_lines() {
    // `cat a.json b.json > fleet.json` said only "trailing characters at line 351".
    let dir = tempfile::tempdir().unwrap();
    let mut text = std::fs::read_to_string(fixture("profiles/x86-spr-amx.json")).unwrap();
    text.push_str(&std::fs::read_to_string(fixture("profiles/arm64-rpi5.json")).unwrap());
    let file = dir.path().join("fleet.json");
    std::fs::write(&file, text).unwrap();
    let out = edgeplan()
        .args(["plan", "--profile"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(65));
    let line = one_line_naming(&out.stderr, "fleet.json");
    assert!(line.contains("one per line, as JSON Lines"), "{line}");
}

#[test]
fn a_profile_with_a_utf8_byte_order_mark_reads_as_without() {
    // Saved by a Windows editor: was "not valid JSON: expected value at line 1 column 1".
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend(std::fs::read(fixture("profiles/x86-spr-amx.json")).unwrap());
    let file = dir.path().join("bom.json");
    std::fs::write(&file, bytes).unwrap();
    edgeplan()
        .args(["plan", "--format", "args", "--profile"])
        .arg(&file)
        .assert()
        .success()
        .stdout("--dtype bfloat16 --kv-cache-memory-bytes 59055800320 --quantization gptq\n");
    fake_bench().arg("--profile").arg(&file).assert().success();
}

#[test]
fn a_newline_in_a_label_or_a_file_name_keeps_each_diagnostic_on_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut profile: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("profiles/x86-spr-amx.json")).unwrap(),
    )
    .unwrap();
    profile["label"] = serde_json::json!("rack1\nedgeplan: all good");
    let file = dir.path().join("labelled.json");
    std::fs::write(&file, profile.to_string()).unwrap();
    let out = edgeplan()
        .args(["plan", "--expect", "bf16", "--profile"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    // The newline is shown escaped, inside the one line.
    one_line_naming(&out.stderr, r"rack1\nedgeplan: all good");
    let out = edgeplan()
        .args(["plan", "--profile"])
        .arg(dir.path().join("missing\nfile.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(66));
    one_line_naming(&out.stderr, r"missing\nfile.json");
}

#[test]
fn a_check_case_with_an_empty_profile_path_is_bad_data_not_a_pass() {
    // `profile = ""` joined to the manifest's directory planned the profiles lying next
    // to the manifest, and the case passed.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture("profiles/x86-spr-amx.json"),
        dir.path().join("x86-spr-amx.json"),
    )
    .unwrap();
    let manifest = dir.path().join("expect.toml");
    std::fs::write(
        &manifest,
        "[[case]]\nprofile = \"\"\npriority = \"speed\"\nexpect = \"w4a8-amx\"\n",
    )
    .unwrap();
    let out = edgeplan().arg("check").arg(&manifest).output().unwrap();
    assert_eq!(out.status.code(), Some(65));
    assert!(out.stdout.is_empty());
    let line = one_line_naming(&out.stderr, "expect.toml:1");
    assert!(line.contains("profile is empty"), "{line}");
}

#[test]
fn a_check_case_lists_a_json_lines_files_rows_in_line_order() {
    // The ERROR row of a bad line came before every good line's row, whatever its line.
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(fixture("profiles/x86-spr-amx.json")).unwrap();
    let good: serde_json::Value = serde_json::from_str(&good).unwrap();
    let good = serde_json::to_string(&good).unwrap();
    std::fs::write(
        dir.path().join("fleet.jsonl"),
        format!("{good}\n{{\"schema_version\": 1}}\n{good}\n"),
    )
    .unwrap();
    let manifest = dir.path().join("expect.toml");
    std::fs::write(
        &manifest,
        "[[case]]\nprofile = \"fleet.jsonl\"\npriority = \"speed\"\nexpect = \"w4a8-amx\"\n",
    )
    .unwrap();
    let out = edgeplan().arg("check").arg(&manifest).output().unwrap();
    assert_eq!(out.status.code(), Some(65));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let results: Vec<&str> = stdout
        .lines()
        .filter_map(|l| {
            ["pass", "FAIL", "ERROR"]
                .into_iter()
                .find(|r| l.contains(&format!("| {r}")))
        })
        .collect();
    assert_eq!(results, ["pass", "ERROR", "pass"], "{stdout}");
}

/// Issue 28's exit codes: a cpuinfo that cannot be read is 74 naming the permission
/// error (not 65 "cannot tell the architecture"); a link-loop sysroot does not exist
/// (66); a NUL in a manifest's profile path is bad data (65).
#[test]
fn unreadable_cpuinfo_link_loops_and_nul_paths_get_their_documented_codes() {
    let dir = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(tree.join("proc")).unwrap();
    std::fs::write(tree.join("proc/cpuinfo"), "vendor_id\t: GenuineIntel\n").unwrap();
    std::fs::set_permissions(
        tree.join("proc/cpuinfo"),
        std::fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    // Root reads any file: the probe runs as nobody there (setpriv, util-linux), from a
    // copy of the binary nobody can reach (the checkout may sit below a 0700 home).
    let mut cmd = if unsafe_is_root() {
        let bin = dir.path().join("edgeplan");
        std::fs::copy(assert_cmd::cargo::cargo_bin("edgeplan"), &bin).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut c = assert_cmd::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin);
        c
    } else {
        edgeplan()
    };
    let out = cmd
        .args(["probe", "--format", "json", "--sysroot"])
        .arg(&tree)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(74), "{out:?}");
    one_line_naming(&out.stderr, "Permission denied");
    let looped = dir.path().join("loop");
    std::os::unix::fs::symlink(&looped, &looped).unwrap();
    let out = edgeplan()
        .args(["probe", "--sysroot"])
        .arg(&looped)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(66));
    one_line_naming(&out.stderr, "loop");
    let manifest = dir.path().join("m.toml");
    std::fs::write(
        &manifest,
        "[[case]]\nprofile = \"a\\u0000b.json\"\nexpect = \"bf16\"\n",
    )
    .unwrap();
    let out = edgeplan().arg("check").arg(&manifest).output().unwrap();
    assert_eq!(out.status.code(), Some(65));
    one_line_naming(&out.stderr, "NUL");
}

fn unsafe_is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A fleet directory reports what it cannot read as a profile (a dangling link: 66; a
/// FIFO or a `*.JSON`: 65) on stderr, plans the rest, and exits with the first error's
/// code; main skipped them silently and exited 0.
#[test]
fn a_fleet_directory_reports_links_fifos_and_odd_case_names() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(fixture("profiles/x86-spr-amx.json"), d.join("good.json")).unwrap();
    std::os::unix::fs::symlink(d.join("gone.json"), d.join("dangling.json")).unwrap();
    let fifo = std::ffi::CString::new(d.join("pipe.json").to_str().unwrap()).unwrap();
    // SAFETY: `fifo` is a valid NUL-terminated path that lives across the call.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    std::fs::copy(fixture("profiles/x86-spr-amx.json"), d.join("LOUD.JSON")).unwrap();
    let out = edgeplan()
        .args(["plan", "--format", "jsonl", "--profile"])
        .arg(d)
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    for name in ["dangling.json", "pipe.json", "LOUD.JSON"] {
        assert!(stderr.contains(name), "{name} not reported: {stderr}");
    }
    assert!(
        stderr.contains("dangling link")
            && stderr.contains("FIFO")
            && stderr.contains("lower case")
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("w4a8-amx"),
        "the good profile is planned: {stdout}"
    );
    // LOUD.JSON sorts first: 65.
    assert_eq!(out.status.code(), Some(65), "{stderr}");
}

/// `--catalog /dev/zero`, `check /dev/zero` and a never-ending pipe read until memory ran
/// out on main: each is now one line naming the input, 65, at once.
#[test]
fn endless_inputs_are_bad_data_at_once() {
    let profile = fixture("profiles/x86-spr-amx.json");
    let run = |cmd: &mut assert_cmd::Command| {
        cmd.timeout(std::time::Duration::from_secs(20))
            .output()
            .unwrap()
    };
    let out = run(edgeplan()
        .args(["plan", "--catalog", "/dev/zero", "--profile"])
        .arg(&profile));
    assert_eq!(out.status.code(), Some(65), "{out:?}");
    one_line_naming(&out.stderr, "/dev/zero");
    let out = run(edgeplan().args(["check", "/dev/zero"]));
    assert_eq!(out.status.code(), Some(65), "{out:?}");
    one_line_naming(&out.stderr, "/dev/zero");
    // `--catalog <(yes)`: a pipe that never ends, through /dev/fd.
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "exec timeout 20 {} plan --catalog <(yes) --profile {}",
            assert_cmd::cargo::cargo_bin("edgeplan").display(),
            profile.display()
        ))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(65), "{out:?}");
    one_line_naming(&out.stderr, "/dev/fd/");
}

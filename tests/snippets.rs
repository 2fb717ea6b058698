//! Every `bash` block of README.md and docs/*.md runs under `bash -euo pipefail`, once
//! with a good profile and once with a bad one: the good one reaches the engine's serve
//! command (stubs of `vllm` and of `python3 -m vllm...` that record their arguments and
//! the engine env), the bad one stops the script before it.

use std::path::{Path, PathBuf};

use crate::util::fixture;

/// The `bash` blocks of one Markdown file.
fn bash_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```bash") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

/// Every bash block of README.md and docs/, with the file it came from.
pub fn documented_snippets() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs: Vec<PathBuf> = vec![root.join("README.md")];
    let mut more: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    more.sort();
    docs.extend(more);
    let mut out = Vec::new();
    for doc in docs {
        let text = std::fs::read_to_string(&doc).unwrap();
        for block in bash_blocks(&text) {
            out.push((
                doc.file_name().unwrap().to_string_lossy().into_owned(),
                block,
            ));
        }
    }
    out
}

/// A directory with `edgeplan` (the built binary), a `vllm` stub and a `python3` stub
/// (for `python3 -m vllm...`; anything else goes to the real python3) that record their
/// command line and `VLLM_CPU_INT4_W4A8` in `$VLLM_LOG`.
pub fn stub_bin(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    if bin.join("vllm").exists() {
        return bin;
    }
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(
        assert_cmd::cargo::cargo_bin("edgeplan"),
        bin.join("edgeplan"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    let record = "printf '%s W4A8=%s\\n' \"$*\" \"${VLLM_CPU_INT4_W4A8:-unset}\" >> \"$VLLM_LOG\"";
    let stub = bin.join("vllm");
    std::fs::write(
        &stub,
        format!("#!/bin/sh\n{}\n", record.replace("'%s", "'vllm %s")),
    )
    .unwrap();
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    let server = bin.join("llama-server");
    std::fs::write(
        &server,
        format!("#!/bin/sh\n{}\n", record.replace("'%s", "'llama-server %s")),
    )
    .unwrap();
    std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
    let real = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v python3"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let py = bin.join("python3");
    std::fs::write(
        &py,
        format!(
            "#!/bin/sh\ncase \"$1 $2\" in \"-m vllm\"*) {} ; exit 0 ;; esac\nexec {} \"$@\"\n",
            record.replace("'%s", "'python3 %s"),
            real.trim()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&py, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// Runs `script` under `bash -euo pipefail` with `PROFILE` set; returns (exit code, the
/// vllm command lines it ran, stderr).
fn run_snippet(script: &str, profile: &Path) -> (Option<i32>, Option<String>, String) {
    let dir = tempfile::tempdir().unwrap();
    let bin = stub_bin(dir.path());
    let log = dir.path().join("vllm.log");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new("bash")
        .args(["-euo", "pipefail", "-c", script])
        .env("PATH", path)
        .env("PROFILE", profile)
        .env("VLLM_LOG", &log)
        .current_dir(dir.path())
        .output()
        .unwrap();
    (
        out.status.code(),
        std::fs::read_to_string(&log).ok(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_documented_bash_snippet_serves_on_a_good_profile_and_stops_on_a_bad_one() {
    let snippets = documented_snippets();
    assert!(
        snippets.len() >= 3,
        "expected the README and docs deploy snippets"
    );
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"schema_version": 1}"#).unwrap();
    let missing = dir.path().join("missing.json");
    for (doc, script) in &snippets {
        let good = fixture("profiles/hand-x86-amx-usable.json");
        let (code, vllm, stderr) = run_snippet(script, &good);
        assert_eq!(
            code,
            Some(0),
            "{doc}: good profile failed:\n{script}\n{stderr}"
        );
        let vllm = vllm.unwrap_or_else(|| panic!("{doc}: the engine never ran:\n{script}"));
        if script.contains("--engine llama.cpp") {
            // llama-server with the GGUF file and the plan's context, threads and CPUs.
            assert!(
                vllm.starts_with("llama-server --model ./model.gguf "),
                "{doc}: {vllm}"
            );
            for flag in ["--ctx-size 4096", "--threads 24", "--flash-attn on"] {
                assert!(vllm.contains(flag), "{doc}: {flag} missing: {vllm}");
            }
        } else {
            check_vllm_line(doc, &vllm);
        }
        for profile in [&bad, &missing] {
            let (code, vllm, stderr) = run_snippet(script, profile);
            assert_ne!(
                code,
                Some(0),
                "{doc}: a bad profile did not stop:\n{script}"
            );
            assert!(
                vllm.is_none(),
                "{doc}: the engine ran on a bad profile: {vllm:?}"
            );
            assert!(stderr.contains("edgeplan: "), "{doc}: {stderr}");
        }
    }
}

/// The good profile is an x86 CPU with AMX: vllm-cpu's server module, with the plan's
/// W4A8 switch in its environment.
fn check_vllm_line(doc: &str, vllm: &str) {
    assert!(
        vllm.starts_with("python3 -m vllm.entrypoints.openai.api_server --model "),
        "{doc}: {vllm}"
    );
    assert!(vllm.contains("--quantization gptq"), "{doc}: {vllm}");
    assert!(
        vllm.trim_end().ends_with(" W4A8=1") || vllm.trim_end().ends_with(" W4A8=0"),
        "{doc}: {vllm}"
    );
}

#[test]
fn env_and_args_print_nothing_on_failure_or_when_the_model_does_not_fit() {
    use crate::util::edgeplan;
    for format in ["env", "args"] {
        // Does not fit: a 70B-class context on a 16 GiB container.
        edgeplan()
            .args([
                "plan",
                "--format",
                format,
                "--model",
                "qwen3-1.7b",
                "--context",
            ])
            .arg("100000000")
            .arg("--profile")
            .arg(fixture("profiles/x86-container-cgroup2.json"))
            .assert()
            .code(3)
            .stdout("");
        edgeplan()
            .args(["plan", "--format", format, "--expect", "bf16", "--profile"])
            .arg(fixture("profiles/hand-x86-amx-usable.json"))
            .assert()
            .code(1)
            .stdout("");
        edgeplan()
            .args([
                "plan",
                "--format",
                format,
                "--profile",
                "/nonexistent/p.json",
            ])
            .assert()
            .code(66)
            .stdout("");
    }
}

/// The `sh` blocks' command lines: every line that runs edgeplan (`cargo run --release
/// --` is edgeplan built from this checkout), from the docs whose `sh` blocks are not run
/// elsewhere (docs/integrations.md's are, by tests/integrations.rs; docs/performance.md's
/// time the full bench, which tests never run).
fn sh_example_lines() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for doc in [
        "README.md",
        "docs/weight-paths.md",
        "docs/memory.md",
        "docs/llama-cpp.md",
        "docs/quickstart.md",
    ] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        let mut in_sh = false;
        for line in text.lines() {
            if line.starts_with("```") {
                in_sh = line.trim_end() == "```sh";
                continue;
            }
            // A trailing `  # comment` is the doc's, not the command's.
            let line = line.split("  # ").next().unwrap().trim_end();
            let line = line.replace("cargo run --release -- ", "edgeplan ");
            if in_sh && (line.starts_with("edgeplan ") || line.contains("&& edgeplan ")) {
                out.push((doc.to_string(), line));
            }
        }
    }
    out
}

/// The exit code a doc gives for its example (0 unless listed): docs/memory.md says a
/// fleet in which any device does not fit exits 3.
fn documented_exit(line: &str) -> i32 {
    if line == "edgeplan plan --profile fixtures/profiles --model qwen3-1.7b --context 32768" {
        3
    } else {
        0
    }
}

#[test]
fn every_edgeplan_line_of_the_sh_examples_runs_as_written_on_a_fresh_account() {
    let lines = sh_example_lines();
    assert!(lines.len() >= 10, "{lines:?}");
    let dir = tempfile::tempdir().unwrap();
    let bin = stub_bin(dir.path());
    let work = dir.path().join("work");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::os::unix::fs::symlink(fixture(""), work.join("fixtures")).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (doc, line) in lines {
        // What a redirect wrote must not be empty, and must be under the home or the
        // current directory: a pasted install line never writes to `/` (an unset
        // shell variable such as zsh's `${fpath[1]}` in bash would make it `/_edgeplan`).
        let check = match line.rsplit_once(" > ") {
            Some((_, target)) => {
                assert!(
                    target.starts_with("~/") || !target.contains(['/', '$']) && !target.is_empty(),
                    "{doc}: `{line}` writes outside ~ and the current directory"
                );
                format!(" && test -s {target}")
            }
            None => String::new(),
        };
        let script = format!("{line}{check}");
        let out = std::process::Command::new("bash")
            .args(["-euo", "pipefail", "-c", &script])
            .env("PATH", &path)
            .env("HOME", &home)
            .env("EDGEPLAN_BENCH_EXECUTOR", "fake")
            .current_dir(&work)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(documented_exit(&line)),
            "{doc}: `{line}`:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        if check.is_empty() {
            assert!(!out.stdout.is_empty(), "{doc}: `{line}` printed nothing");
        }
    }
    let script = std::fs::read_to_string(work.join("build.sh")).unwrap();
    assert!(script.starts_with("#!/usr/bin/env bash\n"), "{script}");
}

/// docs/quickstart.md's x86 story is what the end-to-end test runs for real
/// (scripts/engines/e2e_plan.sh, from tests/engine_vllm.rs): the plan's script for this
/// host, run with a calibration file and serve flags, then `/v1/models` and
/// `/v1/completions`. A change to either side must be made to both.
#[test]
fn the_quickstart_x86_story_is_the_end_to_end_test() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/quickstart.md")).unwrap();
    let story = &doc[doc.find("## 1. ").unwrap()..doc.find("## 2. ").unwrap()];
    let e2e = std::fs::read_to_string(root.join("scripts/engines/e2e_plan.sh")).unwrap();
    for (in_doc, in_e2e) in [
        (
            "edgeplan plan --format script > build.sh",
            "\"$EDGEPLAN\" plan \"${HOST[@]}\" --format script >\"$WORK/build.sh\"",
        ),
        (
            "EDGEPLAN_CALIBRATION=",
            "EDGEPLAN_CALIBRATION=\"$WORK/calib.txt\"",
        ),
        (
            "EDGEPLAN_SERVE_ARGS=\"--host 127.0.0.1 --port",
            "EDGEPLAN_SERVE_ARGS=\"--host 127.0.0.1 --port",
        ),
        (
            " bash build.sh ",
            "run_script \"gptq ($kernel)\" \"$WORK/build.sh\"",
        ),
        ("/v1/models", "/v1/models"),
        ("/v1/completions", "/v1/completions"),
        (
            "Using CPUWNA16LinearKernel for",
            "'Using CPUWNA16LinearKernel for'",
        ),
    ] {
        assert!(
            story.contains(in_doc),
            "quickstart story 1 lacks {in_doc:?}"
        );
        assert!(e2e.contains(in_e2e), "e2e_plan.sh lacks {in_e2e:?}");
    }
    assert!(story.contains("CI runs this story"), "{story}");
}

/// Every Markdown file of the README and docs/ (docs/lab/ too).
fn markdown_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (outside code blocks).
fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.push(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

/// The relative link targets `](target)` of a Markdown text.
fn relative_links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices("](") {
        let rest = &text[i + 2..];
        let Some(end) = rest.find(')') else { continue };
        let target = &rest[..end];
        if !target.contains("://") && !target.starts_with("mailto:") && !target.contains(' ') {
            out.push(target.to_string());
        }
    }
    out
}

#[test]
fn every_relative_link_in_the_docs_reaches_a_file_and_heading() {
    let files = markdown_files();
    assert!(files.len() > 10, "{files:?}");
    let mut dead = Vec::new();
    let mut count = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for link in relative_links(&text) {
            count += 1;
            let (path, fragment) = link.split_once('#').unwrap_or((&link, ""));
            let target = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            if !target.exists() {
                dead.push(format!("{}: {link}", file.display()));
            } else if !fragment.is_empty() && target.extension().is_some_and(|e| e == "md") {
                let heads = anchors(&std::fs::read_to_string(&target).unwrap());
                if !heads.iter().any(|h| h == fragment) {
                    dead.push(format!("{}: {link} (no such heading)", file.display()));
                }
            }
        }
    }
    assert!(count > 20, "only {count} links found");
    assert!(dead.is_empty(), "dead links:\n{}", dead.join("\n"));
}

/// docs/integrations.md's workflow installs edgeplan from a directory one of its
/// `actions/checkout` steps fills (`path:`), never from a path nothing checks out.
#[test]
fn the_ci_recipe_installs_from_what_it_checks_out() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/integrations.md")).unwrap();
    let yaml = &doc[doc.find("<!-- test: ci -->").unwrap()..];
    let yaml = &yaml[yaml.find("```yaml").unwrap() + 7..];
    let yaml = &yaml[..yaml.find("```").unwrap()];
    let checked_out: Vec<&str> = yaml
        .lines()
        .filter_map(|l| l.trim().strip_prefix("path: "))
        .collect();
    let installs: Vec<&str> = yaml
        .lines()
        .filter_map(|l| {
            l.split_once("cargo install --locked --path ")
                .map(|(_, p)| p.trim())
        })
        .collect();
    assert_eq!(installs.len(), 1, "{yaml}");
    for path in installs {
        assert!(
            checked_out.contains(&path),
            "installs --path {path}, checked out {checked_out:?}"
        );
    }
    assert!(
        yaml.matches("uses: actions/checkout@").count() >= 2,
        "{yaml}"
    );
}

/// `EDGEPLAN_VERIFIED` is documented with the values `plan --format env` prints.
#[test]
fn edgeplan_verified_is_documented_with_the_values_it_takes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/weight-paths.md")).unwrap();
    let row = doc
        .lines()
        .find(|l| l.starts_with("| `EDGEPLAN_VERIFIED` |"))
        .expect("EDGEPLAN_VERIFIED row in docs/weight-paths.md");
    let mut seen = std::collections::BTreeSet::new();
    for profile in std::fs::read_dir(fixture("profiles")).unwrap() {
        let profile = profile.unwrap().path();
        let out = crate::util::edgeplan()
            .args(["plan", "--format", "env", "--profile"])
            .arg(&profile)
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        if let Some(v) = text
            .lines()
            .find_map(|l| l.strip_prefix("EDGEPLAN_VERIFIED="))
        {
            seen.insert(v.to_string());
        }
    }
    assert!(seen.len() >= 2, "{seen:?}");
    for value in &seen {
        assert!(row.contains(&format!("`{value}`")), "{value} not in: {row}");
    }
}

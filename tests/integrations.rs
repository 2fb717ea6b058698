//! Runs the recipes of docs/integrations.md: the Ansible fact script, the `run:` steps of
//! the CI workflow (the install step aside) and the rollout loop, each against the
//! fixtures, on a good fleet and on one with a bad profile.

use std::path::{Path, PathBuf};

use crate::snippets::stub_bin;
use crate::util::fixture;

/// The code block that follows `<!-- test: NAME -->` in docs/integrations.md.
fn block(name: &str) -> String {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/integrations.md"))
            .unwrap();
    let marker = format!("<!-- test: {name} -->");
    let after = &text[text.find(&marker).expect("marker") + marker.len()..];
    let start = after.find("```").unwrap();
    let body = &after[start..];
    let body = &body[body.find('\n').unwrap() + 1..];
    body[..body.find("\n```").unwrap() + 1].to_string()
}

fn bash(script: &str, dir: &Path, env: &[(&str, &std::ffi::OsStr)]) -> std::process::Output {
    let bin = stub_bin(dir);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = std::process::Command::new("bash");
    cmd.args(["-euo", "pipefail", "-c", script])
        .env("PATH", path)
        .env("VLLM_LOG", dir.join("vllm.log"))
        .current_dir(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// A copy of the fixture profiles and CI manifest as `fleet/profiles` and
/// `fleet/expect.toml`.
fn fleet(dir: &Path) -> PathBuf {
    let fleet = dir.join("fleet");
    std::fs::create_dir_all(fleet.join("profiles")).unwrap();
    for entry in std::fs::read_dir(fixture("profiles")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(
            &path,
            fleet.join("profiles").join(path.file_name().unwrap()),
        )
        .unwrap();
    }
    std::fs::copy(fixture("expect.toml"), fleet.join("expect.toml")).unwrap();
    fleet
}

#[test]
fn the_ansible_fact_prints_profile_and_plan_as_json_and_fails_with_edgeplan() {
    let dir = tempfile::tempdir().unwrap();
    let script = block("ansible-fact");
    let out = bash(&script, dir.path(), &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fact: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(fact["profile"]["schema_version"], 1);
    assert!(fact["plan"]["path"]["name"].is_string(), "{fact}");
    let out = bash(
        &script,
        dir.path(),
        &[("EDGEPLAN_PRIORITY", "fastest".as_ref())],
    );
    assert_ne!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
}

#[test]
fn the_ci_steps_pass_on_the_fleet_and_fail_on_a_changed_plan() {
    let yaml = block("ci");
    let steps: Vec<String> = yaml
        .lines()
        .filter_map(|l| l.trim().strip_prefix("run: "))
        .filter(|cmd| cmd.starts_with("edgeplan "))
        .map(str::to_string)
        .collect();
    assert_eq!(steps.len(), 2, "{yaml}");
    let dir = tempfile::tempdir().unwrap();
    let fleet = fleet(dir.path());
    for step in &steps {
        let out = bash(step, dir.path(), &[]);
        assert!(
            out.status.success(),
            "{step}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A re-probed device whose AMX is no longer usable: its case fails the job.
    let amx = fleet.join("profiles/hand-x86-amx-usable.json");
    let text = std::fs::read_to_string(&amx).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["cpu"]["features"]["amx_int8"]["usable"] = serde_json::json!(false);
    std::fs::write(&amx, value.to_string()).unwrap();
    let out = bash(&steps[0], dir.path(), &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("hand-x86-amx-usable"));
    // A broken profile fails the second step too.
    std::fs::write(fleet.join("profiles/broken.json"), "{").unwrap();
    let out = bash(&steps[1], dir.path(), &[]);
    assert_eq!(out.status.code(), Some(65));
}

#[test]
fn the_rollout_deploys_every_good_device_and_names_the_bad_one() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = dir.path().join("fleet");
    std::fs::create_dir(&fleet).unwrap();
    for name in [
        "hand-x86-amx-usable",
        "hand-cuda-h100",
        "hand-arm64-graviton",
    ] {
        std::fs::copy(
            fixture(&format!("profiles/{name}.json")),
            fleet.join(format!("{name}.json")),
        )
        .unwrap();
    }
    let log = dir.path().join("deploy.log");
    let script = format!(
        "deploy() {{ printf '%s|%s|%s\\n' \"$1\" \"$2\" \"$3\" >> \"$DEPLOY_LOG\"; }}\n{}",
        block("rollout")
    );
    let env = [
        ("FLEET", fleet.as_os_str()),
        ("DEPLOY_LOG", log.as_os_str()),
    ];
    let out = bash(&script, dir.path(), &env);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let deployed = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        deployed,
        "hand-arm64-graviton|bf16|--dtype bfloat16 --kv-cache-memory-bytes 28991029248\n\
hand-cuda-h100|bf16|--dtype bfloat16\n\
hand-x86-amx-usable|w4a16|--dtype bfloat16 --kv-cache-memory-bytes 54760833024 --quantization gptq\n"
    );
    std::fs::remove_file(&log).unwrap();
    std::fs::write(fleet.join("broken.json"), "{\"schema_version\": 1}").unwrap();
    let out = bash(&script, dir.path(), &env);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("rollout: broken skipped"));
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 3);
}

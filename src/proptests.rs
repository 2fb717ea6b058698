//! Property tests (proptest) over every reader edgeplan points at other people's files and
//! every output format, run by `cargo test` like any other test.
//!
//! - The profile, catalog, manifest and model-config readers take mutated and generated
//!   text and never panic (a bad input is an error, not a crash).
//! - The sysroot reader probes generated trees (files of odd sizes, links inside and out
//!   of the tree, link loops, FIFOs, directories where files belong): it never panics,
//!   never blocks, never reads a byte from outside the tree, and `--dump` of what it read
//!   never writes outside the dump.
//! - `--format env` evaluated by bash, dash and zsh (when installed) sets exactly the
//!   plan's values, whatever text the profile carried.
//! - No control character, C1 control or bidi override from an input reaches a table or
//!   a diagnostic line.
//!
//! Budget: `PROPTEST_CASES` (default 200 per property: about 12 s for the seven on two
//! shared cores; 400 took 23 s) keeps the suite well inside a minute. A failure is saved by proptest under `proptest-regressions/`
//! and replayed first on every later run; commit that file with the fix.

use proptest::prelude::*;
use proptest::test_runner::Config;

use crate::plan::Catalog;
use crate::profile::Profile;

/// Cases per property: `PROPTEST_CASES`, else 200.
fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    Config::with_cases(cases)
}

/// Characters that break things: controls, C1, bidi, quotes and shell syntax.
const NASTY: &[char] = &[
    '\u{1b}', '\n', '\r', '\t', '\u{7}', '\u{8}', '\u{7f}', '\u{85}', '\u{9b}', '\u{202e}',
    '\u{2066}', '\u{200f}', '\'', '"', '$', '`', '\\', '=', '~', '!', '*', ' ', '#', ';', '&', '|',
    '(', ')', '{', '}', '[', ']', '<', '>', '?', '%', '^', 'é', '→',
];

/// Text mixing any character with the nasty ones (never NUL: a shell variable cannot
/// hold one).
fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            any::<char>().prop_filter("no NUL", |c| *c != '\0'),
            prop::sample::select(NASTY),
        ],
        0..24,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

/// `base` with up to four edits: an insertion of `text()`, or a deletion.
fn mutated(base: &'static str) -> impl Strategy<Value = String> {
    prop::collection::vec((any::<prop::sample::Index>(), text(), 0usize..16), 0..4).prop_map(
        move |edits| {
            let mut s = base.to_string();
            for (at, insert, delete) in edits {
                let mut i = at.index(s.len() + 1);
                while !s.is_char_boundary(i) {
                    i -= 1;
                }
                let mut end = (i + delete).min(s.len());
                while !s.is_char_boundary(end) {
                    end -= 1;
                }
                s.replace_range(i..end, &insert);
            }
            s
        },
    )
}

const PROFILE: &str = include_str!("../fixtures/profiles/x86-spr-amx.json");
const CATALOG: &str = include_str!("plan/catalog.toml");
const CONFIG: &str = include_str!("../fixtures/bench/tiny-config.json");

fn unsafe_char(c: char) -> bool {
    crate::sanitize::is_unsafe(c) && c != '\n' && c != '\t'
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn profile_reader_never_panics(text in mutated(PROFILE), label in text()) {
        let _ = Profile::from_json(&text, "p");
        let mut value: serde_json::Value = serde_json::from_str(PROFILE).unwrap();
        value["label"] = serde_json::json!(label);
        value["cpu"]["model_name"] = serde_json::json!(label);
        prop_assert!(Profile::from_value(value, "p").is_ok());
    }

    #[test]
    fn catalog_reader_never_panics(text in mutated(CATALOG)) {
        let _ = Catalog::parse(&text, "c");
    }

    #[test]
    fn manifest_reader_never_panics(
        profile in text(), expect in text(), extra in mutated("[[case]]\nprofile = \"a.json\"\nexpect = \"bf16\"\n"),
    ) {
        let catalog = Catalog::builtin();
        let toml = format!(
            "[[case]]\nprofile = {}\nexpect = {}\n",
            toml::Value::String(profile), toml::Value::String(expect)
        );
        let _ = crate::plan::check::parse_manifest(&toml, "m", &catalog);
        let _ = crate::plan::check::parse_manifest(&extra, "m", &catalog);
    }

    #[test]
    fn model_config_reader_never_panics(
        text in mutated(CONFIG),
        key in prop::sample::select(&["hidden_size", "intermediate_size", "num_hidden_layers",
            "num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size", "model_type"][..]),
        value in prop_oneof![
            any::<i64>().prop_map(|n| n.to_string()),
            any::<f64>().prop_map(|f| format!("{f:e}")),
            Just("123456789012345678901234567890".to_string()),
            Just("1e400".to_string()), Just("-0".to_string()), Just("null".to_string()),
            text().prop_map(|t| serde_json::Value::String(t).to_string()),
        ],
    ) {
        let _ = crate::model::ModelShape::from_config_json(&text, "c");
        let mut doc: serde_json::Map<String, serde_json::Value> = serde_json::from_str(CONFIG).unwrap();
        if let Ok(v) = serde_json::from_str(&value) {
            doc.insert(key.to_string(), v);
        }
        let _ = crate::model::ModelShape::from_config_json(&serde_json::Value::Object(doc).to_string(), "c");
    }

    #[test]
    fn diagnostics_and_tables_carry_no_control_character(label in text(), note in text()) {
        let line = crate::error::one_line(&format!("edgeplan: {label}: {note}"));
        prop_assert!(!line.chars().any(crate::sanitize::is_unsafe), "{line:?}");
        let mut plan = sample_plan(&label);
        plan.path.rationale = note.clone();
        plan.path.notes.push(crate::plan::schema::PlanNote {
            text: note.clone(),
            measured_on: None,
            hardware: Some(label.clone()),
            label: Some(label.clone()),
        });
        let (mut one, mut many) = (Vec::new(), Vec::new());
        let mut out = crate::output::Terminal::new(&mut one);
        crate::plan::render::table_one(&mut out, &plan, true).unwrap();
        std::io::Write::flush(&mut out).unwrap();
        let mut fleet = crate::plan::render::FleetTable::new(true, false);
        fleet.add(&plan).unwrap();
        fleet.finish(&mut crate::output::Terminal::new(&mut many)).unwrap();
        let mut profile = Profile::from_json(PROFILE, "p").unwrap();
        profile.label = Some(label.clone());
        profile.cpu.model_name = Some(note.clone());
        let probe_table = crate::output::terminal_text(&crate::probe::render::table(&profile));
        for shown in [
            String::from_utf8(one).unwrap(),
            String::from_utf8(many).unwrap(),
            probe_table,
        ] {
            prop_assert!(!shown.chars().any(unsafe_char), "{shown:?}");
        }
    }

    #[test]
    fn env_output_sets_exactly_the_plans_values(label in text(), cpus in text(), quant in text()) {
        let mut plan = sample_plan(&label);
        plan.deploy.cpus = Some(cpus);
        plan.path.quantization = Some(quant);
        let mut env = Vec::new();
        crate::plan::render::env(&mut env, &plan).unwrap();
        let vars = crate::plan::render::env_vars(&plan);
        for shell in shells() {
            prop_assert_eq!(eval_in(shell, &env, &vars), vars.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>(), "{}", shell);
        }
    }
}

/// A plan for the fixture profile, labelled `label`, with its vLLM rendering.
fn sample_plan(label: &str) -> crate::plan::Plan {
    let mut profile = Profile::from_json(PROFILE, "p").unwrap();
    profile.label = Some(label.to_string());
    let one = crate::plan::input::Loaded {
        label: label.to_string(),
        profile,
    };
    crate::plan::plan_one(
        &one,
        crate::profile::Priority::Speed,
        &Catalog::builtin(),
        crate::contract::Engine::Vllm,
    )
}

/// The POSIX shells on this machine to evaluate `env` output with: bash and dash, and zsh
/// where installed (`apt-get install zsh`).
fn shells() -> Vec<&'static str> {
    ["bash", "dash", "zsh"]
        .into_iter()
        .filter(|sh| {
            std::process::Command::new(sh)
                .args(["-c", "true"])
                .status()
                .is_ok_and(|s| s.success())
        })
        .collect()
}

/// Evaluates `env` in `shell` (no rc files) and reads back each of `vars`' values.
fn eval_in(shell: &str, env: &[u8], vars: &[(&str, String)]) -> Vec<String> {
    use std::io::Write;
    let names: Vec<String> = vars.iter().map(|(k, _)| format!("\"${k}\"")).collect();
    let script = format!("eval \"$(cat)\"; printf '%s\\000' {}", names.join(" "));
    let mut cmd = std::process::Command::new(shell);
    if shell == "zsh" {
        cmd.arg("-f");
    }
    let mut child = cmd
        .args(["-c", &script])
        .env("LC_ALL", "C.UTF-8")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(env).unwrap();
    let out = child.wait_with_output().unwrap();
    let mut values: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .split('\0')
        .map(str::to_string)
        .collect();
    values.pop();
    values
}

mod trees {
    //! Generated sysroot trees.
    use super::*;
    use std::path::Path;

    /// What one path of a generated tree is.
    #[derive(Debug, Clone)]
    pub enum Node {
        File(Vec<u8>),
        /// A link to the canary file outside the tree, absolute.
        OutsideAbs,
        /// A relative link that climbs out of the tree to the canary.
        OutsideUp,
        /// A link to another generated path, relative to the root.
        Inside(usize),
        Loop,
        Fifo,
        Dir,
    }

    /// Paths the probe reads (a sample across its readers).
    pub const PATHS: &[&str] = &[
        "proc/cpuinfo",
        "proc/meminfo",
        "proc/self/cgroup",
        "proc/self/mountinfo",
        "proc/self/status",
        "sys/devices/system/cpu/online",
        "sys/devices/system/cpu/possible",
        "sys/fs/cgroup/memory.max",
        "sys/fs/cgroup/cpu.max",
        "sys/bus/pci/devices/0000:01:00.0/class",
        "sys/bus/pci/devices/0000:01:00.0/vendor",
        "sys/bus/pci/devices/0000:01:00.0/driver",
        "proc/driver/nvidia/version",
        "etc/nv_tegra_release",
        "proc/device-tree/compatible",
        "system/build.prop",
        "vendor/build.prop",
    ];

    const CANARY: &[u8] = b"CANARY-outside-the-tree";

    fn content() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            Just(b"processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: avx2 amx_tile\n".to_vec()),
            Just(b"MemTotal: 16384 kB\nMemAvailable: 8192 kB\n".to_vec()),
            Just(b"0-65535,".repeat(64)),
            Just(b"0::/a/b\n".to_vec()),
            Just(b"0x030200\n".to_vec()),
            prop::collection::vec(any::<u8>(), 0..300),
            (0usize..5000).prop_map(|n| vec![b'7'; n]),
        ]
    }

    pub fn node() -> impl Strategy<Value = Node> {
        prop_oneof![
            6 => content().prop_map(Node::File),
            1 => Just(Node::OutsideAbs),
            1 => Just(Node::OutsideUp),
            1 => (0..PATHS.len()).prop_map(Node::Inside),
            1 => Just(Node::Loop),
            1 => Just(Node::Fifo),
            1 => Just(Node::Dir),
        ]
    }

    /// Builds the tree below `root`; the canary lives in `outside`.
    pub fn build(root: &Path, outside: &Path, nodes: &[Option<Node>]) {
        std::fs::write(outside.join("canary"), CANARY).unwrap();
        for (rel, node) in PATHS.iter().zip(nodes) {
            let Some(node) = node else { continue };
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let depth = rel.matches('/').count();
            let up = "../".repeat(depth + 3);
            let link = |target: &str| {
                let _ = std::os::unix::fs::symlink(target, &path);
            };
            match node {
                Node::File(bytes) => {
                    let _ = std::fs::write(&path, bytes);
                }
                Node::OutsideAbs => link(outside.join("canary").to_str().unwrap()),
                Node::OutsideUp => link(&format!(
                    "{up}{}",
                    outside
                        .join("canary")
                        .to_str()
                        .unwrap()
                        .trim_start_matches('/')
                )),
                Node::Inside(i) => link(&format!("{}{}", "../".repeat(depth), PATHS[*i])),
                Node::Loop => link(rel.rsplit('/').next().unwrap()),
                Node::Fifo => {
                    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
                    // SAFETY: `c` is a valid NUL-terminated path that lives across the call.
                    unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
                }
                Node::Dir => {
                    let _ = std::fs::create_dir_all(&path);
                }
            }
        }
    }

    pub fn has_canary(bytes: &[u8]) -> bool {
        bytes.windows(CANARY.len()).any(|w| w == CANARY)
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn sysroot_reads_never_leave_the_tree_nor_block(
        nodes in prop::collection::vec(prop::option::of(trees::node()), trees::PATHS.len()),
    ) {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        trees::build(dir.path(), outside.path(), &nodes);
        let root = dir.path().to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let sys = crate::probe::sysroot::SysRoot::at(&root);
            let result = crate::probe::probe(&sys).map(|p| serde_json::to_string(&p).unwrap());
            tx.send((result.map_err(|e| e.to_string()), sys.accesses())).unwrap();
        });
        let (profile, accesses) = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the probe finished (no FIFO blocked it, no panic)");
        if let Ok(json) = &profile {
            prop_assert!(!trees::has_canary(json.as_bytes()), "the profile holds outside bytes");
        }
        for access in &accesses {
            if let crate::probe::sysroot::Access::File { path, bytes } = access {
                prop_assert!(!trees::has_canary(bytes), "{path} was read from outside");
            }
        }
        let dump = dir.path().join("dump");
        crate::probe::dump::write_accesses(&accesses, &dump).unwrap();
        let canary = std::fs::read(outside.path().join("canary")).unwrap();
        prop_assert!(trees::has_canary(&canary), "the dump wrote outside");
        prop_assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
    }
}

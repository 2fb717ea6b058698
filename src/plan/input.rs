//! Loading profiles for `plan` and `check`: files, stdin, directories, JSON Lines.
//!
//! Each `--profile` argument is a file holding one JSON profile (pretty or not) or JSON
//! Lines (one profile per line), `-` for stdin, or a directory whose `*.json` and
//! `*.jsonl` files are read in name order. Every input is capped at [`MAX_INPUT_BYTES`].
//! A bad profile does not stop the others: each failure becomes one coded error (65 bad
//! data, 66 missing, 74 unreadable) naming the input (and the line, for JSON Lines), and
//! the caller decides the exit code. Not in here: probing (`crate::probe`), deciding.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{data_error, io_error, no_input, read_error};
use serde::de::IgnoredAny;

use crate::profile::{Arch, HardwareClass, Profile, SCHEMA_VERSION};

/// The largest profile input read (a 10,000-device JSON Lines fleet is about 20 MiB).
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// One profile and the name it goes by in fleet views.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The profile's `label`, else the file's stem (with `:LINE` for JSON Lines).
    pub label: String,
    pub profile: Profile,
}

/// Everything read from the `--profile` arguments: the good and the bad.
#[derive(Debug, Default)]
pub struct Inputs {
    pub profiles: Vec<Loaded>,
    pub errors: Vec<anyhow::Error>,
}

/// Reads every `--profile` argument; `stdin` serves `-`.
pub fn load(specs: &[PathBuf], stdin: &mut dyn Read) -> Inputs {
    let mut inputs = Inputs::default();
    for spec in specs {
        if spec.as_os_str() == "-" {
            match read_capped(stdin, "stdin") {
                Ok(text) => parse_text(&text, "stdin", "stdin", &mut inputs),
                Err(e) => inputs.errors.push(e),
            }
            continue;
        }
        match std::fs::metadata(spec) {
            Err(e) => inputs.errors.push(read_error(spec, &e)),
            Ok(meta) if meta.is_dir() => load_dir(spec, &mut inputs),
            Ok(_) => load_file(spec, &mut inputs),
        }
    }
    inputs
}

fn load_dir(dir: &Path, inputs: &mut Inputs) {
    let shown = dir.display();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            return inputs
                .errors
                .push(io_error(format!("{shown}: cannot list directory: {e}")));
        }
    };
    let mut files: Vec<PathBuf> = Vec::new();
    for entry in entries {
        match entry {
            Ok(entry) => {
                let path = entry.path();
                let wanted = matches!(
                    path.extension().and_then(|e| e.to_str()),
                    Some("json" | "jsonl")
                );
                // The entry's own type first; a stat only to follow a symlink.
                let is_file = entry
                    .file_type()
                    .is_ok_and(|t| t.is_file() || (t.is_symlink() && path.is_file()));
                if wanted && is_file {
                    files.push(path);
                }
            }
            Err(e) => {
                return inputs
                    .errors
                    .push(io_error(format!("{shown}: cannot list directory: {e}")));
            }
        }
    }
    if files.is_empty() {
        return inputs.errors.push(no_input(format!(
            "{shown}: no *.json or *.jsonl profiles in this directory (write one with `edgeplan probe --format json > {shown}/NAME.json`)"
        )));
    }
    files.sort();
    for file in files {
        load_file(&file, inputs);
    }
}

fn load_file(path: &Path, inputs: &mut Inputs) {
    let shown = path.display().to_string();
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| shown.clone());
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => return inputs.errors.push(read_error(path, &e)),
    };
    match read_capped(&mut std::io::BufReader::new(file), &shown) {
        Ok(text) => parse_text(&text, &shown, &stem, inputs),
        Err(e) => inputs.errors.push(e),
    }
}

/// Reads at most [`MAX_INPUT_BYTES`]; more is a data error (65), not a silent cut.
fn read_capped(reader: &mut dyn Read, shown: &str) -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(format!("{shown}: cannot read: {e}")))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(data_error(format!(
            "{shown}: more than {} MiB; a profile input is capped there (split the fleet into several files)",
            MAX_INPUT_BYTES >> 20
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        data_error(format!(
            "{shown}: not UTF-8 text (byte {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// Splits one input into profiles: a single JSON document, or JSON Lines.
pub fn parse_text(text: &str, shown: &str, stem: &str, inputs: &mut Inputs) {
    if text.trim().is_empty() {
        return inputs.errors.push(data_error(format!(
            "{shown}: empty input, no profile in it"
        )));
    }
    // One document (possibly pretty-printed) is the common case: parse it once.
    if let Ok(profile) = serde_json::from_str::<Profile>(text)
        && profile.schema_version == SCHEMA_VERSION
    {
        return push_parsed(Ok(profile), shown.to_string(), stem.to_string(), inputs);
    }
    let whole = serde_json::from_str::<IgnoredAny>(text);
    let first_line_alone = || {
        text.lines()
            .find(|l| !l.trim().is_empty())
            .is_some_and(|l| serde_json::from_str::<IgnoredAny>(l).is_ok())
    };
    match whole {
        Ok(_) => push_one(text, shown.to_string(), stem.to_string(), inputs),
        Err(_) if first_line_alone() => {
            for (i, line) in text.lines().enumerate() {
                if !line.trim().is_empty() {
                    let origin = format!("{shown}:{}", i + 1);
                    push_one(line, origin, format!("{stem}:{}", i + 1), inputs);
                }
            }
        }
        Err(e) => inputs
            .errors
            .push(data_error(format!("{shown}: not valid JSON: {e}"))),
    }
}

/// Parses one profile. The fast path deserializes straight into [`Profile`] in one pass
/// (a 10,000-line fleet stays well under a second); anything it refuses, or a version
/// other than 1, goes through [`Profile::from_json`] for its precise message.
fn parse_profile(text: &str, origin: &str) -> anyhow::Result<Profile> {
    match serde_json::from_str::<Profile>(text) {
        Ok(profile) if profile.schema_version == SCHEMA_VERSION => Ok(profile),
        _ => Profile::from_json(text, origin),
    }
}

fn push_one(text: &str, origin: String, label: String, inputs: &mut Inputs) {
    let parsed = parse_profile(text, &origin);
    push_parsed(parsed, origin, label, inputs);
}

fn push_parsed(
    parsed: anyhow::Result<Profile>,
    origin: String,
    label: String,
    inputs: &mut Inputs,
) {
    match parsed.and_then(|p| check_consistent(p, &origin)) {
        Ok(profile) => {
            let label = profile.label.clone().unwrap_or(label);
            inputs.profiles.push(Loaded { label, profile });
        }
        Err(e) => inputs.errors.push(e),
    }
}

/// Rejects profiles that parse but contradict themselves, which no probe writes.
pub fn check_consistent(profile: Profile, origin: &str) -> anyhow::Result<Profile> {
    let class = profile.hardware_class;
    let arch = profile.arch;
    let clash = match class {
        HardwareClass::X86Cpu => arch != Arch::X86_64,
        HardwareClass::Arm64Cpu | HardwareClass::Jetson => arch != Arch::Aarch64,
        HardwareClass::NpuPhone | HardwareClass::CudaDiscrete => false,
    };
    if clash {
        return Err(data_error(format!(
            "{origin}: hardware_class {class} contradicts arch {}; re-run `edgeplan probe` or fix the profile",
            arch.as_str()
        )));
    }
    if profile.cpu.usable_threads == Some(0) {
        return Err(data_error(format!(
            "{origin}: cpu.usable_threads is 0; a host runs at least one thread"
        )));
    }
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Exit, exit_for};

    const ONE: &str = r#"{"schema_version": 1, "tool": {"name": "edgeplan", "version": "0"},
        "arch": "x86_64", "hardware_class": "x86_cpu", "supports_bf16": true,
        "cpu": {"vendor": null, "model_name": null, "logical_cpus": 8, "usable_threads": 8, "flags": [], "features": {}},
        "memory": {"total_bytes": null, "available_bytes": null, "limit_bytes": null}}"#;

    fn parse(text: &str) -> Inputs {
        let mut inputs = Inputs::default();
        parse_text(text, "f.jsonl", "f", &mut inputs);
        inputs
    }

    #[test]
    fn one_pretty_document_or_json_lines() {
        assert_eq!(parse(ONE).profiles.len(), 1);
        let line = ONE.replace('\n', " ");
        let many = format!("{line}\n\n{line}\n{line}\n");
        let got = parse(&many);
        assert_eq!(got.profiles.len(), 3);
        assert_eq!(got.profiles[2].label, "f:4");
    }

    #[test]
    fn a_bad_line_is_reported_with_its_number_and_the_rest_survive() {
        let line = ONE.replace('\n', " ");
        let got = parse(&format!("{line}\n{{\"oops\": \n{line}\n"));
        assert_eq!(got.profiles.len(), 2);
        assert_eq!(got.errors.len(), 1);
        assert!(
            got.errors[0]
                .to_string()
                .starts_with("f.jsonl:2: not valid JSON"),
            "{}",
            got.errors[0]
        );
    }

    #[test]
    fn empty_wrong_shape_and_contradictions_are_65() {
        for text in ["", "  \n", "[1, 2]", "{\"schema_version\": 1}", "{not json"] {
            let got = parse(text);
            assert_eq!(got.errors.len(), 1, "{text:?}");
            assert_eq!(exit_for(&got.errors[0]), Exit::DataErr, "{text:?}");
        }
        let clash = parse(&ONE.replace("\"x86_64\"", "\"aarch64\""));
        assert!(
            clash.errors[0]
                .to_string()
                .contains("contradicts arch aarch64")
        );
        let zero = parse(&ONE.replace("\"usable_threads\": 8", "\"usable_threads\": 0"));
        assert_eq!(exit_for(&zero.errors[0]), Exit::DataErr);
    }

    #[test]
    fn input_over_the_cap_is_refused() {
        let mut big = std::io::repeat(b' ').take(MAX_INPUT_BYTES + 10);
        let err = read_capped(&mut big, "big").unwrap_err();
        assert_eq!(exit_for(&err), Exit::DataErr);
        assert!(err.to_string().contains("64 MiB"));
    }
}

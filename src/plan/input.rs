//! Loading profiles for `plan` and `check`: files, stdin, directories, JSON Lines.
//!
//! Each `--profile` argument is a file holding one JSON profile (pretty or not) or JSON
//! Lines (one profile per line), `-` for stdin, or a directory whose `*.json` and
//! `*.jsonl` files are read in name order. JSON Lines are streamed: read a line at a
//! time and handed to the caller before the next is read, so a fleet of any size is
//! planned in constant memory ([`for_each`]). A multi-line (pretty) document, and each
//! line, is capped at [`MAX_INPUT_BYTES`]. A bad profile does not stop the others: each
//! failure becomes one coded error (65 bad data, 66 missing, 74 unreadable) naming the
//! input (and the line, for JSON Lines), and the caller decides the exit code. Not in
//! here: probing (`crate::probe`), deciding.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use crate::error::{data_error, io_error, no_input, read_error};
use serde::de::IgnoredAny;

use crate::profile::{Arch, HardwareClass, Profile, SCHEMA_VERSION};

/// The largest pretty-printed profile document, and the longest JSON Lines line, read.
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// One profile and the name it goes by in fleet views.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The profile's `label`, else the file's stem (with `:LINE` for JSON Lines).
    pub label: String,
    pub profile: Profile,
}

/// One input that did not give a profile: where, and the coded error (its message
/// already names the input and line).
#[derive(Debug)]
pub struct InputError {
    /// The file (or `stdin`) as given.
    pub source: String,
    /// The JSON Lines line, when the error is one line's.
    pub line: Option<usize>,
    pub error: anyhow::Error,
}

/// Everything read from one input, the good and the bad (the unit tests' view; the
/// commands stream with [`for_each`]).
#[cfg(test)]
#[derive(Debug, Default)]
pub struct Inputs {
    pub profiles: Vec<Loaded>,
    pub errors: Vec<anyhow::Error>,
}

/// What [`for_each`] hands over, one input at a time.
pub type Item = Result<Loaded, InputError>;

/// Streams every `--profile` argument to `f`, one profile or error at a time; `stdin`
/// serves `-`. Stops at the first error `f` returns.
pub fn for_each(
    specs: &[PathBuf],
    stdin: &mut dyn BufRead,
    f: &mut dyn FnMut(Item) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    for_each_from(specs, stdin, true, f)
}

/// [`for_each`] for profiles edgeplan found rather than the user named (`check`'s
/// manifest cases): each file is opened `O_NONBLOCK` and read only when it is a regular
/// file, so a FIFO planted where a manifest points is refused (65), never waited on.
pub fn for_each_found(
    specs: &[PathBuf],
    f: &mut dyn FnMut(Item) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    for_each_from(specs, &mut std::io::empty(), false, f)
}

fn for_each_from(
    specs: &[PathBuf],
    stdin: &mut dyn BufRead,
    named: bool,
    f: &mut dyn FnMut(Item) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    for spec in specs {
        if named && spec.as_os_str() == "-" {
            read_stream(stdin, "stdin", "stdin", f)?;
            continue;
        }
        let shown = spec.display().to_string();
        match std::fs::metadata(spec) {
            Err(e) => f(Err(whole(&shown, read_error(spec, &e))))?,
            Ok(meta) if meta.is_dir() => load_dir(spec, f)?,
            Ok(_) => load_file(spec, !named, f)?,
        }
    }
    Ok(())
}

fn whole(source: &str, error: anyhow::Error) -> InputError {
    InputError {
        source: source.to_string(),
        line: None,
        error,
    }
}

fn load_dir(dir: &Path, f: &mut dyn FnMut(Item) -> anyhow::Result<()>) -> anyhow::Result<()> {
    let shown = dir.display().to_string();
    let entries = match crate::fsx::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            let e = io_error(format!("{shown}: cannot list directory: {e}"));
            return f(Err(whole(&shown, e)));
        }
    };
    let mut files: Vec<(PathBuf, Option<anyhow::Error>)> = Vec::new();
    for entry in entries {
        match entry {
            Ok(entry) => {
                if let Some(found) = profile_entry(&entry) {
                    files.push(found);
                }
            }
            Err(e) => {
                let e = io_error(format!("{shown}: cannot list directory: {e}"));
                return f(Err(whole(&shown, e)));
            }
        }
    }
    if files.is_empty() {
        let e = no_input(format!(
            "{shown}: no *.json or *.jsonl profiles in this directory (write one with `edgeplan probe --format json > {shown}/NAME.json`)"
        ));
        return f(Err(whole(&shown, e)));
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    for (file, problem) in files {
        match problem {
            None => load_file(&file, true, f)?,
            Some(e) => f(Err(whole(&file.display().to_string(), e)))?,
        }
    }
    Ok(())
}

/// A directory entry that is, or looks meant to be, a profile: `(path, None)` to read;
/// `(path, Some(error))` for one that cannot be read as a profile, reported rather than
/// skipped so a fleet never loses a device in silence: a dangling link (66, the profile
/// it names does not exist), a FIFO, socket or device (65, never opened: a FIFO would
/// block), `*.JSON` in another case (65: profiles are `*.json`/`*.jsonl`). `None` for
/// anything else (other files, directories).
fn profile_entry(entry: &std::fs::DirEntry) -> Option<(PathBuf, Option<anyhow::Error>)> {
    let path = entry.path();
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let shown = path.display();
    if !matches!(ext, "json" | "jsonl") {
        if matches!(ext.to_ascii_lowercase().as_str(), "json" | "jsonl") {
            let e = data_error(format!(
                "{shown}: not read: profiles are named *.json or *.jsonl in lower case; rename it"
            ));
            return Some((path, Some(e)));
        }
        return None;
    }
    let kind = entry.file_type().ok()?;
    // The entry's own type first; a stat only to follow a symlink.
    let target = if kind.is_symlink() {
        match std::fs::metadata(&path) {
            Ok(meta) => meta.file_type(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let e = no_input(format!(
                    "{shown}: a link to a profile that does not exist (a dangling link)"
                ));
                return Some((path, Some(e)));
            }
            Err(e) => {
                let e = read_error(&path, &e);
                return Some((path, Some(e)));
            }
        }
    } else {
        kind
    };
    if target.is_file() {
        Some((path, None))
    } else if target.is_dir() {
        None
    } else {
        let e = data_error(format!(
            "{shown}: not a regular file (a FIFO, socket or device); not read"
        ));
        Some((path, Some(e)))
    }
}

/// Reads one profile file. A directory's entry (`listed`) is opened `O_NONBLOCK` and
/// must be a regular file once open: one swapped for a FIFO after the listing is
/// refused, never waited on. A file named on the command line may be a pipe (`<(...)`).
fn load_file(
    path: &Path,
    listed: bool,
    f: &mut dyn FnMut(Item) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    use crate::fsx::Source;
    let shown = path.display().to_string();
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| shown.clone());
    let source = if listed { Source::Found } else { Source::Named };
    match crate::fsx::open_file(path, source) {
        Ok((file, _)) => read_stream(
            &mut std::io::BufReader::with_capacity(1 << 16, file),
            &shown,
            &stem,
            f,
        ),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
            let e = data_error(format!(
                "{shown}: not a regular file (a FIFO, socket or device); not read"
            ));
            f(Err(whole(&shown, e)))
        }
        Err(e) => f(Err(whole(&shown, read_error(path, &e)))),
    }
}

/// Reads one line (with its newline) into `buf`, at most [`MAX_INPUT_BYTES`]; returns
/// the bytes read (0 at the end).
fn read_line_capped(
    reader: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    shown: &str,
) -> anyhow::Result<usize> {
    buf.clear();
    let n = reader
        .take(MAX_INPUT_BYTES + 1)
        .read_until(b'\n', buf)
        .map_err(|e| io_error(format!("{shown}: cannot read: {e}")))?;
    if n as u64 > MAX_INPUT_BYTES {
        return Err(data_error(format!(
            "{shown}: a line of more than {} MiB; a profile is never that long",
            MAX_INPUT_BYTES >> 20
        )));
    }
    Ok(n)
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// Reads the next non-blank line into `buf`, counting lines in `line_no`; false at the end.
fn next_line(
    reader: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    line_no: &mut usize,
    shown: &str,
) -> anyhow::Result<bool> {
    loop {
        if read_line_capped(reader, buf, shown)? == 0 {
            return Ok(false);
        }
        *line_no += 1;
        if !is_blank(buf) {
            return Ok(true);
        }
    }
}

/// One input: a single JSON document (possibly pretty-printed), or JSON Lines streamed a
/// line at a time. A read error ends this input (reported as its error), not the run.
fn read_stream(
    reader: &mut dyn BufRead,
    shown: &str,
    stem: &str,
    f: &mut dyn FnMut(Item) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut first = Vec::new();
    let mut line_no = 0;
    let found = match next_line(reader, &mut first, &mut line_no, shown) {
        Ok(found) => found,
        Err(e) => return f(Err(whole(shown, e))),
    };
    // A UTF-8 byte-order mark (Windows editors write one) is ignored, as RFC 8259 §8.1
    // allows a parser to.
    if first.starts_with(b"\xEF\xBB\xBF") {
        first.drain(..3);
    }
    if !found {
        let e = data_error(format!("{shown}: empty input, no profile in it"));
        return f(Err(whole(shown, e)));
    }
    if serde_json::from_slice::<IgnoredAny>(&first).is_err() {
        // Not a document on one line: a pretty-printed document (or not JSON at all).
        let mut text = std::mem::take(&mut first);
        let rest = (&mut *reader)
            .take(MAX_INPUT_BYTES.saturating_sub(text.len() as u64) + 1)
            .read_to_end(&mut text);
        if let Err(e) = rest {
            return f(Err(whole(
                shown,
                io_error(format!("{shown}: cannot read: {e}")),
            )));
        }
        if text.len() as u64 > MAX_INPUT_BYTES {
            let e = data_error(format!(
                "{shown}: a JSON document of more than {} MiB; put a fleet in JSON Lines, one profile per line",
                MAX_INPUT_BYTES >> 20
            ));
            return f(Err(whole(shown, e)));
        }
        let item = match utf8(&text, shown) {
            Ok(text) => match serde_json::from_str::<IgnoredAny>(text) {
                Ok(_) => parse_item(text, shown, stem, shown, None),
                Err(e) => {
                    // `cat a.json b.json`: a second pretty document after the first.
                    let hint = if e.to_string().starts_with("trailing characters") {
                        " (several profiles in one file go one per line, as JSON Lines: `jq -c . a.json b.json`)"
                    } else {
                        ""
                    };
                    Err(whole(
                        shown,
                        data_error(format!("{shown}: not valid JSON: {e}{hint}")),
                    ))
                }
            },
            Err(e) => Err(whole(shown, e)),
        };
        return f(item);
    }
    // The first line is a document. If nothing follows it is the one profile of this
    // input; otherwise every line is one (JSON Lines).
    let first_line = line_no;
    let mut next = Vec::new();
    let more = match next_line(reader, &mut next, &mut line_no, shown) {
        Ok(more) => more,
        Err(e) => return f(Err(whole(shown, e))),
    };
    if !more {
        let item = utf8(&first, shown)
            .map_err(|e| whole(shown, e))
            .and_then(|text| parse_item(text, shown, stem, shown, None));
        return f(item);
    }
    emit_line(&first, first_line, shown, stem, f)?;
    emit_line(&next, line_no, shown, stem, f)?;
    loop {
        match next_line(reader, &mut next, &mut line_no, shown) {
            Ok(true) => emit_line(&next, line_no, shown, stem, f)?,
            Ok(false) => return Ok(()),
            Err(e) => {
                return f(Err(InputError {
                    source: shown.to_string(),
                    line: Some(line_no + 1),
                    error: e,
                }));
            }
        }
    }
}

fn emit_line(
    line: &[u8],
    line_no: usize,
    shown: &str,
    stem: &str,
    f: &mut dyn FnMut(Item) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let origin = format!("{shown}:{line_no}");
    let item = match utf8(line, &origin) {
        Ok(text) => match serde_json::from_str::<IgnoredAny>(text) {
            Ok(_) => parse_item(
                text,
                &origin,
                &format!("{stem}:{line_no}"),
                shown,
                Some(line_no),
            ),
            Err(e) => Err(data_error(format!("{origin}: not valid JSON: {e}"))).map_err(|error| {
                InputError {
                    source: shown.to_string(),
                    line: Some(line_no),
                    error,
                }
            }),
        },
        Err(error) => Err(InputError {
            source: shown.to_string(),
            line: Some(line_no),
            error,
        }),
    };
    f(item)
}

fn utf8<'a>(bytes: &'a [u8], shown: &str) -> anyhow::Result<&'a str> {
    std::str::from_utf8(bytes).map_err(|e| {
        data_error(format!(
            "{shown}: not UTF-8 text (byte {})",
            e.valid_up_to()
        ))
    })
}

/// Parses one profile text into an item; `origin` names it in errors, `label` is its
/// fallback fleet label.
fn parse_item(text: &str, origin: &str, label: &str, source: &str, line: Option<usize>) -> Item {
    parse_profile(text, origin)
        .and_then(|p| check_consistent(p, origin))
        .map(|profile| {
            let label = profile.label.clone().unwrap_or_else(|| label.to_string());
            Loaded { label, profile }
        })
        .map_err(|error| InputError {
            source: source.to_string(),
            line,
            error,
        })
}

/// Reads at most [`MAX_INPUT_BYTES`]; more is a data error (65), not a silent cut.
#[cfg(test)]
fn read_capped(reader: &mut dyn Read, shown: &str) -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(format!("{shown}: cannot read: {e}")))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(data_error(format!(
            "{shown}: more than {} MiB",
            MAX_INPUT_BYTES >> 20
        )));
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Splits one input into profiles: a single JSON document, or JSON Lines.
#[cfg(test)]
pub fn parse_text(text: &str, shown: &str, stem: &str, inputs: &mut Inputs) {
    let mut reader = std::io::Cursor::new(text.as_bytes());
    let _ = read_stream(&mut reader, shown, stem, &mut |item| {
        match item {
            Ok(one) => inputs.profiles.push(one),
            Err(e) => inputs.errors.push(e.error),
        }
        Ok(())
    });
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
    // The class is decided from these objects (contract.md's class table); a class
    // without its evidence would plan for hardware the profile does not have.
    let missing = match class {
        HardwareClass::CudaDiscrete if !profile.gpus.iter().any(|g| g.vendor == "nvidia") => {
            Some("no NVIDIA GPU in gpus")
        }
        HardwareClass::Jetson if profile.jetson.is_none() => Some("jetson is null"),
        HardwareClass::NpuPhone
            if profile
                .android
                .as_ref()
                .and_then(|a| a.npu.as_ref())
                .is_none() =>
        {
            Some("android.npu is null")
        }
        _ => None,
    };
    if let Some(missing) = missing {
        return Err(data_error(format!(
            "{origin}: hardware_class {class} contradicts the profile: {missing}; re-run `edgeplan probe` or fix the profile"
        )));
    }
    if let Some((name, _)) = profile
        .cpu
        .features
        .iter()
        .find(|(_, f)| f.usable && (!f.cpu || f.os == Some(false)))
    {
        return Err(data_error(format!(
            "{origin}: cpu.features.{name} is usable but its cpu or os is false; re-run `edgeplan probe` or fix the profile"
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

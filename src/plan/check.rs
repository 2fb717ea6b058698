//! `edgeplan check MANIFEST.toml`: expected plans, checked, as a pass/fail table.
//!
//! A manifest is a list of `[[case]]` tables, each `profile` (a path relative to the
//! manifest; a JSON Lines file counts as one case per profile), `priority` (default
//! `speed`) and `expect` (a path name from the catalog). Every case goes through the
//! same [`decide`] as `plan`. Exit 0 when all pass, 1 when any case planned something
//! else, and the input's own code (65/66/74) when a case's profile could not be read.
//! A malformed manifest is 65 with the file and line.

use std::io::Write;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::catalog::Engine;
use super::catalog::{Catalog, line_of};
use super::input;
use super::rules::decide_for;
use super::schema::Priority;
use crate::error::{Exit, data_error, exit_for, read_error};

/// Manifests bigger than this are refused.
const MAX_MANIFEST_BYTES: u64 = 4 << 20;

/// The `check` manifest (TOML): `[[case]]` entries.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "CheckManifest")]
pub(crate) struct RawManifest {
    /// The cases, each a profile planned at a priority and the path it must get.
    #[serde(default)]
    #[schemars(with = "Vec<RawCase>")]
    case: Vec<Spanned<RawCase>>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawCase {
    /// The profile file, relative to the manifest.
    profile: String,
    /// `speed` (the default) or `fidelity`.
    #[serde(default = "speed")]
    priority: Priority,
    /// The engine the case is planned for: `vllm` (the default) or `llama.cpp`.
    #[serde(default)]
    engine: Engine,
    #[schemars(with = "String")]
    expect: Spanned<String>,
}

fn speed() -> Priority {
    Priority::Speed
}

/// One manifest case, resolved.
#[derive(Debug, Clone)]
pub struct Case {
    /// The profile path as written in the manifest.
    pub profile: String,
    pub priority: Priority,
    /// The engine the case is planned for.
    pub engine: Engine,
    pub expect: String,
    /// 1-based line of the `[[case]]` in the manifest.
    pub line: usize,
}

/// Reads and checks a manifest: 66 when missing, 65 when malformed.
pub fn read_manifest(path: &Path, catalog: &Catalog) -> anyhow::Result<Vec<Case>> {
    if path.as_os_str() == "-" {
        crate::output::hint_if_stdin_is_terminal("the manifest");
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(std::io::stdin().lock(), MAX_MANIFEST_BYTES + 1),
            &mut bytes,
        )
        .map_err(|e| crate::error::io_error(format!("stdin: cannot read: {e}")))?;
        if bytes.len() as u64 > MAX_MANIFEST_BYTES {
            return Err(data_error(format!(
                "stdin: manifest larger than {MAX_MANIFEST_BYTES} bytes"
            )));
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| data_error("stdin: manifest is not UTF-8 text"))?;
        return parse_manifest(&text, "stdin", catalog);
    }
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| read_error(path, &e))?;
    if meta.is_dir() {
        return Err(crate::error::no_input(format!(
            "{shown}: is a directory; give the manifest file (e.g. fixtures/expect.toml)"
        )));
    }
    // Capped as it is read: `/dev/zero` or a pipe states no size and never ends.
    let text = crate::error::read_text_capped(
        path,
        "manifest",
        MAX_MANIFEST_BYTES,
        crate::fsx::Source::Named,
    )?;
    parse_manifest(&text, &shown, catalog)
}

/// Parses manifest text; `shown` names it in errors.
pub fn parse_manifest(text: &str, shown: &str, catalog: &Catalog) -> anyhow::Result<Vec<Case>> {
    let raw: RawManifest = toml::from_str(text).map_err(|e| {
        let at = e
            .span()
            .map(|s| format!(":{}", line_of(text, s.start)))
            .unwrap_or_default();
        data_error(format!("{shown}{at}: bad manifest: {}", e.message().trim()))
    })?;
    if raw.case.is_empty() {
        return Err(data_error(format!(
            "{shown}: bad manifest: no [[case]] entries (each needs profile, priority and expect)"
        )));
    }
    let mut cases = Vec::with_capacity(raw.case.len());
    for entry in raw.case {
        let line = line_of(text, entry.span().start);
        let raw = entry.into_inner();
        let expect_line = line_of(text, raw.expect.span().start);
        let expect = raw.expect.into_inner();
        if catalog.get(&expect).is_none() {
            let names: Vec<&str> = catalog.paths().iter().map(|p| p.name.as_str()).collect();
            return Err(data_error(format!(
                "{shown}:{expect_line}: bad manifest: expect = \"{expect}\" is not a path in the {}; known paths: {}",
                catalog.origin,
                names.join(", ")
            )));
        }
        // An empty path joined to the manifest's directory names that directory: the
        // case would plan whatever profiles lie beside the manifest, and could pass.
        if raw.profile.trim().is_empty() {
            return Err(data_error(format!(
                "{shown}:{line}: bad manifest: profile is empty; give a profile file (or a directory of them) relative to the manifest"
            )));
        }
        // No file name holds a NUL: the path is bad data in the manifest (65), not an
        // I/O failure met while opening it.
        if raw.profile.contains('\0') {
            return Err(data_error(format!(
                "{shown}:{line}: bad manifest: profile holds a NUL character; no file is named so"
            )));
        }
        let path_engine = catalog.get(&expect).map(|p| p.engine);
        if path_engine.is_some_and(|e| e != raw.engine) {
            return Err(data_error(format!(
                "{shown}:{expect_line}: bad manifest: expect = \"{expect}\" is a {} path, but the case plans for {} (set engine = \"{}\")",
                path_engine.unwrap_or_default(),
                raw.engine,
                path_engine.unwrap_or_default()
            )));
        }
        if let Err(e) = catalog.require(raw.engine) {
            return Err(data_error(format!("{shown}:{line}: {e:#}")));
        }
        cases.push(Case {
            profile: raw.profile,
            priority: raw.priority,
            engine: raw.engine,
            expect,
            line,
        });
    }
    Ok(cases)
}

/// The priority column: the priority, and under it the engine when it is not vLLM.
fn priority_cell(case: &Case) -> String {
    match case.engine {
        Engine::Vllm => case.priority.as_str().to_string(),
        engine => format!("{},\n{engine}", case.priority.as_str()),
    }
}

/// Columns of a check table that are not the profile's: the frame (16) and the widest
/// line, priority, planned path and result cells (4, 9, 16, 6).
const NOT_PROFILE: usize = 51;

/// The profile column: the manifest's path (broken after its last `/` when the table
/// would be wider than `width`), and under it the device's label when the
/// label is not the file's own name (a JSON Lines line, a profile's `label`).
fn profile_cell(profile: &str, label: &str, width: usize) -> String {
    let stem = Path::new(profile).file_stem().and_then(|s| s.to_str());
    let mut shown = crate::output::cell(profile);
    if let Some(slash) = shown
        .rfind('/')
        .filter(|_| crate::output::display_width(&shown) + NOT_PROFILE > width)
    {
        shown.insert(slash + 1, '\n');
    }
    if stem == Some(label) {
        shown
    } else {
        format!("{shown}\n({})", crate::output::cell(label))
    }
}

/// Runs every case and prints the table to `out`; errors reading profiles go to `err`.
pub fn run_cases(
    manifest: &Path,
    cases: &[Case],
    catalog: &Catalog,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Exit> {
    let base = manifest.parent().unwrap_or_else(|| Path::new("."));
    let width = crate::output::width();
    let mut table = crate::output::table_at(width);
    table.set_header(vec!["line", "profile", "priority", "planned", "result"]);
    let (mut passed, mut failed) = (0usize, 0usize);
    let mut first_error: Option<Exit> = None;
    for case in cases {
        // Rows in the order the inputs give them (a JSON Lines file's bad line between its
        // good ones stays there).
        let mut items = Vec::new();
        let _ = input::for_each_found(&[base.join(&case.profile)], &mut |item| {
            items.push(item);
            Ok(())
        });
        for item in items {
            let one = match item {
                Ok(one) => one,
                Err(bad) => {
                    let e = bad.error;
                    let line = format!(
                        "edgeplan: {}:{}: case profile: {e:#}",
                        manifest.display(),
                        case.line
                    );
                    writeln!(err, "{}", crate::error::one_line(&line))?;
                    first_error.get_or_insert(exit_for(&e));
                    failed += 1;
                    let row = [
                        &case.line.to_string(),
                        &crate::output::cell(&case.profile),
                        &priority_cell(case),
                        "-",
                        &format!("ERROR (want {})", case.expect),
                    ];
                    table.add_row(row.map(str::to_string).to_vec());
                    continue;
                }
            };
            let plan = decide_for(&one.profile, case.priority, catalog, case.engine);
            let ok = plan.path.name == case.expect;
            if ok {
                passed += 1
            } else {
                failed += 1;
                let line = format!(
                    "edgeplan: {}:{}: {} planned {} at priority {}, expected {}",
                    manifest.display(),
                    case.line,
                    one.label,
                    plan.path.name,
                    case.priority.as_str(),
                    case.expect
                );
                writeln!(err, "{}", crate::error::one_line(&line))?;
            }
            table.add_row(vec![
                case.line.to_string(),
                profile_cell(&case.profile, &one.label, width),
                priority_cell(case),
                plan.path.name.clone(),
                if ok {
                    "pass".to_string()
                } else {
                    format!("FAIL (want {})", case.expect)
                },
            ]);
        }
    }
    writeln!(out, "{table}\n\n{passed} passed, {failed} failed")?;
    Ok(match first_error {
        Some(code) => code,
        None if failed > 0 => Exit::CheckFailed,
        None => Exit::Success,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> anyhow::Result<Vec<Case>> {
        parse_manifest(text, "m.toml", &Catalog::builtin())
    }

    #[test]
    fn reads_cases_with_lines_and_default_priority() {
        let cases = parse("[[case]]\nprofile = \"a.json\"\nexpect = \"bf16\"\n\n[[case]]\nprofile = \"b.json\"\npriority = \"fidelity\"\nexpect = \"w4a8-amx\"\n").unwrap();
        assert_eq!(cases.len(), 2);
        assert_eq!((cases[0].priority, cases[0].line), (Priority::Speed, 1));
        assert_eq!((cases[1].priority, cases[1].line), (Priority::Fidelity, 5));
    }

    #[test]
    fn errors_name_the_line() {
        let msg = |t: &str| format!("{:#}", parse(t).unwrap_err());
        assert!(
            msg("[[case]]\nprofile = \"a\"\nexpect = \"w4a9\"\n")
                .starts_with("m.toml:3: bad manifest")
        );
        assert!(
            msg("[[case]]\nprofile = \"a\"\npriority = \"fast\"\nexpect = \"bf16\"\n")
                .starts_with("m.toml:3:")
        );
        assert!(msg("[[case]]\nprofile = \"a\"\n").contains("expect"));
        assert!(msg("").contains("no [[case]]"));
        assert!(
            msg("[[case]]\nprofile = \"a\"\nexpect = \"bf16\"\ncolour = 1\n")
                .starts_with("m.toml:4:")
        );
    }
}

//! The import rules of docs/architecture.md, checked by reading `src/`:
//! plan never imports bench and bench never imports plan; clap only in cli.rs,
//! commands/ and main.rs; no import cycles between the top-level modules, nor between
//! the files of the layers above kernels (commands, plan, bench, profile, output).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file below `src/` (`bench/peaks/mod.rs` -> `bench::peaks`).
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

/// The source without comments (line and block) and string literals, so that a path
/// written in a doc comment or a message is not taken for an import.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            while i < b.len() && !b[i..].starts_with(b"*/") {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'"' {
            // A raw string r#"..."# ends at "#; a plain one at an unescaped quote.
            let raw = i > 0 && (b[i - 1] == b'#' || b[i - 1] == b'r');
            i += 1;
            while i < b.len() {
                if raw && b[i..].starts_with(b"\"#") || !raw && b[i] == b'"' {
                    break;
                }
                if !raw && b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && i + 2 < b.len() && (b[i + 2] == b'\'' || b[i + 1] == b'\\') {
            // A char literal ('"', '\''); lifetimes ('a) are left alone.
            i += 1;
            while i < b.len() && b[i] != b'\'' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

fn ident(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    (&s[..end], &s[end..])
}

/// Parses a path after `crate::`/`super::`/`edgeplan::` (with `{a, b::c}` groups) into
/// every full path it names.
fn paths_from(s: &str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let start = s.len();
    let mut rest = s.trim_start();
    let mut path = prefix;
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            let mut r = group;
            loop {
                r = r.trim_start();
                if let Some(after) = r.strip_prefix('}') {
                    return start - after.len();
                }
                let used = paths_from(r, path.clone(), out);
                r = &r[used..];
                r = r.trim_start();
                r = r.strip_prefix(',').unwrap_or(r);
                if r.is_empty() {
                    return start;
                }
            }
        }
        let (id, after) = ident(rest);
        if id.is_empty() {
            out.push(path);
            return start - rest.len();
        }
        path.push(id.to_string());
        rest = after;
        match rest.strip_prefix("::") {
            Some(next) => rest = next,
            None => {
                out.push(path);
                return start - rest.len();
            }
        }
    }
}

/// Every crate path `code` (of the file whose module is `module`) names, absolute.
fn crate_paths(code: &str, module: &[String], lib: bool) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for (i, _) in code.match_indices("::") {
        let before = &code[..i];
        let word_start = before
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |p| p + 1);
        let word = &before[word_start..];
        if word_start > 0 && bytes[word_start - 1] == b':' {
            continue; // the middle of a longer path
        }
        let base: Vec<String> = match word {
            "crate" if lib => vec![],
            "edgeplan" => vec![],
            "super" => {
                // `super` of a file module is its parent; chains (`super::super`) continue.
                let mut m = module.to_vec();
                m.pop();
                let mut rest = &code[i + 2..];
                while let Some(r) = rest.strip_prefix("super::") {
                    m.pop();
                    rest = r;
                }
                let mut found = Vec::new();
                paths_from(rest, m, &mut found);
                out.extend(found);
                continue;
            }
            _ => continue,
        };
        paths_from(&code[i + 2..], base, &mut out);
    }
    out
}

struct Crate {
    /// module path -> (file, code without comments and strings)
    files: BTreeMap<Vec<String>, (PathBuf, String)>,
}

impl Crate {
    fn load() -> Crate {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut paths = Vec::new();
        rust_files(&src, &mut paths);
        let mut files = BTreeMap::new();
        for p in paths {
            let rel = p.strip_prefix(&src).unwrap().to_path_buf();
            let text = std::fs::read_to_string(&p).unwrap();
            let mut module = module_of(&rel);
            if rel == Path::new("main.rs") || rel == Path::new("lib.rs") {
                module = vec![rel.to_string_lossy().trim_end_matches(".rs").to_string()];
            }
            files.insert(module, (rel, code_only(&text)));
        }
        Crate { files }
    }

    /// The file modules each file imports (longest module prefix of each path it names).
    fn file_edges(&self) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
        let mut edges = BTreeMap::new();
        for (module, (rel, code)) in &self.files {
            let lib = rel != Path::new("main.rs");
            let mut targets = BTreeSet::new();
            for path in crate_paths(code, module, lib) {
                let target = (1..=path.len())
                    .rev()
                    .map(|n| path[..n].to_vec())
                    .find(|m| self.files.contains_key(m));
                if let Some(t) = target.filter(|t| t != module && !module.starts_with(t)) {
                    targets.insert(t);
                }
            }
            edges.insert(module.clone(), targets);
        }
        edges
    }
}

fn cycle(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Option<Vec<Vec<String>>> {
    fn visit(
        n: &Vec<String>,
        edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<Vec<String>, u8>,
        stack: &mut Vec<Vec<String>>,
    ) -> Option<Vec<Vec<String>>> {
        match state.get(n) {
            Some(2) => return None,
            Some(1) => {
                let at = stack.iter().position(|m| m == n).unwrap();
                let mut c = stack[at..].to_vec();
                c.push(n.clone());
                return Some(c);
            }
            _ => {}
        }
        state.insert(n.clone(), 1);
        stack.push(n.clone());
        for m in edges.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, edges, state, stack) {
                return Some(c);
            }
        }
        stack.pop();
        state.insert(n.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if let Some(c) = visit(n, edges, &mut state, &mut Vec::new()) {
            return Some(c);
        }
    }
    None
}

fn show(c: &[Vec<String>]) -> String {
    c.iter()
        .map(|m| m.join("::"))
        .collect::<Vec<_>>()
        .join(" -> ")
}

#[test]
fn plan_and_bench_never_import_each_other() {
    let krate = Crate::load();
    for (module, targets) in krate.file_edges() {
        let top = module[0].as_str();
        for t in &targets {
            let bad = (top == "plan" && t[0] == "bench") || (top == "bench" && t[0] == "plan");
            assert!(!bad, "{} imports {}", module.join("::"), t.join("::"));
        }
    }
}

#[test]
fn report_and_verdict_do_not_import_each_other() {
    let edges = Crate::load().file_edges();
    let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    assert!(
        !edges[&m("bench::verdict")].contains(&m("bench::report")),
        "verdict imports report"
    );
    assert!(
        edges[&m("bench::report")].contains(&m("bench::verdict")),
        "the report holds the verdict (the one allowed direction)"
    );
}

#[test]
fn clap_only_in_cli_commands_and_main() {
    let krate = Crate::load();
    for (module, (rel, code)) in &krate.files {
        let allowed = matches!(module[0].as_str(), "cli" | "commands" | "main");
        if !allowed {
            assert!(!code.contains("clap::"), "{} uses clap", rel.display());
            assert!(!code.contains("use clap"), "{} uses clap", rel.display());
            let cli = krate.file_edges()[module]
                .iter()
                .any(|t| t[0] == "cli" || t[0] == "commands");
            assert!(!cli, "{} imports cli or commands", rel.display());
        }
    }
}

#[test]
fn only_commands_print_and_exit() {
    // kernels' own test harness prints SKIPPED lines; every other domain returns values.
    let quiet = [
        "plan", "bench", "probe", "profile", "model", "arch", "cli", "error", "engine", "contract",
    ];
    for (module, (rel, code)) in &Crate::load().files {
        if !quiet.contains(&module[0].as_str()) {
            continue;
        }
        for needle in [
            "println!",
            "print!(",
            "std::process::exit",
            "stdout()",
            "stderr()",
        ] {
            assert!(!code.contains(needle), "{} uses {needle}", rel.display());
        }
    }
}

#[test]
fn no_cycles_between_top_level_modules() {
    let mut top: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (module, targets) in Crate::load().file_edges() {
        let from = vec![module[0].clone()];
        let entry = top.entry(from.clone()).or_default();
        for t in targets {
            if t[0] != from[0] {
                entry.insert(vec![t[0].clone()]);
            }
        }
    }
    assert!(
        top[&vec!["plan".to_string()]].contains(&vec!["profile".to_string()]),
        "the parser must see plan -> profile: {top:?}"
    );
    if let Some(c) = cycle(&top) {
        panic!("import cycle between top-level modules: {}", show(&c));
    }
}

#[test]
fn no_cycles_between_files_above_kernels() {
    let mine = [
        "commands", "plan", "bench", "profile", "output", "cli", "error", "engine", "contract",
    ];
    let edges: BTreeMap<_, _> = Crate::load()
        .file_edges()
        .into_iter()
        .filter(|(m, _)| mine.contains(&m[0].as_str()))
        .map(|(m, t)| {
            let t: BTreeSet<Vec<String>> = t
                .into_iter()
                .filter(|t| mine.contains(&t[0].as_str()))
                .collect();
            (m, t)
        })
        .collect();
    assert!(
        edges[&vec!["bench".to_string(), "driver".to_string()]]
            .contains(&vec!["bench".to_string(), "race".to_string()]),
        "the parser must see bench::driver -> bench::race"
    );
    if let Some(c) = cycle(&edges) {
        panic!("import cycle between files: {}", show(&c));
    }
}

#[test]
fn the_path_parser_reads_groups_and_super() {
    let m: Vec<String> = vec!["bench".into(), "driver".into()];
    let found = crate_paths(
        "use super::{a, b::{c, d}}; use crate::plan::x; // crate::bench::no\n",
        &m,
        true,
    );
    let shown: Vec<String> = found.iter().map(|p| p.join("::")).collect();
    assert!(shown.contains(&"bench::a".to_string()), "{shown:?}");
    assert!(shown.contains(&"bench::b::d".to_string()), "{shown:?}");
    assert!(shown.contains(&"plan::x".to_string()), "{shown:?}");
    let code = code_only("let s = \"crate::bench\"; // crate::plan\n");
    assert!(crate_paths(&code, &m, true).is_empty());
}

/// The longest a function outside the test modules may be, in lines from its `fn` line
/// to its closing brace: about a screen, so that each one does one job.
const MAX_FN_LINES: usize = 90;

/// Functions still longer than [`MAX_FN_LINES`], each with the length it may not grow
/// past: (file under `src/`, function, lines). A ratchet: when one is split, drop its
/// entry; add none. An entry whose function is gone or short again is not an error, so
/// that a split made on another branch merges cleanly.
const LONG_FNS: &[(&str, &str, usize)] = &[
    // The probe's readers of /proc, /sys and Android properties: one long pass over
    // the source text each, not yet split.
    ("probe/mod.rs", "cpu_facts", 187),
    ("probe/mod.rs", "probe", 152),
    ("probe/android.rs", "read", 158),
    ("probe/cpuinfo.rs", "dialect", 146),
    ("probe/cpuinfo.rs", "parse", 111),
    ("probe/cpus.rs", "read", 117),
    ("probe/cgroup.rs", "read", 105),
    // The probe's table: one row per profile field, in display order.
    ("probe/render.rs", "table", 169),
    // A lookup table: one match arm per Arm MIDR part number.
    ("probe/arm/midr.rs", "core_name", 166),
    // `plan`'s command: argument checks, then one branch per output mode.
    ("commands/plan.rs", "run", 97),
];

/// Each function in `text` outside `#[cfg(test)]` modules: (name, first line, lines).
/// A function ends at the first later line that is its own indentation and `}`, as
/// rustfmt writes it; a bodiless one (`fn f();`) is skipped.
fn fn_lengths(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line == "#[cfg(test)]" && lines.get(i + 1).is_some_and(|l| l.starts_with("mod ")) {
            // Skip the test module to its closing brace at column 0.
            i += 2;
            while i < lines.len() && lines[i] != "}" {
                i += 1;
            }
            continue;
        }
        let indent = &line[..line.len() - line.trim_start().len()];
        let mut rest = line.trim_start();
        for prefix in [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "const ",
            "async ",
            "unsafe ",
            "extern \"C\" ",
        ] {
            rest = rest.strip_prefix(prefix).unwrap_or(rest);
        }
        if let Some(sig) = rest.strip_prefix("fn ") {
            let name: String = sig
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let end = if line.trim_end().ends_with(';') {
                None
            } else if line.contains('{') && line.trim_end().ends_with('}') {
                Some(i)
            } else {
                let close = format!("{indent}}}");
                (i + 1..lines.len()).find(|&j| lines[j] == close)
            };
            if let Some(end) = end {
                found.push((name, i + 1, end - i + 1));
            }
        }
        i += 1;
    }
    found
}

#[test]
fn functions_stay_under_a_screen() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut too_long = Vec::new();
    let mut seen = 0;
    for path in &files {
        let rel = path.strip_prefix(&src).unwrap();
        let rel = rel.to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(path).unwrap();
        for (name, line, len) in fn_lengths(&text) {
            seen += 1;
            let limit = LONG_FNS
                .iter()
                .find(|(f, n, _)| *f == rel && *n == name)
                .map_or(MAX_FN_LINES, |e| e.2);
            if len > limit {
                too_long.push(format!(
                    "src/{rel}:{line} fn {name}: {len} lines (limit {limit})"
                ));
            }
        }
    }
    assert!(seen > 500, "the scan found only {seen} functions");
    assert!(
        too_long.is_empty(),
        "functions too long; split them into helpers with one job each:\n{}",
        too_long.join("\n")
    );
}

#[test]
fn the_function_scanner_measures_bodies_and_skips_tests() {
    let text = "/// doc fn not_this()\npub fn a(\n    x: u8,\n) -> u8 {\n    x\n}\n\
                impl T {\n    pub(crate) fn b() {}\n    fn c() {\n        let s = \"}\";\n    }\n}\n\
                trait U {\n    fn d();\n}\n\
                #[cfg(test)]\nmod tests {\n    fn e() {\n    }\n}\nconst fn f() {\n}\n";
    let found = fn_lengths(text);
    let got: Vec<(&str, usize, usize)> = found
        .iter()
        .map(|(n, l, len)| (n.as_str(), *l, *len))
        .collect();
    assert_eq!(got, [("a", 2, 5), ("b", 8, 1), ("c", 9, 3), ("f", 21, 2)]);
}

/// `code` without its `#[cfg(test)] mod ... { }` blocks (rustfmt's layout: the block
/// closes with `}` at column 0).
fn without_test_modules(code: &str) -> String {
    let mut out = String::new();
    let mut lines = code.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]" && lines.peek().is_some_and(|l| l.starts_with("mod ")) {
            let opener = lines.next().unwrap_or("");
            if !opener.trim_end().ends_with(';') {
                for l in lines.by_ref() {
                    if l == "}" {
                        break;
                    }
                }
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Every file edgeplan opens goes through `fsx` (capped, non-blocking, no-follow where
/// it matters): `std::fs::read*` and `File::open` appear only there, outside tests.
#[test]
fn files_are_read_only_through_fsx() {
    let test_only = ["plan/odd_inputs.rs", "proptests.rs"];
    let mut found = Vec::new();
    for (rel, code) in Crate::load().files.values() {
        let shown = rel.to_string_lossy().replace('\\', "/");
        let tests = shown.ends_with("tests.rs") || shown.contains("/tests/");
        if shown == "fsx.rs" || tests || test_only.contains(&shown.as_str()) {
            continue;
        }
        let code = without_test_modules(code);
        for needle in [
            "std::fs::read",
            "fs::read(",
            "fs::read_to_string",
            "fs::read_dir",
            "fs::read_link",
            "File::open",
        ] {
            if code.contains(needle) {
                found.push(format!("src/{shown}: {needle}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "open files through crate::fsx (read_capped, open_file, read_dir):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_test_module_stripper_keeps_code_outside_tests() {
    let code = "fn a() {}\n#[cfg(test)]\nmod tests {\n    fn b() { std::fs::read(\"\"); }\n}\nfn c() {}\n#[cfg(test)]\nmod odd;\n";
    let kept = without_test_modules(code);
    assert_eq!(kept, "fn a() {}\nfn c() {}\n");
}

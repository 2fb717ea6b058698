//! Built-in model presets: `presets.toml`, one entry per model, each the Hugging Face
//! `config.json` of a public copy with its source, so presets and user configs go
//! through the same reader.
//!
//! `qwen3-1.7b` is also the shape edgeplan assumes for the study's 1.7B model (the
//! study's checkpoint itself is not public).

use std::sync::OnceLock;

/// One preset: the name `--model` takes, the Hugging Face repository it stands for, where
/// its config comes from, and the config text.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preset {
    pub name: String,
    /// The Hugging Face repository id, `ORG/NAME`.
    pub repo: String,
    /// A public copy of the config: a GitHub file at a fixed commit (docs and tests).
    #[cfg_attr(not(test), allow(dead_code))]
    pub source: String,
    /// The entry within `source` when that file holds several configs.
    #[serde(default)]
    #[cfg_attr(not(test), allow(dead_code))]
    pub entry: Option<String>,
    /// The file under `fixtures/models/` with the same config (read by tests only).
    #[serde(default)]
    #[cfg_attr(not(test), allow(dead_code))]
    pub fixture: Option<String>,
    /// The `config.json` text.
    pub config: String,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    preset: Vec<Preset>,
}

const PRESETS_TOML: &str = include_str!("presets.toml");

/// Every preset, in the file's order.
pub fn all() -> &'static [Preset] {
    static PRESETS: OnceLock<Vec<Preset>> = OnceLock::new();
    PRESETS.get_or_init(|| {
        // Built-in data, parsed by the tests below: a failure is a build defect.
        toml::from_str::<Table>(PRESETS_TOML)
            .expect("src/model/presets.toml parses (tested)")
            .preset
    })
}

/// The preset named `name` (any case).
pub fn by_name(name: &str) -> Option<&'static Preset> {
    all().iter().find(|p| p.name.eq_ignore_ascii_case(name))
}

/// The preset for the Hugging Face repository `repo` (any case, as the Hub matches).
pub fn by_repo(repo: &str) -> Option<&'static Preset> {
    all().iter().find(|p| p.repo.eq_ignore_ascii_case(repo))
}

/// The presets closest to a mistyped `input`, best first: at most three, each close
/// enough to be a plausible typo (Jaro-Winkler similarity of at least 0.8, the threshold
/// clap uses for its own "a similar value exists" hints) and nearly as close as the best
/// (within 0.02), so `qwen3-1.8b` names `qwen3-1.7b`, not every Qwen3. `key` picks what
/// is compared: the preset's name or its repository id.
pub fn closest(input: &str, key: fn(&Preset) -> &str) -> Vec<&'static Preset> {
    let input = input.to_ascii_lowercase();
    let mut scored: Vec<(f64, &Preset)> = all()
        .iter()
        .map(|p| {
            (
                strsim::jaro_winkler(&input, &key(p).to_ascii_lowercase()),
                p,
            )
        })
        .filter(|(score, _)| *score >= 0.8)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let best = scored.first().map_or(0.0, |s| s.0);
    scored
        .into_iter()
        .take_while(|(score, _)| best - score <= 0.02)
        .take(3)
        .map(|(_, p)| p)
        .collect()
}

/// The Markdown table of the presets that docs/models.md shows (tested to match).
#[cfg(test)]
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| preset | Hugging Face repository | model_type | context | source |\n|---|---|---|---|---|\n",
    );
    for p in all() {
        let shape = crate::model::ModelShape::from_config_json(&p.config, &p.name).unwrap();
        let family = shape.model_type.unwrap_or_default();
        let context = shape
            .context_limit
            .map_or(String::new(), |c| c.tokens.to_string());
        let source = match &p.entry {
            Some(entry) => format!("[{}]({}), {entry}", short_source(&p.source), p.source),
            None => format!("[{}]({})", short_source(&p.source), p.source),
        };
        out.push_str(&format!(
            "| `{}` | `{}` | {family} | {context} | {source} |\n",
            p.name, p.repo
        ));
    }
    out
}

#[cfg(test)]
/// `owner/repo:path` for a `https://github.com/owner/repo/blob/COMMIT/path` link.
fn short_source(url: &str) -> String {
    let rest = url.trim_start_matches("https://github.com/");
    let mut parts = rest.splitn(5, '/');
    let (owner, repo) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = parts.nth(2).unwrap_or("").replace("%20", " ");
    format!("{owner}/{repo}:{path}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ModelShape;

    #[test]
    fn every_preset_parses_cites_a_source_and_is_unique() {
        let presets = all();
        assert!(presets.len() >= 25, "{} presets", presets.len());
        for p in presets {
            let shape = ModelShape::from_config_json(&p.config, &p.name)
                .unwrap_or_else(|e| panic!("{}: {e:#}", p.name));
            assert_eq!(
                shape.layer_kinds.len() as u64,
                shape.num_hidden_layers,
                "{}",
                p.name
            );
            // A GitHub file at a fixed commit: the copy can be re-read as it was.
            let rest = p.source.strip_prefix("https://github.com/").expect(&p.name);
            let parts: Vec<&str> = rest.splitn(5, '/').collect();
            assert_eq!(parts.len(), 5, "{}: {}", p.name, p.source);
            assert_eq!(parts[2], "blob", "{}", p.name);
            assert!(
                parts[3].len() == 40 && parts[3].bytes().all(|b| b.is_ascii_hexdigit()),
                "{}: not a commit: {}",
                p.name,
                parts[3]
            );
            let (org, name) = p.repo.split_once('/').expect(&p.name);
            assert!(!org.is_empty() && !name.is_empty() && !name.contains('/'));
            assert_eq!(p.name, p.name.to_ascii_lowercase(), "names are lower case");
            let same_name = presets.iter().filter(|q| q.name == p.name).count();
            let same_repo = presets
                .iter()
                .filter(|q| q.repo.eq_ignore_ascii_case(&p.repo));
            assert_eq!((same_name, same_repo.count()), (1, 1), "{}", p.name);
        }
        // The names edgeplan has always had still work.
        for name in ["qwen3-1.7b", "qwen2.5-0.5b", "llama-3.1-8b"] {
            assert!(by_name(name).is_some(), "{name}");
        }
    }

    #[test]
    fn a_preset_with_a_fixture_has_the_fixture_shape() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/models");
        let mut compared = 0;
        for p in all() {
            let Some(fixture) = &p.fixture else { continue };
            let path = root.join(fixture);
            let mut from_fixture = ModelShape::from_config_file(&path).expect(fixture);
            let mut from_preset = ModelShape::from_config_json(&p.config, &p.name).unwrap();
            // The shape's name is where it came from; everything else must agree.
            from_fixture.name.clear();
            from_preset.name.clear();
            assert_eq!(from_preset, from_fixture, "{} vs {fixture}", p.name);
            compared += 1;
        }
        assert!(compared >= 20, "{compared} presets compared with a fixture");
    }

    #[test]
    fn lookups_ignore_case_and_typos_get_the_closest_names() {
        assert_eq!(by_name("Qwen3-1.7B").unwrap().repo, "Qwen/Qwen3-1.7B");
        assert_eq!(by_repo("qwen/qwen3-1.7b").unwrap().name, "qwen3-1.7b");
        assert!(by_repo("Qwen/Qwen3-1.7B-Base").is_none());
        let names = |v: Vec<&Preset>| v.iter().map(|p| p.name.clone()).collect::<Vec<_>>();
        let typo = names(closest("qwen3-1.7", |p| &p.name));
        assert_eq!(
            typo.first().map(String::as_str),
            Some("qwen3-1.7b"),
            "{typo:?}"
        );
        assert!(typo.len() <= 3);
        assert_eq!(
            names(closest("lama-3.1-8b", |p| &p.name))
                .first()
                .map(String::as_str),
            Some("llama-3.1-8b")
        );
        let near = names(closest("qwen3-1.8b", |p| &p.name));
        assert_eq!(near[0], "qwen3-1.7b");
        assert!(near.len() < 3, "not every Qwen3: {near:?}");
        assert!(closest("zzzz", |p| &p.name).is_empty());
        let repo = names(closest("meta-llama/Llama-3.1-8B-Instruct", |p| &p.repo));
        assert_eq!(
            repo.first().map(String::as_str),
            Some("llama-3.1-8b"),
            "{repo:?}"
        );
    }

    #[test]
    fn the_docs_list_every_preset() {
        let docs = include_str!("../../docs/models.md");
        let table = markdown_table();
        assert!(
            docs.contains(&table),
            "docs/models.md must hold this table (paste it in):\n{table}"
        );
    }
}

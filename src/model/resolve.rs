//! What `--model` names: an existing file or directory, a preset, or a Hugging Face
//! repository id (`ORG/NAME`) whose config is in the local Hugging Face cache or is a
//! preset's.

use std::path::Path;

use super::ModelShape;
use super::hub::{self, HubEnv};
use super::presets::{self, Preset};
use crate::error::{data_error, no_input};

/// Resolves `spec`, in this order:
/// 1. an existing path: the `config.json` it is, or the directory that holds one;
/// 2. a preset name (any case);
/// 3. `ORG/NAME`: the cached `config.json` of that repository (the user's own file wins),
///    else the preset whose repository it is, else exit 66 saying where it looked and
///    how to download it;
/// 4. anything else that looks like a path (`/`, `.json`): exit 66, no such file;
/// 5. else exit 65, naming the closest presets.
pub fn load(spec: &str, env: &HubEnv) -> anyhow::Result<ModelShape> {
    let path = Path::new(spec);
    if path.exists() {
        return ModelShape::from_config_file(path);
    }
    if let Some(preset) = presets::by_name(spec) {
        return Ok(preset_shape(preset));
    }
    if hub::is_repo_id(spec) {
        return from_repo(spec, env);
    }
    if spec.contains('/') || spec.ends_with(".json") {
        return ModelShape::from_config_file(path);
    }
    Err(data_error(unknown_name(spec)))
}

/// A preset's shape, named by the preset.
pub fn preset_shape(preset: &Preset) -> ModelShape {
    let mut shape = ModelShape::from_config_json(&preset.config, &preset.name)
        // Every preset is parsed by the presets' tests; a failure is a build defect.
        .unwrap_or_else(|e| panic!("built-in preset {}: {e:#}", preset.name));
    shape.name = preset.name.clone();
    shape
}

fn from_repo(repo: &str, env: &HubEnv) -> anyhow::Result<ModelShape> {
    let cache = env.cache_dir();
    let cached = match cache.as_deref() {
        Some(dir) => hub::cached_config(dir, repo)?,
        None => None,
    };
    if let Some(config) = cached {
        let mut shape =
            ModelShape::from_config_json(&config.text, &config.path.display().to_string())?;
        shape.name = repo.to_owned();
        return Ok(shape);
    }
    let looked = match &cache {
        Some(dir) => format!(
            "not in the Hugging Face cache ({})",
            hub::repo_dir(dir, repo).display()
        ),
        None => {
            "no Hugging Face cache to look in (HF_HUB_CACHE, HF_HOME and HOME are unset)".to_owned()
        }
    };
    if let Some(preset) = presets::by_repo(repo) {
        let mut shape = preset_shape(preset);
        shape.assumed.push(format!(
            "{repo} is {looked}: the built-in preset {} (a published copy of its config.json) is used",
            preset.name
        ));
        return Ok(shape);
    }
    let similar = match presets::closest(repo, |p| &p.repo).first() {
        Some(p) => format!("; a similar preset: {} ({})", p.name, p.repo),
        None => String::new(),
    };
    Err(no_input(format!(
        "{repo}: no such file, and {looked}; get its config with `hf download {repo} config.json` \
         (older huggingface_hub: `huggingface-cli download {repo} config.json`), or give a config.json path{similar}"
    )))
}

/// The one line for a name that is nothing edgeplan knows.
fn unknown_name(spec: &str) -> String {
    let close = presets::closest(spec, |p| &p.name);
    let names: Vec<&str> = close.iter().map(|p| p.name.as_str()).collect();
    let hint = match names.as_slice() {
        [] => {
            let all = presets::all();
            format!(
                "the {} presets (e.g. {}) are listed in docs/models.md",
                all.len(),
                all.iter()
                    .take(3)
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
        [one] => format!("did you mean {one}?"),
        [first @ .., last] => format!("did you mean {} or {last}?", first.join(", ")),
    };
    format!("unknown model {spec:?}: not a preset, a file, or a Hugging Face ORG/NAME; {hint}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Exit, exit_for};

    fn cache_env(dir: &Path) -> HubEnv {
        HubEnv {
            hf_hub_cache: Some(dir.as_os_str().to_owned()),
            ..HubEnv::default()
        }
    }

    /// `models--ORG--NAME` as huggingface_hub writes it, config.json a symlink into blobs/.
    fn cache_repo(root: &Path, repo: &str, config: &str) {
        let dir = hub::repo_dir(root, repo);
        let commit = "0123456789abcdef0123456789abcdef01234567";
        let snap = dir.join("snapshots").join(commit);
        std::fs::create_dir_all(&snap).unwrap();
        std::fs::create_dir_all(dir.join("blobs")).unwrap();
        std::fs::create_dir_all(dir.join("refs")).unwrap();
        std::fs::write(dir.join("blobs").join("9f3c"), config).unwrap();
        std::os::unix::fs::symlink("../../blobs/9f3c", snap.join("config.json")).unwrap();
        std::fs::write(dir.join("refs").join("main"), format!("{commit}\n")).unwrap();
    }

    #[test]
    fn a_repo_id_reads_the_cache_first_then_the_preset_then_says_how_to_get_it() {
        let tmp = tempfile::tempdir().unwrap();
        let env = cache_env(tmp.path());
        // Not cached, but a preset's repository: the preset, with a note saying so.
        let m = load("Qwen/Qwen3-1.7B", &env).unwrap();
        assert_eq!(m.name, "qwen3-1.7b");
        assert_eq!(m.hidden_size, 2048);
        assert!(
            m.assumed
                .iter()
                .any(|n| n.contains("not in the Hugging Face cache"))
        );
        // Cached: the user's own file wins (here a different, smaller config).
        let mut own: serde_json::Value =
            serde_json::from_str(&presets::by_name("qwen3-1.7b").unwrap().config).unwrap();
        own["num_hidden_layers"] = 4.into();
        cache_repo(tmp.path(), "Qwen/Qwen3-1.7B", &own.to_string());
        let m = load("Qwen/Qwen3-1.7B", &env).unwrap();
        assert_eq!(
            (m.name.as_str(), m.num_hidden_layers),
            ("Qwen/Qwen3-1.7B", 4)
        );
        assert!(m.assumed.is_empty(), "{:?}", m.assumed);
        // Neither: 66, one line naming the repository, where it looked and how to get it.
        let err = load("meta-llama/Llama-3.1-8B-Instruct", &env).unwrap_err();
        assert_eq!(exit_for(&err), Exit::NoInput);
        let msg = err.to_string();
        assert!(!msg.contains('\n'), "{msg}");
        for part in [
            "meta-llama/Llama-3.1-8B-Instruct",
            "models--meta-llama--Llama-3.1-8B-Instruct",
            "hf download meta-llama/Llama-3.1-8B-Instruct config.json",
            "huggingface-cli download",
            "llama-3.1-8b (meta-llama/Llama-3.1-8B)",
        ] {
            assert!(msg.contains(part), "{part}: {msg}");
        }
    }

    #[test]
    fn hf_home_places_the_cache_too() {
        let tmp = tempfile::tempdir().unwrap();
        cache_repo(
            &tmp.path().join("hub"),
            "Org/Tiny",
            &presets::by_name("smollm2-135m").unwrap().config,
        );
        let env = HubEnv {
            hf_home: Some(tmp.path().as_os_str().to_owned()),
            ..HubEnv::default()
        };
        assert_eq!(load("Org/Tiny", &env).unwrap().hidden_size, 576);
        let none = load("Org/Tiny", &HubEnv::default()).unwrap_err();
        assert!(none.to_string().contains("HOME are unset"), "{none}");
    }

    #[test]
    fn an_existing_path_wins_over_a_repo_id() {
        // ./Qwen/Qwen3-1.7B as a local directory: read as the path it is.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("Qwen/Qwen3-1.7B");
        std::fs::create_dir_all(&dir).unwrap();
        let mut own: serde_json::Value =
            serde_json::from_str(&presets::by_name("qwen3-1.7b").unwrap().config).unwrap();
        own["num_hidden_layers"] = 2.into();
        std::fs::write(dir.join("config.json"), own.to_string()).unwrap();
        let m = load(dir.to_str().unwrap(), &HubEnv::default()).unwrap();
        assert_eq!(m.num_hidden_layers, 2);
    }

    #[test]
    fn a_mistyped_preset_gets_the_closest_names_only() {
        let err = load("qwen3-1.8b", &HubEnv::default()).unwrap_err();
        assert_eq!(exit_for(&err), Exit::DataErr);
        let msg = err.to_string();
        assert!(msg.contains("did you mean qwen3-1.7b"), "{msg}");
        assert!(!msg.contains("gemma"), "only the close ones: {msg}");
        let err = load("zzzz", &HubEnv::default()).unwrap_err();
        assert_eq!(exit_for(&err), Exit::DataErr);
        assert!(err.to_string().contains("docs/models.md"), "{err}");
        // Path-like names that do not exist stay "no such file" (66).
        for spec in ["./missing/config.json", "missing.json", "/no/such/dir/x"] {
            let err = load(spec, &HubEnv::default()).unwrap_err();
            assert_eq!(exit_for(&err), Exit::NoInput, "{spec}: {err}");
        }
    }
}

//! A model's `config.json` from the local Hugging Face cache, for `--model ORG/NAME`.
//!
//! The cache is the directory `huggingface_hub` writes (`src/huggingface_hub/constants.py`
//! at 03333b689b5a2dee604676791c0792ede6246a31, `HF_HOME` and `HF_HUB_CACHE`):
//! `$HF_HUB_CACHE`, else the legacy `$HUGGINGFACE_HUB_CACHE`, else `$HF_HOME/hub`, else
//! `$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`; a leading `~/` is
//! the home directory. A repository `ORG/NAME` lives in `models--ORG--NAME/`:
//! `refs/main` holds the commit of the snapshot last downloaded from `main`, and
//! `snapshots/<commit>/config.json` is the file (usually a symlink into `blobs/`).
//! Nothing is downloaded: edgeplan never reaches the network.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The environment variables that place the cache, read once by the caller so tests can
/// give their own.
#[derive(Debug, Clone, Default)]
pub struct HubEnv {
    pub hf_hub_cache: Option<OsString>,
    pub huggingface_hub_cache: Option<OsString>,
    pub hf_home: Option<OsString>,
    pub xdg_cache_home: Option<OsString>,
    pub home: Option<OsString>,
}

impl HubEnv {
    /// The process's own environment.
    pub fn from_process() -> HubEnv {
        // An empty variable counts as unset (huggingface_hub would take it as the current
        // directory, which is never what was meant).
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        HubEnv {
            hf_hub_cache: var("HF_HUB_CACHE"),
            huggingface_hub_cache: var("HUGGINGFACE_HUB_CACHE"),
            hf_home: var("HF_HOME"),
            xdg_cache_home: var("XDG_CACHE_HOME"),
            home: var("HOME"),
        }
    }

    /// The hub cache directory, or `None` when no variable places it (no `HOME`).
    pub fn cache_dir(&self) -> Option<PathBuf> {
        if let Some(dir) = self
            .hf_hub_cache
            .as_ref()
            .or(self.huggingface_hub_cache.as_ref())
        {
            return Some(self.expand(dir));
        }
        if let Some(home) = &self.hf_home {
            return Some(self.expand(home).join("hub"));
        }
        let cache = match (&self.xdg_cache_home, &self.home) {
            (Some(xdg), _) => self.expand(xdg),
            (None, Some(home)) => Path::new(home).join(".cache"),
            (None, None) => return None,
        };
        Some(cache.join("huggingface").join("hub"))
    }
}

impl HubEnv {
    /// `~/x` as `$HOME/x` (Python's `expanduser`); anything else as is.
    fn expand(&self, value: &OsString) -> PathBuf {
        let path = Path::new(value);
        match (path.strip_prefix("~"), &self.home) {
            (Ok(rest), Some(home)) => Path::new(home).join(rest),
            _ => path.to_path_buf(),
        }
    }
}

/// Whether `spec` has the shape of a Hugging Face repository id: `ORG/NAME`, each part
/// of letters, digits, `-`, `_` and `.`, neither starting with `.` (so no `..`), and not
/// ending in `.json` (that is a file).
pub fn is_repo_id(spec: &str) -> bool {
    let Some((org, name)) = spec.split_once('/') else {
        return false;
    };
    let part = |s: &str| {
        !s.is_empty()
            && s.len() <= 96
            && !s.starts_with('.')
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    };
    part(org) && part(name) && !spec.ends_with(".json")
}

/// Where `repo` was looked for, for the error that says it is not there.
pub fn repo_dir(cache: &Path, repo: &str) -> PathBuf {
    cache.join(format!("models--{}", repo.replace('/', "--")))
}

/// The most `refs/main` may hold: a commit and a newline, with room to spare.
const MAX_REF_BYTES: u64 = 4096;

/// The most of a cached `config.json` read (the same cap as a named one).
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// The most snapshot directories looked at when `refs/main` is missing.
const MAX_SNAPSHOTS: usize = 4096;

/// A cached `config.json`: where it is and the text read from it (read once: nothing
/// swapped in after a check is read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cached {
    pub path: PathBuf,
    pub text: String,
}

/// The cached `config.json` of `repo` (an id [`is_repo_id`] accepts), or `None` when the
/// cache has no snapshot of it with one. The snapshot is the one `refs/main` names; a
/// cache without `refs/main` (a download of another revision) is used when it holds
/// exactly one snapshot. A ref that is not a plain hex commit is ignored: it never
/// becomes part of a path. Every file is read through [`crate::fsx::read_capped`] as a
/// file edgeplan found: `refs/main` no-follow and at most 4 KiB, a config at most
/// 16 MiB; a FIFO, device, link to `/dev/zero` or oversized file there is a coded error
/// (65) naming it, never a hang, never skipped in silence.
pub fn cached_config(cache: &Path, repo: &str) -> anyhow::Result<Option<Cached>> {
    use crate::fsx::Source;
    let dir = repo_dir(cache, repo);
    let snapshots = dir.join("snapshots");
    let refs = dir.join("refs").join("main");
    let main = match read_found(
        &refs,
        "Hugging Face ref",
        MAX_REF_BYTES,
        Source::FoundNoFollow,
    )? {
        Some(text) => text,
        None => return only_snapshot(&snapshots),
    };
    let commit = main.trim();
    let plain = (7..=64).contains(&commit.len()) && commit.bytes().all(|b| b.is_ascii_hexdigit());
    if !plain {
        return Ok(None);
    }
    let path = snapshots.join(commit).join("config.json");
    let text = read_found(&path, "model config", MAX_CONFIG_BYTES, Source::Found)?;
    Ok(text.map(|text| Cached { path, text }))
}

/// The text at `path`, `None` when it does not exist (or a directory on the way is not
/// one); any other failure is the coded error of [`crate::error::read_text_capped`].
fn read_found(
    path: &Path,
    what: &str,
    max: u64,
    source: crate::fsx::Source,
) -> anyhow::Result<Option<String>> {
    match crate::fsx::read_text(path, max, source) {
        Ok(text) => Ok(Some(text)),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(crate::error::capped_read_error(path, what, max, &e)),
    }
}

/// The `config.json` of the one snapshot there, `None` for none or several.
fn only_snapshot(snapshots: &Path) -> anyhow::Result<Option<Cached>> {
    let Ok(entries) = crate::fsx::read_dir(snapshots) else {
        return Ok(None);
    };
    let mut found = None;
    for entry in entries.filter_map(Result::ok).take(MAX_SNAPSHOTS) {
        let path = entry.path().join("config.json");
        let Some(text) = read_found(
            &path,
            "model config",
            MAX_CONFIG_BYTES,
            crate::fsx::Source::Found,
        )?
        else {
            continue;
        };
        if found.is_some() {
            return Ok(None);
        }
        found = Some(Cached { path, text });
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HubEnv {
        let get = |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| OsString::from(v))
        };
        HubEnv {
            hf_hub_cache: get("HF_HUB_CACHE"),
            huggingface_hub_cache: get("HUGGINGFACE_HUB_CACHE"),
            hf_home: get("HF_HOME"),
            xdg_cache_home: get("XDG_CACHE_HOME"),
            home: get("HOME"),
        }
    }

    #[test]
    fn the_cache_directory_follows_huggingface_hub() {
        let all = [
            ("HF_HUB_CACHE", "/c"),
            ("HUGGINGFACE_HUB_CACHE", "/legacy"),
            ("HF_HOME", "/h"),
            ("XDG_CACHE_HOME", "/x"),
            ("HOME", "/u"),
        ];
        let dir = |n: usize| env(&all[n..]).cache_dir().unwrap();
        assert_eq!(dir(0), Path::new("/c"));
        assert_eq!(dir(1), Path::new("/legacy"));
        assert_eq!(dir(2), Path::new("/h/hub"));
        assert_eq!(dir(3), Path::new("/x/huggingface/hub"));
        assert_eq!(dir(4), Path::new("/u/.cache/huggingface/hub"));
        let tilde = env(&[("HF_HOME", "~/hf"), ("HOME", "/u")]).cache_dir();
        assert_eq!(tilde.unwrap(), Path::new("/u/hf/hub"));
        assert_eq!(env(&[]).cache_dir(), None);
    }

    #[test]
    fn repo_ids_are_org_slash_name_and_nothing_else() {
        for ok in ["Qwen/Qwen3-1.7B", "meta-llama/Llama-3.2-1B", "a_b/c.d-e"] {
            assert!(is_repo_id(ok), "{ok}");
        }
        for bad in [
            "qwen3-1.7b",
            "./Qwen/Qwen3",
            "/abs/path",
            "a/b/c",
            "../x",
            "a/..",
            "a/.hidden",
            "org/config.json",
            "a/",
            "a b/c",
        ] {
            assert!(!is_repo_id(bad), "{bad}");
        }
    }

    /// A cache as huggingface_hub writes it: refs/main, a snapshot whose config.json is a
    /// symlink into blobs/.
    fn fake_cache(root: &Path, repo: &str, config: &str, commit: &str) -> PathBuf {
        let dir = repo_dir(root, repo);
        std::fs::create_dir_all(dir.join("refs")).unwrap();
        std::fs::create_dir_all(dir.join("blobs")).unwrap();
        let snap = dir.join("snapshots").join(commit);
        std::fs::create_dir_all(&snap).unwrap();
        std::fs::write(dir.join("blobs").join("0123abcd"), config).unwrap();
        std::os::unix::fs::symlink("../../blobs/0123abcd", snap.join("config.json")).unwrap();
        std::fs::write(dir.join("refs").join("main"), commit).unwrap();
        snap.join("config.json")
    }

    fn found(root: &Path, repo: &str) -> Option<PathBuf> {
        cached_config(root, repo).unwrap().map(|c| c.path)
    }

    #[test]
    fn a_cached_snapshot_is_found_through_refs_main() {
        let tmp = tempfile::tempdir().unwrap();
        let commit = "a".repeat(40);
        let path = fake_cache(tmp.path(), "Org/Model", "{}", &commit);
        let got = cached_config(tmp.path(), "Org/Model").unwrap().unwrap();
        assert_eq!((got.path, got.text.as_str()), (path.clone(), "{}"));
        assert_eq!(found(tmp.path(), "Org/Other"), None);
        // A ref that is not a commit is never joined into a path.
        let dir = repo_dir(tmp.path(), "Org/Model");
        for bad in ["../../../etc", "a/b", "main", ""] {
            std::fs::write(dir.join("refs").join("main"), bad).unwrap();
            assert_eq!(found(tmp.path(), "Org/Model"), None, "{bad:?}");
        }
        // No refs/main: the one snapshot there is used.
        std::fs::remove_file(dir.join("refs").join("main")).unwrap();
        assert_eq!(found(tmp.path(), "Org/Model"), Some(path));
        std::fs::create_dir_all(dir.join("snapshots").join("b".repeat(40))).unwrap();
        let second = dir
            .join("snapshots")
            .join("b".repeat(40))
            .join("config.json");
        std::fs::write(second, "{}").unwrap();
        assert_eq!(found(tmp.path(), "Org/Model"), None, "two: ambiguous");
    }

    /// A FIFO, a link to /dev/zero or a 200 MB file at refs/main or at the snapshot's
    /// config.json is a coded error naming it, at once: never a hang, never skipped.
    #[test]
    fn hostile_cache_files_are_coded_errors_not_hangs() {
        use crate::error::{Exit, exit_for};
        let commit = "c".repeat(40);
        type Plant = fn(&Path);
        let plants: [(&str, Plant); 3] = [
            ("fifo", |p| {
                let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
                // SAFETY: `c` is a NUL-terminated path that outlives the call.
                assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
            }),
            ("zero", |p| {
                std::os::unix::fs::symlink("/dev/zero", p).unwrap()
            }),
            ("big", |p| {
                std::fs::File::create(p)
                    .unwrap()
                    .set_len(200 << 20)
                    .unwrap();
            }),
        ];
        for at_ref in [true, false] {
            for (name, plant) in plants {
                let tmp = tempfile::tempdir().unwrap();
                fake_cache(tmp.path(), "Org/Model", "{}", &commit);
                let dir = repo_dir(tmp.path(), "Org/Model");
                let target = if at_ref {
                    dir.join("refs").join("main")
                } else {
                    dir.join("snapshots").join(&commit).join("config.json")
                };
                std::fs::remove_file(&target).unwrap();
                plant(&target);
                let start = std::time::Instant::now();
                let err = cached_config(tmp.path(), "Org/Model").unwrap_err();
                assert!(start.elapsed().as_secs() < 1, "{name}: slow");
                assert_eq!(
                    exit_for(&err),
                    Exit::DataErr,
                    "{name} at_ref={at_ref}: {err:#}"
                );
                assert!(
                    format!("{err:#}").contains(&target.display().to_string()),
                    "{err:#}"
                );
            }
        }
    }
}

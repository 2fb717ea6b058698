//! Hostile files and engines: whatever sits where edgeplan looks (a FIFO, a link to
//! `/dev/zero`, a 200 MB file; a fake `python3` or `llama-bench` that hangs, floods or
//! lies) ends in a coded exit, in bounded time and memory, and leaves nothing behind
//! (issue 41).

use crate::util::{Measured, edgeplan_std, fixture, mkfifo, run_measured};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The most a refused hostile file may cost: one second and 100 MB resident.
const FAST: Duration = Duration::from_secs(1);
const SMALL_RSS_KIB: u64 = 100 * 1024;

/// The three plants: a FIFO nobody writes, a link to `/dev/zero`, a 200 MB (sparse) file.
const PLANTS: [&str; 3] = ["fifo", "zero", "big"];

fn plant(kind: &str, at: &Path) {
    let _ = std::fs::remove_file(at);
    match kind {
        "fifo" => mkfifo(at),
        "zero" => std::os::unix::fs::symlink("/dev/zero", at).unwrap(),
        "big" => std::fs::File::create(at)
            .unwrap()
            .set_len(200 << 20)
            .unwrap(),
        other => panic!("no plant {other}"),
    }
}

fn assert_refused(m: &Measured, what: &str, path: &Path) {
    assert_eq!(m.code, Some(65), "{what}: {m:?}");
    assert!(m.elapsed < FAST, "{what}: took {:?}", m.elapsed);
    assert!(
        m.max_rss_kib < SMALL_RSS_KIB,
        "{what}: {} KiB",
        m.max_rss_kib
    );
    assert_eq!(m.stderr.lines().count(), 1, "{what}: {}", m.stderr);
    assert!(
        m.stderr.contains(&path.display().to_string()),
        "{what}: {}",
        m.stderr
    );
}

/// `models--Org--Model` with refs/main, a snapshot and its config.json linked into blobs.
fn hub_cache(root: &Path) -> (PathBuf, PathBuf) {
    let repo = root.join("models--Org--Model");
    let commit = "0123456789abcdef0123456789abcdef01234567";
    let snap = repo.join("snapshots").join(commit);
    std::fs::create_dir_all(&snap).unwrap();
    std::fs::create_dir_all(repo.join("blobs")).unwrap();
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    let config = std::fs::read(fixture("models/real/gemma-2-2b.json")).unwrap();
    std::fs::write(repo.join("blobs/9f3c"), config).unwrap();
    std::os::unix::fs::symlink("../../blobs/9f3c", snap.join("config.json")).unwrap();
    std::fs::write(repo.join("refs/main"), format!("{commit}\n")).unwrap();
    (repo.join("refs/main"), snap.join("config.json"))
}

fn plan_model(cache: &Path) -> Measured {
    let mut cmd = edgeplan_std();
    cmd.args([
        "plan",
        "--format",
        "json",
        "--model",
        "Org/Model",
        "--context",
        "4096",
    ])
    .arg("--profile")
    .arg(fixture("profiles/x86-epyc-zen4.json"))
    .env("HF_HUB_CACHE", cache);
    run_measured(&mut cmd, Duration::from_secs(30))
}

#[test]
fn issue41_hub_cache_files_are_capped_and_never_block() {
    let tmp = tempfile::tempdir().unwrap();
    hub_cache(tmp.path());
    let good = plan_model(tmp.path());
    assert_eq!(good.code, Some(0), "{good:?}");
    for at_ref in [true, false] {
        for kind in PLANTS {
            let tmp = tempfile::tempdir().unwrap();
            let (refs, config) = hub_cache(tmp.path());
            let path = if at_ref { refs } else { config };
            plant(kind, &path);
            let m = plan_model(tmp.path());
            assert_refused(&m, &format!("{kind} at {}", path.display()), &path);
        }
    }
}

#[test]
fn issue41_a_manifest_profile_is_capped_and_never_blocks() {
    for kind in PLANTS {
        let tmp = tempfile::tempdir().unwrap();
        let manifest = tmp.path().join("m.toml");
        std::fs::write(
            &manifest,
            "[[case]]\nprofile = \"p.json\"\nexpect = \"w4a16\"\n",
        )
        .unwrap();
        let profile = tmp.path().join("p.json");
        plant(kind, &profile);
        let mut cmd = edgeplan_std();
        cmd.arg("check").arg(&manifest);
        let m = run_measured(&mut cmd, Duration::from_secs(30));
        assert_eq!(m.code, Some(65), "{kind}: {m:?}");
        assert!(m.elapsed < FAST, "{kind}: took {:?}", m.elapsed);
        assert!(
            m.max_rss_kib < SMALL_RSS_KIB,
            "{kind}: {} KiB",
            m.max_rss_kib
        );
        assert!(m.stderr.contains("p.json"), "{kind}: {}", m.stderr);
    }
}

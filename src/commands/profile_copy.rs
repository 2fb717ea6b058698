//! Writing a profile back to disk (`bench --save FILE`) without losing anything the user
//! gave: fields this edgeplan does not know (a newer 1.x profile's, another tool's) are
//! carried over from the input document byte-for-byte (numbers as written, key order
//! kept), and the file is replaced atomically, so a failed write never leaves a
//! truncated profile, even when FILE is the input itself.
//!
//! The typed profile is serialized as usual (field order as `probe` writes it); the
//! input's unknown keys are then appended to the objects that hold them. The old
//! `measurements.bench` is the one thing replaced rather than merged: the new run's
//! figures must not be mixed with a previous run's.
//!
//! The write cannot be redirected: the temporary file gets a name nobody can guess and is
//! created `O_EXCL | O_NOFOLLOW` in FILE's directory (opened once), written once, given
//! the old file's owner and mode, and renamed over FILE. FILE must be a regular file with
//! one link (or not exist): a link, a device such as `/dev/null`, a FIFO or a hard-linked
//! file is refused rather than replaced.

use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::{self as rfs, AtFlags, FileType, Mode};
use rustix::io::Errno;
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::value::RawValue;

use crate::error::io_error;
use crate::fsx;

/// A JSON document as a tree whose objects keep their key order and whose scalars keep
/// their text exactly as written (`1e2` stays `1e2`, a 30-digit integer stays whole).
#[derive(Debug)]
enum Node {
    Leaf(Box<RawValue>),
    Array(Vec<Node>),
    Object(Vec<(String, Node)>),
}

/// Objects as ordered pairs, arrays as items, both with raw values.
struct Pairs(Vec<(String, Box<RawValue>)>);
struct Items(Vec<Box<RawValue>>);

impl<'de> serde::Deserialize<'de> for Pairs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Pairs, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Pairs;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Pairs, A::Error> {
                let mut pairs = Vec::new();
                while let Some(pair) = map.next_entry::<String, Box<RawValue>>()? {
                    pairs.push(pair);
                }
                Ok(Pairs(pairs))
            }
        }
        d.deserialize_map(V)
    }
}

impl<'de> serde::Deserialize<'de> for Items {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Items, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Items;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Items, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<Box<RawValue>>()? {
                    items.push(item);
                }
                Ok(Items(items))
            }
        }
        d.deserialize_seq(V)
    }
}

impl Node {
    /// Parses JSON text into a tree (nesting is bounded by serde_json's recursion limit).
    fn parse(text: &str) -> serde_json::Result<Node> {
        let raw: Box<RawValue> = serde_json::from_str(text)?;
        Node::from_raw(raw)
    }

    fn from_raw(raw: Box<RawValue>) -> serde_json::Result<Node> {
        match raw.get().trim_start().as_bytes().first() {
            Some(b'{') => {
                let Pairs(pairs) = serde_json::from_str(raw.get())?;
                let pairs = pairs
                    .into_iter()
                    .map(|(k, v)| Ok((k, Node::from_raw(v)?)))
                    .collect::<serde_json::Result<_>>()?;
                Ok(Node::Object(pairs))
            }
            Some(b'[') => {
                let Items(items) = serde_json::from_str(raw.get())?;
                let items = items
                    .into_iter()
                    .map(Node::from_raw)
                    .collect::<serde_json::Result<_>>()?;
                Ok(Node::Array(items))
            }
            _ => Ok(Node::Leaf(raw)),
        }
    }
}

impl Serialize for Node {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Node::Leaf(v) => v.serialize(s),
            Node::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Node::Object(pairs) => {
                let mut map = s.serialize_map(Some(pairs.len()))?;
                for (k, v) in pairs {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

/// Moves into `typed` every key of `original` it lacks, recursively (arrays of the same
/// length item by item); `at` is the dotted path so far. Returns how many were added.
fn merge(typed: &mut Node, original: Node, at: &str) -> usize {
    match (typed, original) {
        (Node::Object(pairs), Node::Object(theirs)) => {
            let mut added = 0;
            for (key, value) in theirs {
                let path = if at.is_empty() {
                    key.clone()
                } else {
                    format!("{at}.{key}")
                };
                match pairs.iter_mut().find(|(k, _)| *k == key) {
                    // This run's figures replace the last run's, whole.
                    Some(_) if path == "measurements.bench" => {}
                    Some((_, child)) => added += merge(child, value, &path),
                    None => {
                        pairs.push((key, value));
                        added += 1;
                    }
                }
            }
            added
        }
        (Node::Array(items), Node::Array(values)) if items.len() == values.len() => items
            .iter_mut()
            .zip(values)
            .map(|(item, value)| merge(item, value, at))
            .sum(),
        _ => 0,
    }
}

/// The text to save: `typed` (pretty JSON with a trailing newline, as `probe` writes a
/// profile) plus the keys of `original` (the input document's text) that `typed` lacks,
/// each value exactly as the input wrote it.
pub fn merged_text(typed: &str, original: Option<&str>) -> anyhow::Result<String> {
    let Some(original) = original else {
        return Ok(typed.to_string());
    };
    let mut node = Node::parse(typed)?;
    if merge(&mut node, Node::parse(original)?, "") == 0 {
        return Ok(typed.to_string());
    }
    let mut text = serde_json::to_string_pretty(&node)?;
    text.push('\n');
    Ok(text)
}

/// FILE's directory (opened once, every later step relative to it) and its name.
fn split(path: &Path, flag: &str) -> anyhow::Result<(OwnedFd, String)> {
    let shown = path.display();
    let name = path
        .file_name()
        .filter(|_| !path.as_os_str().as_encoded_bytes().ends_with(b"/"))
        .ok_or_else(|| io_error(format!("{flag} {shown}: cannot write: give a file name")))?;
    let name = name.to_string_lossy().into_owned();
    let dir = fsx::open_dir(path.parent().unwrap_or(Path::new(".")))
        .map_err(|e| io_error(format!("{flag} {shown}: cannot write: {e}")))?;
    Ok((dir, name))
}

/// What is at `name` in `dir` now, not following a link: `None` when nothing is. 74 for
/// anything `--save` must not replace.
fn existing(
    dir: BorrowedFd,
    name: &str,
    path: &Path,
    flag: &str,
) -> anyhow::Result<Option<rfs::Stat>> {
    let refuse = |why: &str| io_error(format!("{flag} {}: cannot write: {why}", path.display()));
    let st = match rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::NOENT) => return Ok(None),
        Err(e) => return Err(refuse(&std::io::Error::from(e).to_string())),
    };
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => {}
        FileType::Directory => return Err(refuse("is a directory; give a file name")),
        FileType::Symlink => {
            return Err(refuse(
                "is a symbolic link; --save replaces regular files only (give the link's target, or a new file)",
            ));
        }
        _ => {
            return Err(refuse(
                "not a regular file (a device, FIFO or socket); --save writes regular files only",
            ));
        }
    }
    if st.st_nlink > 1 {
        return Err(refuse(&format!(
            "has {} hard links; replacing it would break them: save to a new file",
            st.st_nlink
        )));
    }
    // The atomic replace would succeed over a read-only file (it needs only the
    // directory): the mode is the user's "do not change this", so it is honoured.
    if st.st_mode & 0o222 == 0 {
        return Err(refuse("the file is read-only"));
    }
    Ok(Some(st))
}

/// Checks that `flag`'s `path` can be written, before a long run is spent: what is there
/// may be replaced (see [`existing`]) and its directory takes a new file (the atomic
/// replace needs that). 74 when not.
pub fn check_writable(path: &Path, flag: &str) -> anyhow::Result<()> {
    let (dir, name) = split(path, flag)?;
    existing(dir.as_fd(), &name, path, flag)?;
    let (_fd, temp) = fsx::create_temp(dir.as_fd(), &format!(".{name}.edgeplan-"), 0o600)
        .map_err(|e| io_error(format!("{flag} {}: cannot write: {e}", path.display())))?;
    let _ = rfs::unlinkat(dir.as_fd(), temp.as_str(), AtFlags::empty());
    Ok(())
}

/// Writes `text` to `path` atomically: a new temporary file beside it, written once,
/// given the old file's owner and mode, flushed to disk, then renamed over it. On any
/// failure the old file is untouched and the temporary one removed. 74 naming `flag`
/// and the path.
pub fn write_atomically(path: &Path, text: &str, flag: &str) -> anyhow::Result<()> {
    let (dir, name) = split(path, flag)?;
    let old = existing(dir.as_fd(), &name, path, flag)?;
    // A new profile gets the usual 0666 less the umask; a replaced one its old mode.
    let mode = if old.is_some() { 0o600 } else { 0o666 };
    // Ctrl-C waits for the save or its cleanup: no temporary file is left behind.
    fsx::with_signals_deferred(|| replace(dir.as_fd(), &name, old.as_ref(), mode, text))
        .map_err(|e| io_error(format!("{flag} {}: cannot write: {e}", path.display())))
}

/// Creates the temporary file beside `name`, fills it, gives it `old`'s owner and mode,
/// and renames it over `name`; on failure it is removed.
fn replace(
    dir: BorrowedFd,
    name: &str,
    old: Option<&rfs::Stat>,
    mode: u32,
    text: &str,
) -> std::io::Result<()> {
    let (fd, temp) = fsx::create_temp(dir, &format!(".{name}.edgeplan-"), mode)?;
    let result = (|| -> std::io::Result<()> {
        if let Some(old) = old {
            keep_owner_and_mode(fd.as_fd(), old)?;
        }
        let mut file = std::fs::File::from(fd);
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        rfs::renameat(dir, temp.as_str(), dir, name)?;
        // The rename itself reaches the disk with the directory.
        let _ = rfs::fsync(dir);
        Ok(())
    })();
    if result.is_err() {
        let _ = rfs::unlinkat(dir, temp.as_str(), AtFlags::empty());
    }
    result
}

/// Gives the new file the replaced one's owner, group and mode (owner first: `chown`
/// clears set-id bits). Failing to keep the owner is an error (the file would change
/// hands); a group this user cannot give is left as the user's default.
fn keep_owner_and_mode(fd: BorrowedFd, old: &rfs::Stat) -> std::io::Result<()> {
    let new = rfs::fstat(fd)?;
    if new.st_uid != old.st_uid || new.st_gid != old.st_gid {
        let uid = rfs::Uid::from_raw(old.st_uid);
        let gid = rfs::Gid::from_raw(old.st_gid);
        if let Err(e) = rfs::fchown(fd, Some(uid), Some(gid))
            && new.st_uid != old.st_uid
        {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "the file belongs to uid {} and could not be kept so ({e}); save to a new file or run as its owner",
                    old.st_uid
                ),
            ));
        }
    }
    rfs::fchmod(fd, Mode::from_raw_mode(old.st_mode & 0o7777))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};

    #[test]
    fn unknown_keys_are_appended_in_place_and_known_ones_keep_the_typed_value() {
        let typed = "{\n  \"b\": 1,\n  \"a\": {\n    \"y\": 2\n  },\n  \"list\": [\n    {\n      \"n\": 1\n    }\n  ]\n}\n";
        let original = serde_json::json!({
            "b": 99, "a": {"y": 0, "z": "kept"}, "list": [{"n": 0, "extra": true}], "new": [1, 2]
        });
        let text = merged_text(typed, Some(&original.to_string())).unwrap();
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            back,
            serde_json::json!({
                "b": 1, "a": {"y": 2, "z": "kept"}, "list": [{"n": 1, "extra": true}], "new": [1, 2]
            })
        );
        // The typed order comes first: b before a, as typed wrote them.
        assert!(
            text.find("\"b\"").unwrap() < text.find("\"a\"").unwrap(),
            "{text}"
        );
    }

    #[test]
    fn nothing_unknown_leaves_the_text_byte_for_byte() {
        let typed = "{\n  \"b\": 1.5,\n  \"a\": null\n}\n";
        let original = serde_json::json!({"b": 2, "a": null});
        assert_eq!(
            merged_text(typed, Some(&original.to_string())).unwrap(),
            typed
        );
        assert_eq!(merged_text(typed, None).unwrap(), typed);
    }

    #[test]
    fn the_old_bench_measurements_are_replaced_not_merged() {
        let typed = "{\"measurements\": {\"bench\": {\"new\": 1}}}";
        let original = serde_json::json!({"measurements": {"bench": {"old": 1}, "other": 2}});
        let back: Value =
            serde_json::from_str(&merged_text(typed, Some(&original.to_string())).unwrap())
                .unwrap();
        assert_eq!(
            back,
            serde_json::json!({"measurements": {"bench": {"new": 1}, "other": 2}})
        );
    }

    #[test]
    fn unknown_fields_keep_their_text_and_order() {
        let typed = "{\n  \"b\": 1\n}\n";
        let original = r#"{"b": 0, "zeta": 123456789012345678901234567890, "alpha": {"z": 1e2, "a": -0.0, "s": "\u00e9\n"}}"#;
        let text = merged_text(typed, Some(original)).unwrap();
        assert!(text.contains("123456789012345678901234567890"), "{text}");
        assert!(
            text.contains("\"z\": 1e2") && text.contains("-0.0"),
            "{text}"
        );
        assert!(text.contains(r#""\u00e9\n""#), "{text}");
        let zeta = text.find("zeta").unwrap();
        assert!(zeta < text.find("alpha").unwrap(), "{text}");
        assert!(
            text.find("\"z\"").unwrap() < text.find("\"a\"").unwrap(),
            "{text}"
        );
    }

    fn save(path: &Path) -> anyhow::Result<()> {
        write_atomically(path, "{\"new\": 1}\n", "--save")
    }

    #[test]
    fn save_refuses_links_devices_and_hard_links_and_keeps_mode() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let link = dir.path().join("link.json");
        symlink(&victim, &link).unwrap();
        let err = save(&link).unwrap_err();
        assert!(format!("{err}").contains("symbolic link"), "{err}");
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let err = save(Path::new("/dev/null")).unwrap_err();
        assert!(format!("{err}").contains("not a regular file"), "{err}");
        assert!(check_writable(Path::new("/dev/null"), "--save").is_err());
        let hard = dir.path().join("hard.json");
        std::fs::hard_link(&victim, &hard).unwrap();
        assert!(format!("{}", save(&hard).unwrap_err()).contains("hard links"));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let plain = dir.path().join("p.json");
        std::fs::write(&plain, "old").unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o640)).unwrap();
        let before = std::fs::metadata(&plain).unwrap();
        save(&plain).unwrap();
        let after = std::fs::metadata(&plain).unwrap();
        assert_eq!(std::fs::read_to_string(&plain).unwrap(), "{\"new\": 1}\n");
        assert_eq!(after.permissions().mode() & 0o7777, 0o640);
        assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
        // No temporary file is left, and a new file can be written too.
        save(&dir.path().join("new.json")).unwrap();
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(names.is_empty(), "{names:?}");
    }

    /// Links planted at every name the old code would have used (and any other name)
    /// are never written through: the temporary name is new and created O_EXCL.
    #[test]
    fn planted_temp_links_are_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let pid = std::process::id();
        for p in pid..pid + 64 {
            symlink(
                &victim,
                dir.path().join(format!(".p.json.edgeplan-{p}.tmp")),
            )
            .unwrap();
        }
        let target = dir.path().join("p.json");
        check_writable(&target, "--save").unwrap();
        save(&target).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert!(
            std::fs::symlink_metadata(&target)
                .unwrap()
                .file_type()
                .is_file()
        );
    }
}

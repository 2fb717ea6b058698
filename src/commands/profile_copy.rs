//! Writing a profile back to disk (`bench --save FILE`) without losing anything the user
//! gave: fields this edgeplan does not know (a newer 1.x profile's, another tool's) are
//! carried over from the input document, and the file is replaced atomically, so a
//! failed write never leaves a truncated profile, even when FILE is the input itself.
//!
//! The typed profile is serialized as usual (field order as `probe` writes it); the
//! input's unknown keys are then appended to the objects that hold them. The old
//! `measurements.bench` is the one thing replaced rather than merged: the new run's
//! figures must not be mixed with a previous run's.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use crate::error::io_error;

/// A JSON value whose objects keep their key order (serde_json's own `Map` sorts keys
/// without its `preserve_order` feature).
#[derive(Debug, Clone, PartialEq)]
enum Node {
    Leaf(Value),
    Array(Vec<Node>),
    Object(Vec<(String, Node)>),
}

impl Node {
    fn from_value(value: &Value) -> Node {
        match value {
            Value::Array(items) => Node::Array(items.iter().map(Node::from_value).collect()),
            Value::Object(map) => Node::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), Node::from_value(v)))
                    .collect(),
            ),
            other => Node::Leaf(other.clone()),
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

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        struct NodeVisitor;
        impl<'de> Visitor<'de> for NodeVisitor {
            type Value = Node;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
                Ok(Node::Leaf(Value::Bool(v)))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
                Ok(Node::Leaf(Value::from(v)))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
                Ok(Node::Leaf(Value::from(v)))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
                Ok(Node::Leaf(Value::from(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Node, E> {
                Ok(Node::Leaf(Value::String(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Node, E> {
                Ok(Node::Leaf(Value::String(v)))
            }
            fn visit_unit<E>(self) -> Result<Node, E> {
                Ok(Node::Leaf(Value::Null))
            }
            fn visit_none<E>(self) -> Result<Node, E> {
                Ok(Node::Leaf(Value::Null))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Node::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
                let mut pairs = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Node>()? {
                    pairs.push((k, v));
                }
                Ok(Node::Object(pairs))
            }
        }
        d.deserialize_any(NodeVisitor)
    }
}

/// Adds to `typed` every key of `original` it lacks, recursively (arrays of the same
/// length item by item); `at` is the dotted path so far. Returns how many were added.
fn merge(typed: &mut Node, original: &Value, at: &str) -> usize {
    match (typed, original) {
        (Node::Object(pairs), Value::Object(map)) => {
            let mut added = 0;
            for (key, value) in map {
                let path = if at.is_empty() {
                    key.clone()
                } else {
                    format!("{at}.{key}")
                };
                match pairs.iter_mut().find(|(k, _)| k == key) {
                    // This run's figures replace the last run's, whole.
                    Some(_) if path == "measurements.bench" => {}
                    Some((_, child)) => added += merge(child, value, &path),
                    None => {
                        pairs.push((key.clone(), Node::from_value(value)));
                        added += 1;
                    }
                }
            }
            added
        }
        (Node::Array(items), Value::Array(values)) if items.len() == values.len() => items
            .iter_mut()
            .zip(values)
            .map(|(item, value)| merge(item, value, at))
            .sum(),
        _ => 0,
    }
}

/// The text to save: `typed` (pretty JSON with a trailing newline, as `probe` writes a
/// profile) plus the keys of `original` that `typed` lacks.
pub fn merged_text(typed: &str, original: Option<&Value>) -> anyhow::Result<String> {
    let Some(original) = original else {
        return Ok(typed.to_string());
    };
    let mut node: Node = serde_json::from_str(typed)?;
    if merge(&mut node, original, "") == 0 {
        return Ok(typed.to_string());
    }
    let mut text = serde_json::to_string_pretty(&node)?;
    text.push('\n');
    Ok(text)
}

/// Where `path` really is: a symbolic link's target, so that replacing the file keeps
/// the link.
fn real_target(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// A temporary name beside `target`, in the same directory (so the rename is atomic).
fn temp_beside(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "profile".into());
    target.with_file_name(format!(".{name}.edgeplan-{}.tmp", std::process::id()))
}

/// Checks that `flag`'s `path` can be written, before a long run is spent: its
/// directory takes a new file (the atomic replace needs that) and an existing file is
/// not a directory. 74 when not.
pub fn check_writable(path: &Path, flag: &str) -> anyhow::Result<()> {
    let fail =
        |e: std::io::Error| io_error(format!("{flag} {}: cannot write: {e}", path.display()));
    if path.is_dir() {
        return Err(io_error(format!(
            "{flag} {}: cannot write: is a directory; give a file name",
            path.display()
        )));
    }
    // The atomic replace would succeed over a read-only file (it needs only the
    // directory): the mode is the user's "do not change this", so it is honoured.
    if std::fs::metadata(path).is_ok_and(|m| m.permissions().readonly()) {
        return Err(io_error(format!(
            "{flag} {}: cannot write: the file is read-only",
            path.display()
        )));
    }
    let probe = temp_beside(&real_target(path));
    std::fs::File::create(&probe).map_err(fail)?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Writes `text` to `path` atomically: a temporary file beside it, flushed to disk, then
/// renamed over it (keeping an existing file's permissions). On any failure the old
/// file is untouched and the temporary one removed. 74 naming `flag` and the path.
pub fn write_atomically(path: &Path, text: &str, flag: &str) -> anyhow::Result<()> {
    let fail =
        |e: std::io::Error| io_error(format!("{flag} {}: cannot write: {e}", path.display()));
    let target = real_target(path);
    let temp = temp_beside(&target);
    let result = (|| {
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        if let Ok(meta) = std::fs::metadata(&target) {
            std::fs::set_permissions(&temp, meta.permissions())?;
        }
        std::fs::rename(&temp, &target)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&temp);
        return Err(fail(e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_appended_in_place_and_known_ones_keep_the_typed_value() {
        let typed = "{\n  \"b\": 1,\n  \"a\": {\n    \"y\": 2\n  },\n  \"list\": [\n    {\n      \"n\": 1\n    }\n  ]\n}\n";
        let original = serde_json::json!({
            "b": 99, "a": {"y": 0, "z": "kept"}, "list": [{"n": 0, "extra": true}], "new": [1, 2]
        });
        let text = merged_text(typed, Some(&original)).unwrap();
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
        assert_eq!(merged_text(typed, Some(&original)).unwrap(), typed);
        assert_eq!(merged_text(typed, None).unwrap(), typed);
    }

    #[test]
    fn the_old_bench_measurements_are_replaced_not_merged() {
        let typed = "{\"measurements\": {\"bench\": {\"new\": 1}}}";
        let original = serde_json::json!({"measurements": {"bench": {"old": 1}, "other": 2}});
        let back: Value =
            serde_json::from_str(&merged_text(typed, Some(&original)).unwrap()).unwrap();
        assert_eq!(
            back,
            serde_json::json!({"measurements": {"bench": {"new": 1}, "other": 2}})
        );
    }
}

//! What the engine renderings share: option maps as flags, a build script's opening
//! lines, its failure helpers and its pinned lists. Nothing here knows an engine.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::plan::Plan;
use crate::plan::schema::EngineRendering;

/// The shell helpers every build script starts with: `fail MESSAGE` and
/// `need_cmd COMMAND WHY`. A macro so that scripts can `concat!` more helpers to it.
macro_rules! shell_fail_fns {
    () => {
        r#"fail() { echo "${0##*/}: $*" >&2; exit 1; }
need_cmd() { command -v "$1" >/dev/null 2>&1 || fail "needs \`$1\` on PATH ($2)"; }
"#
    };
}
pub(super) use shell_fail_fns;

/// A lock file's requirement lines, comments and blank lines dropped, one per line.
pub(super) fn lock_lines(lock: &str) -> String {
    lock.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// An engine's options as command-line tokens: `max_model_len: 4096` becomes
/// `--max-model-len 4096`. Both engines spell their long flags so.
pub(super) fn flags_of(kwargs: &Map<String, Value>) -> Vec<String> {
    kwargs
        .iter()
        .flat_map(|(k, v)| {
            let value = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            [format!("--{}", k.replace('_', "-")), value]
        })
        .collect()
}

/// A build script's first lines: the shebang, and who wrote it for which device, path,
/// priority and engine. The device label is free text: a control character in it (a
/// newline would end the comment and run the rest) is shown as a space.
pub(super) fn script_opening(
    s: &mut String,
    plan: &Plan,
    rendering: &EngineRendering,
    invocation: &str,
) -> std::fmt::Result {
    let device: String = plan
        .device
        .as_deref()
        .unwrap_or("this device")
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    writeln!(s, "#!/usr/bin/env bash")?;
    writeln!(
        s,
        "# Written by `{invocation}` ({} {}) for {device}:",
        env!("CARGO_PKG_NAME"),
        env!("CARGO_PKG_VERSION")
    )?;
    writeln!(
        s,
        "# path {}, priority {}, class {}; engine {} (checked against {}).",
        plan.path.name,
        plan.priority.as_str(),
        plan.hardware_class,
        rendering.name,
        rendering.checked_against.join(", ")
    )
}

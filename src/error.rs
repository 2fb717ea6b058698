//! Exit codes from the contract and the error type that carries one.
//!
//! Domain code returns `anyhow::Result`. Where a failure maps to a documented exit code
//! (bad data, missing input, I/O), it is raised as a [`Coded`] error, built with the
//! helpers below; `main` walks the error chain, takes the first code it finds, prints
//! `edgeplan: {err:#}` once and exits with it. Anything uncoded is an internal error (70).

use std::fmt;

/// The exit codes of the project's contract (design notes, contract.md), in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    Success = 0,
    /// A check did not hold: `--expect`, a failed `check` case, `bench --strict`.
    CheckFailed = 1,
    /// Bad usage (clap's own code).
    Usage = 2,
    /// Nothing fits in memory (`plan --model ... --context ...`).
    DoesNotFit = 3,
    /// Malformed or unsupported input data (profile, manifest, catalog, model config).
    DataErr = 65,
    /// An input file or sysroot does not exist.
    NoInput = 66,
    /// A program edgeplan needs is not installed or not usable (`bench --engine`: the
    /// engine, its Python, `llama-bench`); sysexits' EX_UNAVAILABLE.
    Unavailable = 69,
    /// Internal error: a bug.
    Software = 70,
    /// I/O error while reading or writing.
    IoErr = 74,
    /// Try again: `bench --save` of a run the solo check found noisy saved nothing;
    /// sysexits' EX_TEMPFAIL.
    TempFail = 75,
}

impl Exit {
    pub fn code(self) -> u8 {
        self as u8
    }
}

/// An error that knows which exit code it maps to. Its message is the whole line shown
/// to the user (`main` adds the `edgeplan: ` prefix and any context above it).
#[derive(Debug)]
pub struct Coded {
    pub exit: Exit,
    pub message: String,
}

impl fmt::Display for Coded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Coded {}

/// Bad usage (exit 2): a flag value clap accepted but the command cannot use. The one
/// constructor of usage errors.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    Coded {
        exit: Exit::Usage,
        message: message.into(),
    }
    .into()
}

/// Bad input data (exit 65).
pub fn data_error(message: impl Into<String>) -> anyhow::Error {
    Coded {
        exit: Exit::DataErr,
        message: message.into(),
    }
    .into()
}

/// A missing input (exit 66).
pub fn no_input(message: impl Into<String>) -> anyhow::Error {
    Coded {
        exit: Exit::NoInput,
        message: message.into(),
    }
    .into()
}

/// A required program is missing or unusable (exit 69).
pub fn unavailable(message: impl Into<String>) -> anyhow::Error {
    Coded {
        exit: Exit::Unavailable,
        message: message.into(),
    }
    .into()
}

/// A result too disturbed to keep: rerun later (exit 75).
pub fn temp_fail(message: impl Into<String>) -> anyhow::Error {
    Coded {
        exit: Exit::TempFail,
        message: message.into(),
    }
    .into()
}

/// An I/O failure (exit 74).
pub fn io_error(message: impl Into<String>) -> anyhow::Error {
    Coded {
        exit: Exit::IoErr,
        message: message.into(),
    }
    .into()
}

/// Maps an `std::io::Error` met while reading `what` to the right code: 66 when the
/// file does not exist (or is a directory where a file belongs, as `--sysroot FILE` is
/// 66 the other way round), 65 when its bytes are not UTF-8 text (`read_to_string`'s
/// `InvalidData`: bad input data, as a binary profile is), 74 otherwise.
pub fn read_error(what: &std::path::Path, err: &std::io::Error) -> anyhow::Error {
    let shown = what.display();
    match err.kind() {
        std::io::ErrorKind::NotFound => no_input(format!("{shown}: no such file or directory")),
        std::io::ErrorKind::IsADirectory => {
            no_input(format!("{shown}: is a directory; give a file"))
        }
        std::io::ErrorKind::InvalidData => data_error(format!("{shown}: not UTF-8 text")),
        _ => io_error(format!("{shown}: cannot read: {err}")),
    }
}

/// Reads the text file at `path`, `what` naming its kind in errors ("profile", "model
/// config"), refusing more than `max_bytes`, through [`crate::fsx::read_capped`] opened
/// as `source` says: a device file such as `/dev/zero` or a wrong multi-gigabyte file is
/// one coded error (65), not a read that eats memory until the host kills it, and a FIFO
/// edgeplan found (not one the user named) is refused (65) rather than waited on. 66
/// when missing, 65 when not UTF-8, too long or not a regular file, 74 otherwise.
pub fn read_text_capped(
    path: &std::path::Path,
    what: &str,
    max_bytes: u64,
    source: crate::fsx::Source,
) -> anyhow::Result<String> {
    crate::fsx::read_text(path, max_bytes, source)
        .map_err(|e| capped_read_error(path, what, max_bytes, &e))
}

/// The coded error for `err`, met by [`crate::fsx::read_capped`] reading `path` (a
/// `what`, capped at `max_bytes`), as [`read_text_capped`] gives it.
pub fn capped_read_error(
    path: &std::path::Path,
    what: &str,
    max_bytes: u64,
    err: &std::io::Error,
) -> anyhow::Error {
    let shown = path.display();
    match err.kind() {
        std::io::ErrorKind::FileTooLarge => data_error(format!(
            "{shown}: more than {} MiB; a {what} is never that large (is this the right file?)",
            max_bytes.div_ceil(1 << 20)
        )),
        std::io::ErrorKind::InvalidInput => {
            data_error(format!("{shown}: a {what} must be a regular file: {err}"))
        }
        std::io::ErrorKind::InvalidData => data_error(format!("{shown}: {what} is not UTF-8 text")),
        _ if err.raw_os_error() == Some(libc::ELOOP) => data_error(format!(
            "{shown}: a {what} here is never a symbolic link; not followed"
        )),
        _ => read_error(path, err),
    }
}

/// The exit code for an error chain: the first [`Coded`] found, else 74 for a bare I/O
/// error, else 70.
pub fn exit_for(err: &anyhow::Error) -> Exit {
    for cause in err.chain() {
        if let Some(coded) = cause.downcast_ref::<Coded>() {
            return coded.exit;
        }
    }
    for cause in err.chain() {
        if cause.downcast_ref::<std::io::Error>().is_some() {
            return Exit::IoErr;
        }
    }
    Exit::Software
}

/// `text` on one line, safe for a terminal: control characters (a newline in a
/// profile's label or a file name, a carriage return, ESC), C1 controls and bidi
/// overrides are shown escaped (`\n`, `\u{1b}`; see [`crate::sanitize`]), so each
/// diagnostic is the one stderr line the contract promises, a line-oriented reader (a CI
/// log, `grep`) sees it whole, and no input can drive the terminal.
pub fn one_line(text: &str) -> String {
    crate::sanitize::escape(text, false)
}

/// True when the chain is a closed stdout pipe, which is not an error for a CLI.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn first_code_in_the_chain_wins() {
        let err = Err::<(), _>(data_error("bad field"))
            .context("reading x.json")
            .unwrap_err();
        assert_eq!(exit_for(&err), Exit::DataErr);
        assert_eq!(format!("{err:#}"), "reading x.json: bad field");
    }

    #[test]
    fn uncoded_errors_are_internal_and_io_is_74() {
        assert_eq!(exit_for(&anyhow::anyhow!("oops")), Exit::Software);
        let io = anyhow::Error::from(std::io::Error::other("disk"));
        assert_eq!(exit_for(&io), Exit::IoErr);
    }

    #[test]
    fn capped_reads_code_their_failures() {
        let dir = std::env::temp_dir().join(format!("edgeplan-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("big");
        std::fs::write(&big, vec![b'x'; 2 << 20]).unwrap();
        let err =
            read_text_capped(&big, "profile", 1 << 20, crate::fsx::Source::Named).unwrap_err();
        assert_eq!(exit_for(&err), Exit::DataErr);
        assert!(format!("{err}").contains("more than 1 MiB"), "{err}");
        let binary = dir.join("binary");
        std::fs::write(&binary, [0xff, 0xfe, 0x00]).unwrap();
        let err =
            read_text_capped(&binary, "profile", 1 << 20, crate::fsx::Source::Named).unwrap_err();
        assert_eq!(exit_for(&err), Exit::DataErr);
        assert!(
            format!("{err}").ends_with("profile is not UTF-8 text"),
            "{err}"
        );
        assert_eq!(
            read_text_capped(&big, "x", 2 << 20, crate::fsx::Source::Named)
                .unwrap()
                .len(),
            2 << 20
        );
        let err =
            read_text_capped(&dir.join("absent"), "x", 1, crate::fsx::Source::Found).unwrap_err();
        assert_eq!(exit_for(&err), Exit::NoInput);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn one_line_escapes_control_characters() {
        assert_eq!(
            one_line("rack1\ntouch x\r\tend"),
            "rack1\\ntouch x\\r\\tend"
        );
        assert_eq!(one_line("a\u{1b}[2Jb\u{202e}"), "a\\u{1b}[2Jb\\u{202e}");
        assert_eq!(one_line("plain: ünïcode"), "plain: ünïcode");
    }

    #[test]
    fn missing_file_is_66() {
        let err = crate::fsx::read_capped(
            std::path::Path::new("/definitely/not/here"),
            1,
            crate::fsx::Source::Named,
        )
        .unwrap_err();
        let coded = read_error(std::path::Path::new("/definitely/not/here"), &err);
        assert_eq!(exit_for(&coded), Exit::NoInput);
    }
}

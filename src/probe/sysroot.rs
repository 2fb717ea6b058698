//! The filesystem root every probe reader goes through, and its log of what was read.
//!
//! [`SysRoot`] maps the absolute paths the kernel documents (`/proc/cpuinfo`,
//! `/sys/bus/pci/devices`, `/vendor/build.prop`) below a root directory: `/` on the
//! live host, or a captured tree under `--sysroot`. It never panics and never fails a
//! probe: a missing file is `None`; an unreadable one (a directory where a file should
//! be, a FIFO, a symlink loop, permissions) is `None` plus a warning; anything larger
//! than [`MAX_FILE_BYTES`] is cut there, with a warning. Every access is recorded so
//! `probe --dump` can copy exactly the files the probe looked at (see `dump.rs`).
//! Warnings for facts that could not be established are collected here too, so one
//! object travels through every reader.

use std::cell::RefCell;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Reads are capped here: /proc and /sys files are small, and a captured tree may
/// hold anything.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// One thing the probe looked at, as `--dump` replays it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// A file and the bytes read from it (possibly capped).
    File { path: String, bytes: Vec<u8> },
    /// A directory that was listed or tested for.
    Dir { path: String },
    /// A path only tested for existence, which exists and is not a directory.
    Marker { path: String },
}

/// A filesystem root plus the log of accesses and warnings of one probe.
#[derive(Debug)]
pub struct SysRoot {
    root: PathBuf,
    /// The root with symlinks resolved, to keep a captured tree's reads inside it.
    canonical_root: PathBuf,
    live: bool,
    accesses: RefCell<Vec<Access>>,
    warnings: RefCell<Vec<String>>,
}

impl SysRoot {
    /// The live host's root `/`.
    pub fn live() -> SysRoot {
        SysRoot::new(PathBuf::from("/"), true)
    }

    /// A captured tree. The caller checks that `dir` exists.
    pub fn at(dir: &Path) -> SysRoot {
        SysRoot::new(dir.to_path_buf(), false)
    }

    fn new(root: PathBuf, live: bool) -> SysRoot {
        let canonical_root = std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
        SysRoot {
            root,
            canonical_root,
            live,
            accesses: RefCell::default(),
            warnings: RefCell::default(),
        }
    }

    /// True for the live host (CPUID, syscalls and environment may be consulted).
    pub fn is_live(&self) -> bool {
        self.live
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The real path of an absolute in-tree path such as `/proc/cpuinfo`.
    pub fn path(&self, abs: &str) -> PathBuf {
        self.root.join(abs.trim_start_matches('/'))
    }

    /// The real path to open, or `None` (with a warning) when a captured tree would be
    /// left: a `..` component (e.g. from a crafted `/proc/self/cgroup`) or a symlink
    /// that resolves outside the root. The live root is `/`, so nothing is outside it.
    fn inside(&self, abs: &str) -> Option<PathBuf> {
        if abs.split('/').any(|part| part == "..") {
            self.warn(format!("{abs}: path with `..` ignored"));
            return None;
        }
        let real = self.path(abs);
        if !self.live
            && let Ok(resolved) = std::fs::canonicalize(&real)
            && !resolved.starts_with(&self.canonical_root)
        {
            self.warn(format!(
                "{}: resolves outside the sysroot ({}), ignored",
                self.shown(abs),
                resolved.display()
            ));
            return None;
        }
        Some(real)
    }

    /// How a path is named in warnings: as given on the live host, below the root otherwise.
    pub fn shown(&self, abs: &str) -> String {
        if self.live {
            abs.to_string()
        } else {
            self.path(abs).display().to_string()
        }
    }

    /// Records a warning for `profile.warnings` (and stderr, in `probe`).
    pub fn warn(&self, message: impl Into<String>) {
        let message = message.into();
        let mut warnings = self.warnings.borrow_mut();
        if !warnings.contains(&message) {
            warnings.push(message);
        }
    }

    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut self.warnings.borrow_mut())
    }

    pub fn accesses(&self) -> Vec<Access> {
        self.accesses.borrow().clone()
    }

    fn record(&self, access: Access) {
        let mut accesses = self.accesses.borrow_mut();
        if !accesses.contains(&access) {
            accesses.push(access);
        }
    }

    /// The bytes of a file, capped at [`MAX_FILE_BYTES`]. `None` when it is missing
    /// (silently) or cannot be read as a regular file (with a warning).
    pub fn read_bytes(&self, abs: &str) -> Option<Vec<u8>> {
        let real = self.inside(abs)?;
        let meta = match std::fs::metadata(&real) {
            Ok(meta) => meta,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
            Err(err) => {
                self.warn(format!("{}: cannot read: {err}", self.shown(abs)));
                return None;
            }
        };
        if !meta.is_file() {
            // A directory, FIFO or device where a file belongs; opening a FIFO would block.
            self.warn(format!("{}: not a regular file, ignored", self.shown(abs)));
            return None;
        }
        let mut bytes = Vec::new();
        let read = std::fs::File::open(&real)
            .and_then(|file| file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes));
        if let Err(err) = read {
            self.warn(format!("{}: cannot read: {err}", self.shown(abs)));
            return None;
        }
        if bytes.len() as u64 > MAX_FILE_BYTES {
            bytes.truncate(MAX_FILE_BYTES as usize);
            self.warn(format!(
                "{}: larger than {} bytes, only the start was read",
                self.shown(abs),
                MAX_FILE_BYTES
            ));
        }
        self.record(Access::File {
            path: abs.to_string(),
            bytes: bytes.clone(),
        });
        Some(bytes)
    }

    /// A file as text (invalid UTF-8 replaced, NULs kept for the caller to split on).
    pub fn read(&self, abs: &str) -> Option<String> {
        self.read_bytes(abs)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The first line of a file, trimmed; `None` when missing or empty.
    pub fn read_line(&self, abs: &str) -> Option<String> {
        let text = self.read(abs)?;
        let line = text
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .trim_matches('\0')
            .trim();
        (!line.is_empty()).then(|| line.to_string())
    }

    /// True when the path exists (file, directory or anything else).
    pub fn exists(&self, abs: &str) -> bool {
        let Some(real) = self.inside(abs) else {
            return false;
        };
        match std::fs::metadata(real) {
            Ok(meta) if meta.is_dir() => {
                self.record(Access::Dir {
                    path: abs.to_string(),
                });
                true
            }
            Ok(_) => {
                self.record(Access::Marker {
                    path: abs.to_string(),
                });
                true
            }
            Err(_) => false,
        }
    }

    /// Names in a directory, sorted; empty when it is missing or unreadable.
    pub fn list(&self, abs: &str) -> Vec<String> {
        let Some(real) = self.inside(abs) else {
            return Vec::new();
        };
        let Ok(entries) = std::fs::read_dir(real) else {
            return Vec::new();
        };
        self.record(Access::Dir {
            path: abs.to_string(),
        });
        let mut names: Vec<String> = entries
            .filter_map(|entry| entry.ok())
            .filter_map(|entry| entry.file_name().into_string().ok())
            .collect();
        names.sort();
        // Entries are facts too (library names, PCI addresses): record them for --dump.
        for name in &names {
            let child = format!("{}/{name}", abs.trim_end_matches('/'));
            match std::fs::metadata(self.path(&child))
                .ok()
                .filter(|_| self.inside(&child).is_some())
            {
                Some(meta) if meta.is_dir() => self.record(Access::Dir { path: child }),
                Some(_) => self.record(Access::Marker { path: child }),
                None => {}
            }
        }
        names
    }

    /// The last component of a symlink's target (`driver -> ../../bus/pci/drivers/nvidia`
    /// gives `nvidia`); in a captured tree a plain file holding the name works too.
    pub fn link_name(&self, abs: &str) -> Option<String> {
        let real = self.inside(abs)?;
        if let Ok(target) = std::fs::read_link(&real) {
            let name = target.file_name()?.to_string_lossy().into_owned();
            self.record(Access::File {
                path: abs.to_string(),
                bytes: name.clone().into_bytes(),
            });
            return Some(name);
        }
        self.read_line(abs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/cpuinfo")).unwrap();
        std::fs::write(dir.path().join("proc/meminfo"), "MemTotal: 1 kB\n").unwrap();
        std::fs::write(
            dir.path().join("big"),
            vec![b'x'; (MAX_FILE_BYTES + 10) as usize],
        )
        .unwrap();
        std::os::unix::fs::symlink("loop_b", dir.path().join("loop_a")).unwrap();
        std::os::unix::fs::symlink("loop_a", dir.path().join("loop_b")).unwrap();
        dir
    }

    #[test]
    fn missing_is_silent_and_a_directory_is_a_warning() {
        let dir = tree();
        let root = SysRoot::at(dir.path());
        assert_eq!(root.read("/nothing/here"), None);
        assert!(root.take_warnings().is_empty());
        assert_eq!(root.read("/proc/cpuinfo"), None);
        let warnings = root.take_warnings();
        assert!(warnings[0].contains("not a regular file"), "{warnings:?}");
    }

    #[test]
    fn reads_are_capped_and_recorded() {
        let dir = tree();
        let root = SysRoot::at(dir.path());
        assert_eq!(
            root.read_bytes("/big").unwrap().len() as u64,
            MAX_FILE_BYTES
        );
        assert!(root.take_warnings()[0].contains("only the start"));
        assert_eq!(
            root.read_line("/proc/meminfo").as_deref(),
            Some("MemTotal: 1 kB")
        );
        assert!(
            root.accesses()
                .iter()
                .any(|a| matches!(a, Access::File { path, .. } if path == "/proc/meminfo"))
        );
    }

    #[test]
    fn a_symlink_loop_is_a_warning_not_a_hang() {
        let dir = tree();
        let root = SysRoot::at(dir.path());
        assert_eq!(root.read("/loop_a"), None);
        assert_eq!(root.take_warnings().len(), 1);
    }

    #[test]
    fn reads_never_leave_a_captured_tree() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "host data\n").unwrap();
        let dir = tree();
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("escape"))
            .unwrap();
        std::os::unix::fs::symlink("proc", dir.path().join("inner")).unwrap();
        let root = SysRoot::at(dir.path());
        assert_eq!(root.read("/escape"), None);
        assert!(root.take_warnings()[0].contains("outside the sysroot"));
        let up = format!(
            "/../{}/secret",
            outside.path().file_name().unwrap().to_string_lossy()
        );
        assert_eq!(root.read(&up), None);
        assert!(!root.exists(&up));
        // A symlink that stays inside the tree is followed.
        assert_eq!(
            root.read_line("/inner/meminfo").as_deref(),
            Some("MemTotal: 1 kB")
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_not_opened() {
        let dir = tree();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path that lives across the call.
        let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
        assert_eq!(rc, 0);
        let root = SysRoot::at(dir.path());
        assert_eq!(root.read("/fifo"), None);
        assert!(root.take_warnings()[0].contains("not a regular file"));
    }
}

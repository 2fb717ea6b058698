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
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{FileType, OFlags};

use crate::fsx;

/// Reads are capped here: /proc and /sys files are small, and a captured tree may
/// hold anything.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// At most this many names are taken from one directory (a tree with 20,000 PCI devices
/// costs a probe no more than one with this many), with a warning past it.
pub const MAX_DIR_ENTRIES: usize = 4096;

/// One thing the probe looked at, as `--dump` replays it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Access {
    /// A file and the bytes read from it (possibly capped).
    File { path: String, bytes: Vec<u8> },
    /// A directory that was listed or tested for.
    Dir { path: String },
    /// A path only tested for existence, which exists and is not a directory.
    Marker { path: String },
}

/// A filesystem root plus the log of accesses and warnings of one probe.
///
/// The root directory is opened once; every path is then opened relative to that
/// descriptor. Under a captured tree the lookup is confined to it ([`fsx::open_beneath`]:
/// a link is followed only while it stays inside, so the `/sys/bus/pci/devices/*` links
/// of a real capture work and a link to `/etc/shadow` does not), the opened descriptor is
/// checked to be a regular file, and the bytes are read from that same descriptor:
/// nothing swapped in between a check and a read is ever read. Files are opened
/// `O_NONBLOCK`, so a FIFO never blocks.
#[derive(Debug)]
pub struct SysRoot {
    root: PathBuf,
    /// The root directory, opened once; `None` when it cannot be opened (every read is
    /// then missing).
    dir: Option<OwnedFd>,
    live: bool,
    accesses: RefCell<Vec<Access>>,
    /// Hashes of `accesses`, so recording stays linear (20,000 PCI devices were quadratic).
    seen: RefCell<std::collections::HashSet<u64>>,
    warnings: RefCell<Vec<String>>,
    /// Files that exist but could not be read, with the error (a permission denied).
    failures: RefCell<std::collections::BTreeMap<String, String>>,
}

/// Why a path could not be opened.
enum Refused {
    Missing,
    /// Outside the tree (a `..`, an absolute link or one that climbs out).
    Outside,
    Other(std::io::Error),
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
        SysRoot {
            dir: fsx::open_dir(&root).ok(),
            root,
            live,
            accesses: RefCell::default(),
            seen: RefCell::default(),
            warnings: RefCell::default(),
            failures: RefCell::default(),
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

    /// Opens `abs` below the root with `flags`. On the live host (root `/`, nothing is
    /// outside it) links are followed as the kernel documents them; under a captured tree
    /// only while they stay inside. A `..` component (e.g. from a crafted
    /// `/proc/self/cgroup`) is refused before any lookup, with a warning.
    fn open(&self, abs: &str, flags: OFlags) -> Result<OwnedFd, Refused> {
        if abs.split('/').any(|part| part == "..") {
            self.warn(format!("{abs}: path with `..` ignored"));
            return Err(Refused::Outside);
        }
        let dir = self.dir.as_ref().ok_or(Refused::Missing)?;
        let rel = abs.trim_start_matches('/');
        let opened = if self.live {
            let rel = if rel.is_empty() { "." } else { rel };
            rustix::fs::openat(dir, rel, flags | OFlags::CLOEXEC, rustix::fs::Mode::empty())
                .map_err(std::io::Error::from)
        } else {
            fsx::open_beneath(dir.as_fd(), rel, flags)
        };
        opened.map_err(|err| match err.raw_os_error() {
            Some(libc::ENOENT) => Refused::Missing,
            Some(libc::EXDEV) => {
                self.warn(format!(
                    "{}: resolves outside the sysroot, ignored",
                    self.shown(abs)
                ));
                Refused::Outside
            }
            _ => Refused::Other(err),
        })
    }

    /// The type of what `abs` names (links inside the tree followed), or `None`.
    fn kind_of(&self, abs: &str) -> Option<FileType> {
        let fd = self.open(abs, OFlags::PATH).ok()?;
        fsx::kind(fd.as_fd()).ok()
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

    /// A file that exists but could not be read: a warning, and remembered for
    /// [`SysRoot::failure`].
    fn fail(&self, abs: &str, err: &std::io::Error) {
        self.warn(format!("{}: cannot read: {err}", self.shown(abs)));
        self.failures
            .borrow_mut()
            .insert(abs.to_string(), err.to_string());
    }

    /// Why `abs` could not be read, when it exists and a read failed (e.g.
    /// "Permission denied (os error 13)"); `None` when it was read, is missing, or was
    /// refused as outside the tree or not a regular file.
    pub fn failure(&self, abs: &str) -> Option<String> {
        self.failures.borrow().get(abs).cloned()
    }

    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut self.warnings.borrow_mut())
    }

    pub fn accesses(&self) -> Vec<Access> {
        self.accesses.borrow().clone()
    }

    fn record(&self, access: Access) {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(&access);
        let mut accesses = self.accesses.borrow_mut();
        // A hash seen before is checked in full (a collision must not drop an access).
        if !self.seen.borrow_mut().insert(hash) && accesses.contains(&access) {
            return;
        }
        accesses.push(access);
    }

    /// The bytes of a file, capped at [`MAX_FILE_BYTES`]. `None` when it is missing
    /// (silently) or cannot be read as a regular file (with a warning).
    pub fn read_bytes(&self, abs: &str) -> Option<Vec<u8>> {
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY;
        let fd = match self.open(abs, flags) {
            Ok(fd) => fd,
            Err(Refused::Missing | Refused::Outside) => return None,
            Err(Refused::Other(err)) => {
                self.fail(abs, &err);
                return None;
            }
        };
        if !fsx::kind(fd.as_fd()).is_ok_and(|k| k == FileType::RegularFile) {
            // A directory, FIFO or device where a file belongs.
            self.warn(format!("{}: not a regular file, ignored", self.shown(abs)));
            return None;
        }
        let mut bytes = Vec::new();
        let read = std::fs::File::from(fd)
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes);
        if let Err(err) = read {
            self.fail(abs, &err);
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
        match self.kind_of(abs) {
            Some(FileType::Directory) => {
                self.record(Access::Dir {
                    path: abs.to_string(),
                });
                true
            }
            Some(_) => {
                self.record(Access::Marker {
                    path: abs.to_string(),
                });
                true
            }
            None => false,
        }
    }

    /// Names in a directory, sorted; empty when it is missing or unreadable. At most
    /// [`MAX_DIR_ENTRIES`] (the first in name order), with a warning past that.
    pub fn list(&self, abs: &str) -> Vec<String> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NONBLOCK;
        let Ok(fd) = self.open(abs, flags) else {
            return Vec::new();
        };
        let Ok(entries) = rustix::fs::Dir::new(fd) else {
            return Vec::new();
        };
        self.record(Access::Dir {
            path: abs.to_string(),
        });
        let mut names: Vec<String> = entries
            .filter_map(|entry| entry.ok())
            .filter_map(|entry| entry.file_name().to_str().ok().map(str::to_string))
            .filter(|name| name != "." && name != "..")
            .collect();
        names.sort();
        if names.len() > MAX_DIR_ENTRIES {
            self.warn(format!(
                "{}: {} entries, only the first {MAX_DIR_ENTRIES} were read",
                self.shown(abs),
                names.len()
            ));
            names.truncate(MAX_DIR_ENTRIES);
        }
        // Entries are facts too (library names, PCI addresses): record them for --dump.
        for name in &names {
            let child = format!("{}/{name}", abs.trim_end_matches('/'));
            match self.kind_of(&child) {
                Some(FileType::Directory) => self.record(Access::Dir { path: child }),
                Some(_) => self.record(Access::Marker { path: child }),
                None => {}
            }
        }
        names
    }

    /// The last component of a symlink's target (`driver -> ../../bus/pci/drivers/nvidia`
    /// gives `nvidia`); in a captured tree a plain file holding the name works too. The
    /// link itself is read relative to its directory, never followed.
    pub fn link_name(&self, abs: &str) -> Option<String> {
        let (parent, leaf) = abs.trim_end_matches('/').rsplit_once('/')?;
        let parent_fd = self.open(parent, OFlags::PATH | OFlags::DIRECTORY).ok()?;
        if let Ok(target) = rustix::fs::readlinkat(&parent_fd, leaf, Vec::new()) {
            let target = PathBuf::from(target.to_string_lossy().into_owned());
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

    /// 20,000 PCI devices took main 16 s: listing is capped and recording is linear.
    #[test]
    fn many_pci_devices_cost_a_bounded_time() {
        let dir = tempfile::tempdir().unwrap();
        let devices = dir.path().join("sys/bus/pci/devices");
        std::fs::create_dir_all(&devices).unwrap();
        for i in 0..20_000 {
            std::fs::write(
                devices.join(format!(
                    "0000:{:02x}:{:02x}.{}",
                    i >> 8 & 0xff,
                    i & 0xff,
                    i >> 16
                )),
                "",
            )
            .unwrap();
        }
        let root = SysRoot::at(dir.path());
        let start = std::time::Instant::now();
        let names = root.list("/sys/bus/pci/devices");
        assert_eq!(names.len(), MAX_DIR_ENTRIES);
        assert!(root.take_warnings()[0].contains("only the first"));
        assert!(start.elapsed().as_secs_f64() < 5.0, "{:?}", start.elapsed());
    }

    /// A file swapped for a link to outside the tree, as fast as a thread can, is never
    /// read through the link: each read returns the in-tree bytes or nothing.
    #[test]
    fn a_file_swapped_for_a_link_is_never_read_outside() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("shadow"), "SECRET\n").unwrap();
        let dir = tree();
        let d = dir.path().to_path_buf();
        std::fs::write(d.join("proc/version"), "inside\n").unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let swapper = {
            let (stop, d, secret) = (stop.clone(), d.clone(), outside.path().join("shadow"));
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = std::fs::remove_file(d.join("proc/version.new"));
                    let _ = std::os::unix::fs::symlink(&secret, d.join("proc/version.new"));
                    let _ = std::fs::rename(d.join("proc/version.new"), d.join("proc/version"));
                    let _ = std::fs::write(d.join("proc/version.new"), "inside\n");
                    let _ = std::fs::rename(d.join("proc/version.new"), d.join("proc/version"));
                }
            })
        };
        let root = SysRoot::at(&d);
        let (mut inside, deadline) = (
            0,
            std::time::Instant::now() + std::time::Duration::from_millis(500),
        );
        while std::time::Instant::now() < deadline {
            match root.read("/proc/version").as_deref() {
                Some("inside\n") => inside += 1,
                None => {}
                Some(other) => panic!("read outside the tree: {other:?}"),
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        swapper.join().unwrap();
        assert!(inside > 0, "the in-tree file was never read");
    }

    /// A FIFO swapped in for a file never blocks a read.
    #[test]
    fn a_fifo_swapped_in_never_blocks() {
        let dir = tree();
        let fifo = dir.path().join("proc/fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path that lives across the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        std::fs::rename(&fifo, dir.path().join("proc/meminfo")).unwrap();
        let root = SysRoot::at(dir.path());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(root.read("/proc/meminfo")).unwrap());
        let got = rx.recv_timeout(std::time::Duration::from_secs(5));
        assert_eq!(got, Ok(None), "the read blocked or read a FIFO");
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

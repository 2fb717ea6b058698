//! Files reached relative to a directory descriptor, never through a link someone else
//! planted: the one place edgeplan opens what other people's directories hold.
//!
//! Reads below a captured tree go through [`open_beneath`]: the kernel's `openat2` with
//! `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` (a link is followed only while it stays
//! below the root; an absolute link or a `..` above the root fails with `EXDEV`), and,
//! where that syscall is missing, the same walk done here one `O_PATH | O_NOFOLLOW`
//! component at a time. The caller then checks the opened descriptor (`fstat`) and reads
//! that same descriptor, so nothing can be swapped between the check and the read.
//!
//! Writes go through [`create_temp`] and [`mkdir_temp`]: a new name nobody can guess,
//! created `O_EXCL | O_NOFOLLOW` (or `mkdirat`, which never follows), then renamed into
//! place by the caller.

use std::hash::{BuildHasher, Hasher};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rustix::fs::{self as rfs, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// Set once `openat2` answered `ENOSYS`: the walk below is used from then on.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// How many links one lookup may follow, as the kernel allows (`ELOOP` past it).
const MAX_LINKS: usize = 40;

/// Opens the directory at `path` (the caller's own choice of path, followed as given).
pub fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    let path = if path.as_os_str().is_empty() {
        Path::new(".")
    } else {
        path
    };
    Ok(rfs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Opens `rel` (a relative path; a leading `/` is ignored) below `root` with `flags`,
/// following links only while they stay below `root`. `EXDEV` when the path or a link
/// leaves the root, `ELOOP` past [`MAX_LINKS`] links.
pub fn open_beneath(root: BorrowedFd, rel: &str, flags: OFlags) -> io::Result<OwnedFd> {
    let rel = rel.trim_start_matches('/');
    let rel = if rel.is_empty() { "." } else { rel };
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        match rfs::openat2(
            root,
            rel,
            flags | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        ) {
            Err(Errno::NOSYS) => NO_OPENAT2.store(true, Ordering::Relaxed),
            // EAGAIN: the kernel asks for a retry after a concurrent rename; the walk
            // below gives the same answer without the retry loop.
            Err(Errno::AGAIN) => {}
            other => return Ok(other?),
        }
    }
    walk_beneath(root, rel, flags)
}

/// [`open_beneath`] done in user space: each component opened `O_PATH | O_NOFOLLOW`
/// relative to the one before; a link's target is read from the link's own descriptor
/// and resolved the same way (`..` never climbs above `root`; an absolute target is
/// outside). The last component is opened `O_NOFOLLOW` relative to its directory, so a
/// link swapped in after the walk fails (`ELOOP`) rather than being followed.
pub fn walk_beneath(root: BorrowedFd, rel: &str, flags: OFlags) -> io::Result<OwnedFd> {
    let mut todo: Vec<String> = rel
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .rev()
        .map(str::to_string)
        .collect();
    let mut dirs: Vec<OwnedFd> = Vec::new();
    let mut links = 0;
    while let Some(name) = todo.pop() {
        if name == "." {
            continue;
        }
        if name == ".." {
            dirs.pop().ok_or(Errno::XDEV)?;
            continue;
        }
        let here = dirs.last().map_or(root, |d| d.as_fd());
        let fd = rfs::openat(
            here,
            name.as_str(),
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let kind = FileType::from_raw_mode(rfs::fstat(&fd)?.st_mode);
        if kind == FileType::Symlink {
            links += 1;
            if links > MAX_LINKS {
                return Err(Errno::LOOP.into());
            }
            let target = rfs::readlinkat(&fd, "", Vec::new())?;
            let target = target.to_string_lossy();
            if target.starts_with('/') {
                return Err(Errno::XDEV.into());
            }
            todo.extend(
                target
                    .split('/')
                    .filter(|p| !p.is_empty())
                    .rev()
                    .map(str::to_string),
            );
            continue;
        }
        if todo.is_empty() {
            return Ok(rfs::openat(
                here,
                name.as_str(),
                flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?);
        }
        if kind != FileType::Directory {
            return Err(Errno::NOTDIR.into());
        }
        dirs.push(fd);
    }
    let here = dirs.last().map_or(root, |d| d.as_fd());
    Ok(rfs::openat(
        here,
        ".",
        flags | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Who chose a file [`read_capped`] reads, which decides how it is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Named on the command line: opened as given, links followed, and it may be a pipe
    /// (`--catalog <(...)`); the cap is counted as bytes are read.
    Named,
    /// Found by edgeplan in a directory someone else may write (the Hugging Face cache,
    /// a manifest's profiles, `/proc`, `/sys`): opened `O_NONBLOCK` (a FIFO never blocks)
    /// and read only when the opened descriptor is a regular file; links followed.
    Found,
    /// [`Source::Found`], and the last component must not be a link (`O_NOFOLLOW`):
    /// for files their writer never makes a link (`refs/main`).
    FoundNoFollow,
}

/// Reads at most `max` bytes of the file at `path`, opened as `source` says, from the
/// one descriptor it opened (nothing swapped in after a check is ever read). Errors:
/// `NotFound`; `InvalidInput` "not a regular file" for a FIFO, socket or device where
/// `source` is not [`Source::Named`]; `FileTooLarge` past `max` (from `fstat` when the
/// size is known, else counted as read: `/dev/zero` or an endless pipe costs `max`
/// bytes, once); `ELOOP` for a link under [`Source::FoundNoFollow`].
pub fn read_capped(path: &Path, max: u64, source: Source) -> io::Result<Vec<u8>> {
    let (file, size) = open_file(path, source)?;
    if size.is_some_and(|n| n > max) {
        return Err(too_large(max));
    }
    read_fd_capped(file, max)
}

/// Opens `path` for reading as `source` says ([`read_capped`]'s rules), for a caller
/// that streams it; with its size when it is a regular file.
pub fn open_file(path: &Path, source: Source) -> io::Result<(std::fs::File, Option<u64>)> {
    let path = if path.as_os_str().is_empty() {
        Path::new(".")
    } else {
        path
    };
    let base = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY;
    let flags = match source {
        Source::Named => base,
        Source::Found => base | OFlags::NONBLOCK,
        Source::FoundNoFollow => base | OFlags::NONBLOCK | OFlags::NOFOLLOW,
    };
    let fd = rfs::open(path, flags, Mode::empty())?;
    let stat = rfs::fstat(&fd)?;
    let kind = FileType::from_raw_mode(stat.st_mode);
    if kind == FileType::Directory {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a directory",
        ));
    }
    if source != Source::Named && kind != FileType::RegularFile {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file (a FIFO, socket or device); not read",
        ));
    }
    let size = (kind == FileType::RegularFile).then_some(stat.st_size as u64);
    Ok((std::fs::File::from(fd), size))
}

/// Reads `from` to its end, refusing more than `max` bytes (`FileTooLarge`).
pub fn read_fd_capped(from: impl io::Read, max: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    io::Read::read_to_end(&mut io::Read::take(from, max.saturating_add(1)), &mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(too_large(max));
    }
    Ok(bytes)
}

fn too_large(max: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!("more than {max} bytes; not read"),
    )
}

/// [`read_capped`] as UTF-8 text (`InvalidData` when it is not).
pub fn read_text(path: &Path, max: u64, source: Source) -> io::Result<String> {
    String::from_utf8(read_capped(path, max, source)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// The entries of the directory at `path` (the one place edgeplan lists a directory by
/// path; callers cap how many they take).
pub fn read_dir(path: &Path) -> io::Result<std::fs::ReadDir> {
    std::fs::read_dir(path)
}

/// The type of what `fd` refers to.
pub fn kind(fd: BorrowedFd) -> io::Result<FileType> {
    Ok(FileType::from_raw_mode(rfs::fstat(fd)?.st_mode))
}

/// Sixteen hex digits nobody else can predict: the standard library's per-process random
/// SipHash keys (seeded from the OS's random source) over the time, the process id and
/// a counter.
pub fn random_hex() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    h.write_u128(now);
    h.write_u32(std::process::id());
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("{:016x}", h.finish())
}

/// Creates a new file `{prefix}{random}.tmp` in `dir`, `O_EXCL | O_NOFOLLOW` (a name
/// that exists, link or not, is never opened), with `mode` (less the umask). Returns the
/// descriptor, open for writing, and the name.
pub fn create_temp(dir: BorrowedFd, prefix: &str, mode: u32) -> io::Result<(OwnedFd, String)> {
    for _ in 0..64 {
        let name = format!("{prefix}{}.tmp", random_hex());
        match rfs::openat(
            dir,
            name.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        ) {
            Ok(fd) => return Ok((fd, name)),
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free temporary name after 64 tries",
    ))
}

/// Creates a new directory `{prefix}{random}` in `dir` with mode 0700 (private to this
/// user while it is filled); returns its name.
pub fn mkdir_temp(dir: BorrowedFd, prefix: &str) -> io::Result<String> {
    for _ in 0..64 {
        let name = format!("{prefix}{}", random_hex());
        match rfs::mkdirat(dir, name.as_str(), Mode::from_raw_mode(0o700)) {
            Ok(()) => return Ok(name),
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free temporary name after 64 tries",
    ))
}

/// The signal caught while [`with_signals_deferred`] ran, 0 for none.
static DEFERRED: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// One critical section at a time: each saves and restores the handlers it found.
static SIGNALS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The signals that end a run from a terminal or a service manager.
const ENDING: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

extern "C" fn defer(signal: libc::c_int) {
    DEFERRED.store(signal, Ordering::SeqCst);
}

/// Runs `f` (a temporary file or directory created, filled, renamed or removed) with
/// SIGINT, SIGTERM and SIGHUP held back: one that arrives meanwhile, on any thread, is
/// only noted, and raised again once `f` is done and the previous handling restored. So
/// Ctrl-C never leaves a half-written temporary behind: the save or dump completes, or
/// its cleanup does, and then the process ends as the signal says.
pub fn with_signals_deferred<T>(f: impl FnOnce() -> T) -> T {
    let one = SIGNALS.lock().unwrap_or_else(|e| e.into_inner());
    DEFERRED.store(0, Ordering::SeqCst);
    // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value to fill in.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = defer as *const () as libc::sighandler_t;
    action.sa_flags = libc::SA_RESTART;
    // SAFETY: zeroed sigactions are valid out-parameters for the previous handlers.
    let mut old: [libc::sigaction; 3] = unsafe { std::mem::zeroed() };
    for (signal, old) in ENDING.iter().zip(old.iter_mut()) {
        // SAFETY: `action` is fully initialised and `defer` only stores to an atomic,
        // which is async-signal-safe; `old` receives the handler to restore.
        unsafe { libc::sigaction(*signal, &action, old) };
    }
    let result = f();
    for (signal, old) in ENDING.iter().zip(old.iter()) {
        // SAFETY: `old` is what sigaction returned for this signal above.
        unsafe { libc::sigaction(*signal, old, std::ptr::null_mut()) };
    }
    let caught = DEFERRED.swap(0, Ordering::SeqCst);
    drop(one);
    if caught != 0 {
        // SAFETY: raising a signal on this thread has no memory-safety preconditions.
        unsafe { libc::raise(caught) };
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    static SEEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    extern "C" fn count(_: libc::c_int) {
        SEEN.fetch_add(1, Ordering::SeqCst);
    }

    /// A SIGHUP during the critical section is held until it is over, then delivered to
    /// the handler that was there before.
    #[test]
    fn an_ending_signal_waits_for_the_critical_section() {
        // Installed under the same lock, so no other test's critical section restores
        // over it.
        let held = SIGNALS.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: a zeroed sigaction is valid; `count` only touches an atomic.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = count as *const () as libc::sighandler_t;
        // SAFETY: installs a handler for SIGHUP with a valid sigaction.
        unsafe { libc::sigaction(libc::SIGHUP, &action, std::ptr::null_mut()) };
        drop(held);
        let inside = with_signals_deferred(|| {
            // SAFETY: raising a signal has no memory-safety preconditions.
            unsafe { libc::raise(libc::SIGHUP) };
            SEEN.load(Ordering::SeqCst)
        });
        assert_eq!(inside, 0, "delivered during the critical section");
        assert_eq!(SEEN.load(Ordering::SeqCst), 1, "not delivered after it");
    }

    fn tree() -> (tempfile::TempDir, tempfile::TempDir) {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "secret").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("sys/devices/pci0/0000:01:00.0")).unwrap();
        std::fs::create_dir_all(d.join("sys/bus/pci/devices")).unwrap();
        std::fs::write(d.join("sys/devices/pci0/0000:01:00.0/vendor"), "0x10de\n").unwrap();
        symlink(
            "../../../devices/pci0/0000:01:00.0",
            d.join("sys/bus/pci/devices/0000:01:00.0"),
        )
        .unwrap();
        symlink(outside.path().join("secret"), d.join("abs")).unwrap();
        symlink("../../../../../../../../../..", d.join("sys/up")).unwrap();
        symlink("loop2", d.join("loop1")).unwrap();
        symlink("loop1", d.join("loop2")).unwrap();
        (dir, outside)
    }

    fn read(fd: io::Result<OwnedFd>) -> io::Result<String> {
        let mut text = String::new();
        io::Read::read_to_string(&mut std::fs::File::from(fd?), &mut text)?;
        Ok(text)
    }

    /// Both resolvers give the same answers: in-tree links work, escapes are EXDEV.
    #[test]
    fn links_inside_work_and_escapes_fail_in_both_resolvers() {
        let (dir, outside) = tree();
        let root = open_dir(dir.path()).unwrap();
        type Open = fn(BorrowedFd, &str, OFlags) -> io::Result<OwnedFd>;
        for open in [open_beneath as Open, walk_beneath as Open] {
            let via_link = "/sys/bus/pci/devices/0000:01:00.0/vendor";
            assert_eq!(
                read(open(root.as_fd(), via_link, OFlags::RDONLY)).unwrap(),
                "0x10de\n"
            );
            let escape = |rel: &str| open(root.as_fd(), rel, OFlags::RDONLY).unwrap_err();
            assert_eq!(escape("abs").raw_os_error(), Some(libc::EXDEV));
            let up = format!("sys/up/{}", outside.path().join("secret").display());
            assert_eq!(escape(&up).raw_os_error(), Some(libc::EXDEV));
            assert_eq!(escape("../x").raw_os_error(), Some(libc::EXDEV));
            assert_eq!(escape("loop1").raw_os_error(), Some(libc::ELOOP));
            assert_eq!(escape("missing").kind(), io::ErrorKind::NotFound);
        }
    }

    /// A found file must be a regular file within the cap; a named one may be a pipe.
    #[test]
    fn capped_reads_refuse_fifos_devices_links_and_big_files() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let fifo = d.join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `c` is a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        symlink("/dev/zero", d.join("zero")).unwrap();
        std::fs::File::create(d.join("big"))
            .unwrap()
            .set_len(200 << 20)
            .unwrap();
        std::fs::write(d.join("ok"), "text").unwrap();
        symlink("ok", d.join("link")).unwrap();
        let kind = |name: &str, source| {
            read_capped(&d.join(name), 1 << 20, source)
                .unwrap_err()
                .kind()
        };
        assert_eq!(kind("fifo", Source::Found), io::ErrorKind::InvalidInput);
        assert_eq!(kind("zero", Source::Found), io::ErrorKind::InvalidInput);
        assert_eq!(kind("big", Source::Found), io::ErrorKind::FileTooLarge);
        assert_eq!(kind("zero", Source::Named), io::ErrorKind::FileTooLarge);
        assert_eq!(kind("big", Source::Named), io::ErrorKind::FileTooLarge);
        let looped = read_capped(&d.join("link"), 1, Source::FoundNoFollow).unwrap_err();
        assert_eq!(looped.raw_os_error(), Some(libc::ELOOP));
        assert_eq!(
            read_text(&d.join("link"), 4, Source::Found).unwrap(),
            "text"
        );
        assert_eq!(
            read_capped(&d.join("ok"), 3, Source::Found)
                .unwrap_err()
                .kind(),
            io::ErrorKind::FileTooLarge
        );
    }

    #[test]
    fn temp_names_are_new_and_never_follow_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let fd = open_dir(dir.path()).unwrap();
        let (_, a) = create_temp(fd.as_fd(), ".x.", 0o600).unwrap();
        let (_, b) = create_temp(fd.as_fd(), ".x.", 0o600).unwrap();
        assert_ne!(a, b);
        assert!(a.starts_with(".x.") && a.ends_with(".tmp") && a.len() == 3 + 16 + 4);
        let d = mkdir_temp(fd.as_fd(), ".d.").unwrap();
        assert!(dir.path().join(d).is_dir());
    }
}

//! One bench at a time on a host: two runs timing kernels at once each see about half
//! the machine and would report it as the kernels' speed.
//!
//! The real executor takes an exclusive `flock` on `edgeplan-bench.lock` in `/run/lock`
//! (or the temporary directory where that is missing): host-wide, so a bench run by
//! another user is seen too, and released by the kernel when the process ends, however
//! it ends. The file is opened without following a link and without creating over
//! another user's file (it is opened as it is when it exists; a lock needs only a
//! read descriptor), and must be a regular file. When another bench holds it, this one
//! says so and waits, up to [`MAX_WAIT`]; past that (a stuck or hostile holder) it runs
//! anyway and says its figures may be shared. The fake executor takes no lock: its
//! figures are simulated.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::fs::{self as rfs, FileType, FlockOperation, Mode, OFlags};
use rustix::io::Errno;

/// The lock file's name.
pub const LOCK_NAME: &str = "edgeplan-bench.lock";

/// The longest a bench waits for another to finish.
pub const MAX_WAIT: Duration = Duration::from_secs(600);

/// A held lock: released when dropped (or when the process ends).
#[derive(Debug)]
pub struct BenchLock {
    _fd: OwnedFd,
}

/// Where the lock lives: `/run/lock` when it is a directory, else the temporary directory.
pub fn default_path() -> PathBuf {
    let run_lock = Path::new("/run/lock");
    let dir = if run_lock.is_dir() {
        run_lock.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    dir.join(LOCK_NAME)
}

/// Opens the lock file at `path`, never through a link and never a FIFO or device.
fn open(path: &Path) -> std::io::Result<OwnedFd> {
    let base = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let mut tries = 0;
    let fd = loop {
        tries += 1;
        if tries > 8 {
            return Err(std::io::Error::other("it keeps appearing and disappearing"));
        }
        match rfs::open(path, base, Mode::empty()) {
            Ok(fd) => break fd,
            Err(Errno::NOENT) => {}
            Err(e) => return Err(e.into()),
        }
        // Created new (O_EXCL: never over what another user made in between), readable
        // by all so that their benches can lock it too.
        match rfs::open(
            path,
            base | OFlags::CREATE | OFlags::EXCL,
            Mode::from_raw_mode(0o644),
        ) {
            Ok(fd) => {
                let _ = rfs::fchmod(&fd, Mode::from_raw_mode(0o644));
                break fd;
            }
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    };
    if FileType::from_raw_mode(rfs::fstat(&fd)?.st_mode) != FileType::RegularFile {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(fd)
}

/// Takes the bench lock at `path`, waiting up to `max_wait` for another bench; `say`
/// gets the lines to show (waiting, running anyway, or why no lock could be taken).
/// `None` when the bench runs without the lock.
pub fn acquire(path: &Path, max_wait: Duration, say: &dyn Fn(String)) -> Option<BenchLock> {
    let shown = path.display();
    let fd = match open(path) {
        Ok(fd) => fd,
        Err(e) => {
            say(format!(
                "warning: cannot open the bench lock {shown} ({e}); another bench running at the same time would go unnoticed"
            ));
            return None;
        }
    };
    let start = Instant::now();
    let mut said = false;
    loop {
        match rfs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {
                if said {
                    say(format!(
                        "the other bench finished after {:.0} s; starting",
                        start.elapsed().as_secs_f64()
                    ));
                }
                return Some(BenchLock { _fd: fd });
            }
            Err(Errno::WOULDBLOCK) if start.elapsed() < max_wait => {
                if !said {
                    say(format!(
                        "another edgeplan bench is running on this host (it holds {shown}); waiting up to {} s for it to finish, as two at once would each measure half the machine",
                        max_wait.as_secs()
                    ));
                    said = true;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(Errno::WOULDBLOCK) => {
                say(format!(
                    "warning: another edgeplan bench still holds {shown} after {} s; running anyway: the figures may be shared with it and lower than this host's",
                    max_wait.as_secs()
                ));
                return None;
            }
            Err(e) => {
                say(format!(
                    "warning: cannot lock {shown} ({e}); another bench running at the same time would go unnoticed"
                ));
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn a_second_bench_waits_then_runs_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_NAME);
        let lines = RefCell::new(Vec::new());
        let say = |l: String| lines.borrow_mut().push(l);
        let first = acquire(&path, Duration::ZERO, &say).expect("a free lock is taken");
        assert!(lines.borrow().is_empty());
        // Held: a second one gives up at once here (zero wait) and says so.
        assert!(acquire(&path, Duration::ZERO, &say).is_none());
        assert!(
            lines.borrow()[0].contains("still holds"),
            "{:?}",
            lines.borrow()
        );
        // Released in a moment: the second waits for it, then runs.
        lines.borrow_mut().clear();
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            drop(first);
        });
        assert!(acquire(&path, Duration::from_secs(30), &say).is_some());
        releaser.join().unwrap();
        let lines = lines.borrow();
        assert!(
            lines[0].contains("another edgeplan bench is running"),
            "{lines:?}"
        );
        assert!(lines[1].contains("finished"), "{lines:?}");
    }

    #[test]
    fn a_planted_link_or_fifo_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let link = dir.path().join("link.lock");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let said = RefCell::new(Vec::new());
        let say = |l: String| said.borrow_mut().push(l);
        assert!(acquire(&link, Duration::ZERO, &say).is_none());
        assert!(said.borrow()[0].contains("cannot open the bench lock"));
        let fifo = dir.path().join("fifo.lock");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path that lives across the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        assert!(acquire(&fifo, Duration::ZERO, &say).is_none());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    }
}

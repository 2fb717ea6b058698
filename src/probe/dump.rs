//! `probe --dump DIR`: write every file the probe read into DIR, redacted, so that
//! `probe --sysroot DIR` on another machine reproduces the same file-based facts.
//!
//! Redaction removes what identifies one machine rather than describing hardware:
//! the `GPU UUID:` line of the NVIDIA information file, `Serial` in cpuinfo, build
//! properties whose key names a serial number, MAC or UUID, whole files such as
//! `/sys/devices/soc0/serial_number`, and anything shaped like a MAC address.
//! Live-only facts (CPUID, XCR0, HWCAP, the environment) are not files and are not dumped.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::{self as rfs, Mode, OFlags};
use rustix::io::Errno;

use crate::error::io_error;
use crate::fsx;
use crate::probe::sysroot::{Access, SysRoot};

pub const REDACTED: &str = "REDACTED";

/// Writes the accesses of `sys` as the tree `dir`; returns how many entries were written.
///
/// The tree is built in a new private directory (mode 0700, a name nobody can guess)
/// beside `dir`, every entry created relative to it without following links, and then
/// renamed to `dir` in one step: an existing empty `dir` is replaced, anything else
/// there (a file, a link, a directory that is not empty) is refused. A failed dump
/// removes its directory and leaves nothing behind.
pub fn write(sys: &SysRoot, dir: &Path) -> anyhow::Result<usize> {
    write_accesses(&sys.accesses(), dir)
}

/// [`write`] for a list of accesses.
pub fn write_accesses(accesses: &[Access], dir: &Path) -> anyhow::Result<usize> {
    let shown = dir.display();
    let fail = |err: std::io::Error| io_error(format!("{shown}: cannot write dump: {err}"));
    let name = dir
        .file_name()
        .ok_or_else(|| io_error(format!("{shown}: cannot write dump: give a directory name")))?;
    let parent = dir.parent().unwrap_or(Path::new("."));
    if !parent.as_os_str().is_empty() {
        std::fs::create_dir_all(parent).map_err(fail)?;
    }
    let parent_fd = fsx::open_dir(parent).map_err(fail)?;
    let prefix = format!(".{}.edgeplan-", name.to_string_lossy());
    // Ctrl-C waits for the dump or its cleanup: no private directory is left behind.
    fsx::with_signals_deferred(|| {
        let temp = fsx::mkdir_temp(parent_fd.as_fd(), &prefix).map_err(fail)?;
        let filled = fill(parent_fd.as_fd(), &temp, accesses).map_err(fail);
        let renamed = filled.and_then(|()| {
            rfs::renameat(parent_fd.as_fd(), temp.as_str(), parent_fd.as_fd(), name)
                .map_err(|e| refused(dir, e.into()))
        });
        if renamed.is_err() {
            let _ = std::fs::remove_dir_all(parent.join(&temp));
        }
        renamed.map(|()| accesses.len())
    })
}

/// Why the finished dump could not be renamed to `dir`.
fn refused(dir: &Path, err: std::io::Error) -> anyhow::Error {
    let shown = dir.display();
    match err.raw_os_error() {
        Some(libc::ENOTEMPTY | libc::EEXIST) => io_error(format!(
            "--dump {shown}: directory is not empty; give a new or empty directory (a dump would overwrite what is there)"
        )),
        Some(libc::ENOTDIR) if !dir.is_dir() || dir.is_symlink() => io_error(format!(
            "--dump {shown}: exists and is not a directory; give a new or empty directory"
        )),
        _ => io_error(format!("{shown}: cannot write dump: {err}")),
    }
}

/// Fills the private directory `temp` (in `parent`) with the accesses, then gives it the
/// mode a new directory gets (0777 less the umask).
fn fill(parent: BorrowedFd, temp: &str, accesses: &[Access]) -> std::io::Result<()> {
    let top = rfs::openat(
        parent,
        temp,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    for access in accesses {
        let (Access::Dir { path } | Access::File { path, .. } | Access::Marker { path }) = access;
        let parts: Vec<&str> = path
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        if parts.contains(&"..") {
            continue; // never write outside DIR (the reader refuses such paths too)
        }
        let Some((leaf, dirs)) = parts.split_last() else {
            continue;
        };
        match access {
            Access::Dir { .. } => {
                descend(top.as_fd(), &parts)?;
            }
            Access::File { path, bytes } => {
                let at = descend(top.as_fd(), dirs)?;
                let fd = create(at.as_fd(), leaf, OFlags::TRUNC)?;
                std::io::Write::write_all(&mut std::fs::File::from(fd), &redact(path, bytes))?;
            }
            Access::Marker { .. } => {
                let at = descend(top.as_fd(), dirs)?;
                match create(at.as_fd(), leaf, OFlags::EXCL) {
                    Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
                    other => drop(other?),
                }
            }
        }
    }
    rfs::fchmod(&top, Mode::from_raw_mode(0o777 & !umask()))?;
    Ok(())
}

/// Opens (creating as needed) the directories `parts` below `top`, never following a link.
fn descend(top: BorrowedFd, parts: &[&str]) -> std::io::Result<OwnedFd> {
    let mut here = rfs::openat(top, ".", OFlags::PATH | OFlags::CLOEXEC, Mode::empty())?;
    for part in parts {
        match rfs::mkdirat(&here, *part, Mode::from_raw_mode(0o777)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
        here = rfs::openat(
            &here,
            *part,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
    }
    Ok(here)
}

/// A file `name` in `dir`, opened for writing, never through a link.
fn create(dir: BorrowedFd, name: &str, extra: OFlags) -> std::io::Result<OwnedFd> {
    Ok(rfs::openat(
        dir,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC | extra,
        Mode::from_raw_mode(0o666),
    )?)
}

/// This process's umask, from `/proc/self/status` (reading it with `umask(2)` would
/// change it); 022 when that is unreadable.
fn umask() -> u32 {
    crate::fsx::read_text(
        std::path::Path::new("/proc/self/status"),
        1 << 20,
        crate::fsx::Source::Found,
    )
    .ok()
    .and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Umask:"))
            .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
    })
    .unwrap_or(0o022)
}

/// The bytes to store for `path`, with identifying values replaced.
pub fn redact(path: &str, bytes: &[u8]) -> Vec<u8> {
    let name = path.rsplit('/').next().unwrap_or(path);
    if [
        "serial_number",
        "serial-number",
        "product_serial",
        "board_serial",
        "chassis_serial",
        "product_uuid",
        "machine-id",
    ]
    .contains(&name)
    {
        return format!("{REDACTED}\n").into_bytes();
    }
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let newline = if line.ends_with('\n') { "\n" } else { "" };
        let redacted = if let Some((key, _)) = body.split_once(':').filter(|(k, _)| {
            let k = k.trim();
            k == "GPU UUID" || k == "Serial" || k == "Board Serial"
        }) {
            format!("{key}:\t{REDACTED}")
        } else if let Some((key, _)) = body.split_once('=').filter(|(k, _)| {
            let k = k.trim().to_ascii_lowercase();
            !k.starts_with('#')
                && (k.contains("serial") || k.contains("macaddr") || k.contains("uuid"))
        }) {
            format!("{key}={REDACTED}")
        } else {
            mask_macs(body)
        };
        out.push_str(&redacted);
        out.push_str(newline);
    }
    out.into_bytes()
}

/// Replaces `aa:bb:cc:dd:ee:ff` shapes with zeros.
fn mask_macs(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        if i + 17 <= bytes.len() && is_mac(&bytes[i..i + 17]) {
            let before_ok = i == 0 || !bytes[i - 1].is_ascii_hexdigit() && bytes[i - 1] != b':';
            let after_ok = i + 17 == bytes.len()
                || !bytes[i + 17].is_ascii_hexdigit() && bytes[i + 17] != b':';
            if before_ok && after_ok {
                out.push_str("00:00:00:00:00:00");
                i += 17;
                continue;
            }
        }
        let ch = text[i..].chars().next().unwrap_or('\u{fffd}');
        out.push(ch);
        i += ch.len_utf8().max(1);
    }
    out
}

fn is_mac(b: &[u8]) -> bool {
    (0..17).all(|j| {
        if j % 3 == 2 {
            b[j] == b':'
        } else {
            b[j].is_ascii_hexdigit()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, text: &str) -> Access {
        Access::File {
            path: path.into(),
            bytes: text.as_bytes().to_vec(),
        }
    }

    /// A link planted in DIR (here before the dump starts; on main after its emptiness
    /// check, which is the same to `write`) is never written through.
    #[test]
    fn a_link_planted_in_the_dump_directory_is_never_followed() {
        let victim = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("capture");
        std::fs::create_dir(&dir).unwrap();
        std::os::unix::fs::symlink(victim.path(), dir.join("proc")).unwrap();
        let err = write_accesses(&[file("/proc/meminfo", "MemTotal: 1 kB\n")], &dir).unwrap_err();
        assert!(format!("{err}").contains("not empty"), "{err}");
        assert!(!victim.path().join("meminfo").exists());
        // Nothing of the attempt is left beside DIR.
        let left: Vec<_> = std::fs::read_dir(work.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }

    #[test]
    fn a_dump_is_renamed_into_place_and_a_failed_one_leaves_nothing() {
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("capture");
        std::fs::create_dir(&dir).unwrap(); // an empty DIR is replaced
        let n = write_accesses(
            &[
                file("/proc/meminfo", "MemTotal: 1 kB\n"),
                Access::Dir {
                    path: "/sys/bus/pci/devices".into(),
                },
                Access::Marker {
                    path: "/dev/nvidia0".into(),
                },
            ],
            &dir,
        )
        .unwrap();
        assert_eq!(n, 3);
        assert_eq!(
            std::fs::read_to_string(dir.join("proc/meminfo")).unwrap(),
            "MemTotal: 1 kB\n"
        );
        assert!(dir.join("sys/bus/pci/devices").is_dir() && dir.join("dev/nvidia0").is_file());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(
            mode,
            0o777 & !umask(),
            "the private 0700 is dropped at the end"
        );
        // A file where a directory must go fails the dump, which leaves nothing.
        let again = work.path().join("again");
        let err = write_accesses(&[file("/a", "x"), file("/a/b", "y")], &again).unwrap_err();
        assert!(format!("{err}").contains("cannot write dump"), "{err}");
        assert!(!again.exists());
        let names: Vec<String> = std::fs::read_dir(work.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["capture"]);
        // A file or link at DIR is refused.
        std::fs::write(work.path().join("f"), "x").unwrap();
        let err = write_accesses(&[file("/a", "x")], &work.path().join("f")).unwrap_err();
        assert!(format!("{err}").contains("not a directory"), "{err}");
    }

    fn r(path: &str, text: &str) -> String {
        String::from_utf8(redact(path, text.as_bytes())).unwrap()
    }

    #[test]
    fn redacts_identifiers_and_keeps_hardware_facts() {
        let info = "Model: \t\t NVIDIA H100 PCIe\nGPU UUID: \t GPU-5d1c0f5e-0000-1111-2222-333344445555\nBus Location: \t 0000:41:00.0\n";
        let out = r("/proc/driver/nvidia/gpus/0000:41:00.0/information", info);
        assert!(out.contains("NVIDIA H100 PCIe") && out.contains("0000:41:00.0"));
        assert!(!out.contains("5d1c0f5e") && out.contains("GPU UUID:\tREDACTED"));
        let props = r(
            "/system/build.prop",
            "ro.serialno=R5CW12345\nro.boot.wifimacaddr=x\nro.soc.model=SM8650\n",
        );
        assert_eq!(
            props,
            "ro.serialno=REDACTED\nro.boot.wifimacaddr=REDACTED\nro.soc.model=SM8650\n"
        );
        assert_eq!(
            r("/sys/devices/soc0/serial_number", "3735928559\n"),
            "REDACTED\n"
        );
        let cpuinfo = r(
            "/proc/cpuinfo",
            "Model\t: Raspberry Pi 5\nSerial\t\t: 0123456789abcdef\n",
        );
        assert_eq!(cpuinfo, "Model\t: Raspberry Pi 5\nSerial\t\t:\tREDACTED\n");
        assert_eq!(
            r("/x", "mac 0a:1b:2c:3d:4e:5f end"),
            "mac 00:00:00:00:00:00 end"
        );
        // A PCI address or time is not a MAC.
        assert_eq!(r("/x", "0000:41:00.0 12:30:45"), "0000:41:00.0 12:30:45");
    }
}

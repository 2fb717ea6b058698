//! `probe --dump DIR`: write every file the probe read into DIR, redacted, so that
//! `probe --sysroot DIR` on another machine reproduces the same file-based facts.
//!
//! Redaction removes what identifies one machine rather than describing hardware:
//! the `GPU UUID:` line of the NVIDIA information file, `Serial` in cpuinfo, build
//! properties whose key names a serial number, MAC or UUID, whole files such as
//! `/sys/devices/soc0/serial_number`, and anything shaped like a MAC address.
//! Live-only facts (CPUID, XCR0, HWCAP, the environment) are not files and are not dumped.

use std::path::Path;

use crate::error::io_error;
use crate::probe::sysroot::{Access, SysRoot};

pub const REDACTED: &str = "REDACTED";

/// Writes the accesses of `sys` below `dir`; returns how many entries were written.
pub fn write(sys: &SysRoot, dir: &Path) -> anyhow::Result<usize> {
    let fail = |path: &Path, err: std::io::Error| {
        io_error(format!("{}: cannot write dump: {err}", path.display()))
    };
    std::fs::create_dir_all(dir).map_err(|e| fail(dir, e))?;
    let accesses = sys.accesses();
    for access in &accesses {
        let (Access::Dir { path } | Access::File { path, .. } | Access::Marker { path }) = access;
        if path.split('/').any(|part| part == "..") {
            continue; // never write outside DIR (the reader refuses such paths too)
        }
        match access {
            Access::Dir { path } => {
                let target = dir.join(path.trim_start_matches('/'));
                std::fs::create_dir_all(&target).map_err(|e| fail(&target, e))?;
            }
            Access::File { path, bytes } => {
                let target = dir.join(path.trim_start_matches('/'));
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| fail(parent, e))?;
                }
                std::fs::write(&target, redact(path, bytes)).map_err(|e| fail(&target, e))?;
            }
            Access::Marker { path } => {
                let target = dir.join(path.trim_start_matches('/'));
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| fail(parent, e))?;
                }
                if !target.exists() {
                    std::fs::write(&target, b"").map_err(|e| fail(&target, e))?;
                }
            }
        }
    }
    Ok(accesses.len())
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

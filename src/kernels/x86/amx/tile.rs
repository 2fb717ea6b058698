//! The one AMX tile configuration of the crate (kernels.md §6.2) and the two instructions
//! that bracket tile work: `ldtilecfg` ([`load`]) and `tilerelease` ([`release`]). The
//! W4A8 and bf16/W4A16 AMX kernels and the bench's AMX peak loops all use palette 1 with
//! tiles 0–7 as 16 rows × 64 bytes, so they share [`PALETTE1_16X64`].

use core::arch::asm;

/// The 64-byte `ldtilecfg` operand: palette, start row, 14 reserved bytes (must be zero),
/// bytes per row of each of the 16 tiles, rows of each tile.
#[repr(C, align(64))]
pub struct TileConfig {
    pub palette: u8,
    pub start_row: u8,
    pub reserved: [u8; 14],
    pub colsb: [u16; 16],
    pub rows: [u8; 16],
}
const _: () = assert!(core::mem::size_of::<TileConfig>() == 64);

impl TileConfig {
    /// Palette 1, tiles 0–7: 16 rows × 64 bytes; tiles 8–15 and the reserved bytes zero
    /// (pitfall 1).
    pub const fn all_16x64() -> TileConfig {
        TileConfig {
            palette: 1,
            start_row: 0,
            reserved: [0; 14],
            colsb: [64, 64, 64, 64, 64, 64, 64, 64, 0, 0, 0, 0, 0, 0, 0, 0],
            rows: [16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0],
        }
    }
}

/// [`TileConfig::all_16x64`] in a static: it cannot go stale or be elided while an `asm!`
/// block reads it (pitfall 3).
pub static PALETTE1_16X64: TileConfig = TileConfig::all_16x64();

/// `ldtilecfg [cfg]`: configures the tiles on this thread.
///
/// # Safety
/// The CPU supports AMX-TILE, the OS enabled XTILECFG/XTILEDATA in XCR0 and this process
/// holds the XTILEDATA permission (`arch_prctl`); `cfg` must be a valid configuration for
/// the CPU's palettes (any tile shape beyond the palette's limits faults).
pub unsafe fn load(cfg: &TileConfig) {
    // SAFETY: the caller guarantees AMX is usable and `cfg` valid; `cfg` is a live
    // reference for the duration of the instruction, which only reads it (readonly, not
    // nomem).
    unsafe {
        asm!(
            "ldtilecfg [{cfg}]",
            cfg = in(reg) cfg as *const TileConfig,
            options(nostack, readonly, preserves_flags)
        );
    }
}

/// `tilerelease`: returns the tiles to the init state on this thread.
///
/// # Safety
/// The CPU supports AMX-TILE and the process holds the XTILEDATA permission.
pub unsafe fn release() {
    // SAFETY: the caller guarantees AMX is usable; tilerelease only resets tile state, and
    // the tile registers are declared clobbered.
    unsafe {
        asm!(
            "tilerelease",
            out("tmm0") _, out("tmm1") _, out("tmm2") _, out("tmm3") _,
            out("tmm4") _, out("tmm5") _, out("tmm6") _, out("tmm7") _,
            options(nostack, preserves_flags)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn palette1_config_has_only_tiles_0_to_7() {
        for c in [&PALETTE1_16X64, &TileConfig::all_16x64()] {
            assert_eq!(c.palette, 1);
            assert_eq!(c.start_row, 0);
            assert!(c.reserved.iter().all(|&r| r == 0));
            assert!(c.colsb[..8].iter().all(|&x| x == 64) && c.rows[..8].iter().all(|&x| x == 16));
            assert!(c.colsb[8..].iter().all(|&x| x == 0) && c.rows[8..].iter().all(|&x| x == 0));
        }
        assert_eq!(core::mem::align_of::<TileConfig>(), 64);
        assert_eq!(&PALETTE1_16X64 as *const TileConfig as usize % 64, 0);
    }
}

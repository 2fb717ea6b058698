//! The AMX kernels (Sapphire Rapids and later): W4A8 on AMX-INT8 (`w4a8.rs`), and the
//! AMX-BF16 engine (`bf16_engine.rs`, real and emulated tiles) with its M loop (`drive.rs`)
//! serving W4A16 prefill (`w4a16.rs`) and bf16 prefill (`../bf16/mod.rs`). `tile.rs` is
//! the shared tile configuration. Every driver is generic over its tile engine, so the
//! whole driver runs in tests with emulated tiles (`emu_tests.rs`, `w4a8.rs`'s tests) on
//! hosts without AMX.

pub(crate) mod bf16_engine;
pub(crate) mod drive;
#[cfg(test)]
mod emu_tests;
pub mod tile;
pub(crate) mod w4a16;
pub(crate) mod w4a8;

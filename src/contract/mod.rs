//! The contract floor: the neutral types the pipeline's layers (`plan`, `bench`,
//! `engine`, `commands`) share, so none of them has to import another to name them.
//! It makes no decisions.

mod engine_id;
pub(crate) mod gguf;
pub(crate) mod pins;

pub use engine_id::Engine;

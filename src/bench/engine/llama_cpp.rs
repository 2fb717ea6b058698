//! The llama.cpp launcher: `llama-bench` on GGUF files of the model's shapes.
//! (Being built: until then `--engine llama.cpp` says so, exit 69.)

use std::path::{Path, PathBuf};

use super::protocol::{HarnessRequest, Launcher, Session};
use crate::error::unavailable;

pub struct LlamaBenchLauncher {
    program: PathBuf,
}

impl LlamaBenchLauncher {
    pub fn find(explicit: Option<&Path>) -> anyhow::Result<LlamaBenchLauncher> {
        let _ = explicit;
        Err(unavailable("bench --engine llama.cpp: not built yet"))
    }
}

impl Launcher for LlamaBenchLauncher {
    fn engine(&self) -> &'static str {
        "llama.cpp"
    }
    fn program(&self) -> String {
        self.program.display().to_string()
    }
    fn start(&self, _request: &HarnessRequest) -> anyhow::Result<Box<dyn Session>> {
        Err(unavailable("bench --engine llama.cpp: not built yet"))
    }
}

//! `KernelError`: why a kernel call, quantizer or registry lookup refused its input.
//!
//! Kernels validate shapes at the safe entry points and never panic on caller data; the
//! bench maps these errors to the documented exit codes (a bad model shape is bad data, 65).

use std::fmt;

/// Errors from the kernels module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelError {
    /// Operand shapes do not agree or violate a layout rule (K % 128, lengths).
    Shape(String),
    /// Operand values are unusable (non-finite weights, codes above 15).
    Data(String),
    /// No kernel variant has this name.
    UnknownKernel(String),
    /// The variant exists but this host cannot run it; lists what is missing.
    Unavailable {
        name: String,
        missing: Vec<&'static str>,
    },
    /// The variant serves another path than the one asked for.
    WrongPath { name: String, want: &'static str },
    /// The variant ran but its output is outside the path's tolerance of the scalar
    /// reference (`kernels::verify`).
    Mismatch { name: String, detail: String },
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelError::Shape(s) => write!(f, "bad operand shape: {s}"),
            KernelError::Data(s) => write!(f, "bad operand data: {s}"),
            KernelError::UnknownKernel(n) => {
                write!(
                    f,
                    "unknown kernel '{n}' (list them with `edgeplan bench --list-kernels`)"
                )
            }
            KernelError::Unavailable { name, missing } => write!(
                f,
                "kernel '{name}' cannot run on this host: missing {}",
                missing.join(", ")
            ),
            KernelError::WrongPath { name, want } => {
                write!(f, "kernel '{name}' does not serve the {want} path")
            }
            KernelError::Mismatch { name, detail } => {
                write!(
                    f,
                    "kernel '{name}' disagrees with the scalar reference: {detail}"
                )
            }
        }
    }
}

impl std::error::Error for KernelError {}

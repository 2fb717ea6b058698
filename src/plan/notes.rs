//! A plan's notes: the catalog's, ordered and labelled by where they were measured,
//! and the caveats edgeplan reads in the device's own profile.
//!
//! Order: notes about this device (its profile), the notes measured on the plan's class
//! (and the catalog's notes for that class alone), facts that hold on any hardware (and
//! plain-string notes, which do not say), then figures measured on other classes, each
//! labelled with the class and machine (`measured on x86_cpu: Intel Xeon Platinum
//! 8480C, 24 threads`). `verified: measured` needs one of the second group with a figure
//! ([`figure_on`]), so a plan never claims a measurement it does not show.

use serde_json::json;

use super::catalog::{DType, Engine, Note, NoteScope, PathSpec};
use super::schema::{Fact, PlanNote, Step};
use crate::profile::{Arch, HardwareClass, Profile};

/// The catalog's notes for a plan routed as `route`, in the order shown.
pub(super) fn ordered(spec: &PathSpec, route: HardwareClass) -> Vec<PlanNote> {
    let own = Some(NoteScope::Class(route));
    let mut shown: Vec<PlanNote> = spec
        .notes
        .iter()
        .filter(|n| n.measured_on == own)
        .chain(spec.class_notes(route))
        .map(|n| plan_note(n, route))
        .collect();
    let rest = |any: bool| {
        spec.notes.iter().filter(move |n| match n.measured_on {
            None | Some(NoteScope::Any) => any,
            Some(NoteScope::Class(c)) => !any && c != route,
        })
    };
    shown.extend(rest(true).map(|n| plan_note(n, route)));
    shown.extend(rest(false).map(|n| plan_note(n, route)));
    shown
}

/// A catalog note as a plan shows it: labelled when measured on another class.
fn plan_note(note: &Note, route: HardwareClass) -> PlanNote {
    let label = match note.measured_on {
        Some(NoteScope::Class(c)) if c != route => Some(format!(
            "measured on {c}: {}",
            note.hardware.as_deref().unwrap_or("hardware not stated")
        )),
        _ => None,
    };
    PlanNote {
        text: note.text.clone(),
        measured_on: note.measured_on.map(|s| s.as_str().to_string()),
        hardware: note.hardware.clone(),
        label,
    }
}

/// The first shown note measured on `route` that gives a figure (a digit): what a
/// `verified: measured` plan points the user at.
pub(super) fn figure_on(notes: &[PlanNote], route: HardwareClass) -> Option<&PlanNote> {
    notes.iter().find(|n| {
        n.measured_on.as_deref() == Some(route.as_str())
            && n.text.chars().any(|c| c.is_ascii_digit())
    })
}

/// Whether the CPU has bf16 instructions: arm64 `bf16` (HWCAP2_BF16), x86
/// `avx512_bf16` or `amx_bf16`; from the probe's features, else the cpuinfo flags;
/// `None` when the profile has neither.
pub(super) fn cpu_bf16(profile: &Profile) -> Option<bool> {
    let names: &[&str] = match profile.arch {
        Arch::Aarch64 => &["bf16"],
        Arch::X86_64 => &["avx512_bf16", "amx_bf16"],
    };
    let cpu = &profile.cpu;
    if names.iter().any(|n| cpu.features.contains_key(*n)) {
        return Some(
            names
                .iter()
                .any(|n| cpu.features.get(*n).is_some_and(|f| f.usable)),
        );
    }
    if !cpu.flags.is_empty() {
        return Some(names.iter().any(|n| cpu.has_flag(n)));
    }
    None
}

/// vLLM on a CPU without bf16 instructions, for a path that keeps bf16: what vLLM does
/// there (read in its source), as a note and a trace step. Nothing for llama.cpp,
/// whose 4-bit types compute with 8-bit activations (its CPU plans never pick a 16-bit
/// file), nor off the CPU.
pub(super) fn bf16_caveat(
    profile: &Profile,
    route: HardwareClass,
    spec: &PathSpec,
    origin: &str,
    trace: &mut Vec<Step>,
) -> Option<PlanNote> {
    let cpu_route = matches!(route, HardwareClass::X86Cpu | HardwareClass::Arm64Cpu);
    let keeps_bf16 = spec.dtype == DType::Bfloat16 || spec.activations == DType::Bfloat16;
    if !cpu_route || spec.engine != Engine::Vllm || !spec.runs_in_vllm || !keeps_bf16 {
        return None;
    }
    if cpu_bf16(profile)? {
        return None;
    }
    let what = if spec.activations == DType::Bfloat16 && spec.kernel.weight_bits() == 16 {
        "weights and activations"
    } else {
        "activations"
    };
    let text = match profile.arch {
        Arch::Aarch64 => format!(
            "This CPU has no bf16 instructions (no `bf16` in its Features), and this path keeps {what} in bf16. vLLM does not check: on Linux aarch64 it lists bfloat16 as supported for every CPU (vllm/platforms/cpu.py, supported_dtypes). Its Arm kernels get bf16 only when vLLM is built on a CPU that reports bf16 (cmake/cpu_extension.cmake defines ARM_BF16_SUPPORT and -march=armv8.2-a+bf16 from the build host's /proc/cpuinfo): built on this CPU they leave bf16 out (csrc/cpu/cpu_types_arm.hpp then dispatches float and half only), and a build made on a bf16 CPU uses instructions this one lacks. Expect a bf16 server to fail here. The alternatives, not run by edgeplan on such a CPU: the engine's float16 dtype (vLLM lists it on aarch64 and its 4-bit GEMM dispatches half, csrc/cpu/cpu_wna16.cpp), or `--engine llama.cpp`, whose 4-bit types compute with 8-bit activations."
        ),
        Arch::X86_64 => format!(
            "This CPU has no bf16 instructions (neither avx512_bf16 nor amx_bf16), and this path keeps {what} in bf16. vLLM accepts bf16 on every x86 CPU (vllm/platforms/cpu.py, supported_dtypes); the builds it loads on such a CPU (_C_AVX512, _C_AVX2) are compiled without -mavx512bf16 (cmake/cpu_extension.cmake), so bf16 is converted through fp32 in software, which costs time. Not measured."
        ),
    };
    let (field, value) = match profile.arch {
        Arch::Aarch64 => ("cpu.features.bf16 / cpu.flags bf16", json!(false)),
        Arch::X86_64 => (
            "cpu.features.avx512_bf16, amx_bf16 / cpu.flags",
            json!(false),
        ),
    };
    trace.push(Step {
        rule: "cpu_bf16".into(),
        outcome: format!(
            "the CPU has no bf16 instructions and the path keeps {what} in bf16: a caveat in the notes"
        ),
        facts: vec![Fact::new(field, value, origin.to_string())],
    });
    Some(PlanNote::device(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::catalog::{Catalog, PathId};

    #[test]
    fn own_class_first_then_facts_then_the_rest_labelled() {
        let c = Catalog::builtin();
        let spec = c.path(PathId::W4a16);
        let arm = ordered(spec, HardwareClass::Arm64Cpu);
        let scopes: Vec<Option<&str>> = arm.iter().map(|n| n.measured_on.as_deref()).collect();
        // The Arm notes (by_class) come first, x86 figures last, each labelled.
        let first_other = scopes
            .iter()
            .position(|s| matches!(s, Some(s) if *s != "any" && *s != "arm64_cpu"))
            .unwrap();
        let last_any = scopes.iter().rposition(|s| *s == Some("any")).unwrap();
        assert!(last_any < first_other, "{scopes:?}");
        assert!(arm[0].text.contains("Arm"), "{:?}", arm[0]);
        for n in &arm[first_other..] {
            let label = n.label.as_deref().unwrap();
            assert!(label.starts_with("measured on x86_cpu: "), "{label}");
            assert!(n.shown().starts_with(&format!("[{label}] ")));
        }
        assert!(
            arm.iter()
                .any(|n| n.label.as_deref().is_some_and(|l| l.contains("8480C")))
        );
        assert!(
            arm.iter()
                .any(|n| n.label.as_deref().is_some_and(|l| l.contains("Zen 5")))
        );
        // On x86 the same figures are the plan's own: first and unlabelled.
        let x86 = ordered(spec, HardwareClass::X86Cpu);
        assert_eq!(x86[0].measured_on.as_deref(), Some("x86_cpu"));
        assert!(x86.iter().all(|n| n.label.is_none()));
        assert_eq!(x86.len(), spec.notes.len(), "no class notes on x86");
    }

    #[test]
    fn a_figure_counts_only_when_measured_on_the_class_and_numeric() {
        let note = |text: &str, on: &str| PlanNote {
            text: text.into(),
            measured_on: Some(on.into()),
            hardware: None,
            label: None,
        };
        let notes = [
            note("fast: 86.6 tok/s", "x86_cpu"),
            note("no figure here", "cuda_discrete"),
            note("16 bits per weight", "any"),
        ];
        assert!(figure_on(&notes, HardwareClass::X86Cpu).is_some());
        assert!(figure_on(&notes, HardwareClass::CudaDiscrete).is_none());
        assert!(figure_on(&notes, HardwareClass::Arm64Cpu).is_none());
    }
}

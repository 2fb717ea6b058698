//! The hardware class (contract precedence) and `supports_bf16` of the device that runs
//! the model.
//!
//! Class, first match wins: `npu_phone` (Android SoC in the HTP table) > `jetson` >
//! `cuda_discrete` (an NVIDIA GPU on PCI) > `arm64_cpu` > `x86_cpu`.
//!
//! `supports_bf16`: `jetson` and `cuda_discrete` take the GPU's (compute capability >= 8.0;
//! with several NVIDIA GPUs, all must qualify; unknown counts as no); CPU classes take
//! the CPU's usable features (x86: `avx512_bf16` or `amx_bf16`; arm64: `bf16`);
//! `npu_phone` is false, as the Hexagon HTP runs int8/int16/fp16 graphs, not bf16.

use crate::profile::{Android, Arch, Cpu, Gpu, HardwareClass, Jetson};

pub fn hardware_class(
    arch: Arch,
    android: Option<&Android>,
    jetson: Option<&Jetson>,
    gpus: &[Gpu],
) -> HardwareClass {
    if android
        .and_then(|a| a.npu.as_ref())
        .is_some_and(|npu| npu.present)
    {
        HardwareClass::NpuPhone
    } else if jetson.is_some() {
        HardwareClass::Jetson
    } else if gpus.iter().any(|g| g.vendor == "nvidia") {
        HardwareClass::CudaDiscrete
    } else if arch == Arch::Aarch64 {
        HardwareClass::Arm64Cpu
    } else {
        HardwareClass::X86Cpu
    }
}

/// Compute capability `"8.6"` -> at least 8.0.
pub fn cc_has_bf16(cc: Option<&str>) -> bool {
    cc.and_then(|cc| cc.split('.').next())
        .and_then(|major| major.parse::<u32>().ok())
        .is_some_and(|major| major >= 8)
}

pub fn supports_bf16(
    class: HardwareClass,
    arch: Arch,
    cpu: &Cpu,
    jetson: Option<&Jetson>,
    gpus: &[Gpu],
) -> bool {
    let usable = |name: &str| cpu.features.get(name).is_some_and(|f| f.usable);
    match class {
        HardwareClass::NpuPhone => false,
        HardwareClass::Jetson => cc_has_bf16(jetson.and_then(|j| j.compute_capability.as_deref())),
        HardwareClass::CudaDiscrete => {
            let mut nvidia = gpus.iter().filter(|g| g.vendor == "nvidia").peekable();
            nvidia.peek().is_some() && nvidia.all(|g| cc_has_bf16(g.compute_capability.as_deref()))
        }
        _ => match arch {
            Arch::X86_64 => usable("avx512_bf16") || usable("amx_bf16"),
            Arch::Aarch64 => usable("bf16"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Feature, Npu};

    fn nvidia(cc: Option<&str>) -> Gpu {
        Gpu {
            vendor: "nvidia".into(),
            compute_capability: cc.map(str::to_string),
            ..Gpu::default()
        }
    }

    #[test]
    fn precedence() {
        let phone = Android {
            npu: Some(Npu {
                present: true,
                ..Npu::default()
            }),
            ..Android::default()
        };
        let plain_android = Android::default();
        let jetson = Jetson::default();
        let gpus = [nvidia(Some("9.0"))];
        let amd = [Gpu {
            vendor: "amd".into(),
            ..Gpu::default()
        }];
        assert_eq!(
            hardware_class(Arch::Aarch64, Some(&phone), Some(&jetson), &gpus),
            HardwareClass::NpuPhone
        );
        assert_eq!(
            hardware_class(Arch::Aarch64, Some(&plain_android), None, &[]),
            HardwareClass::Arm64Cpu
        );
        assert_eq!(
            hardware_class(Arch::Aarch64, None, Some(&jetson), &gpus),
            HardwareClass::Jetson
        );
        assert_eq!(
            hardware_class(Arch::X86_64, None, None, &gpus),
            HardwareClass::CudaDiscrete
        );
        assert_eq!(
            hardware_class(Arch::X86_64, None, None, &amd),
            HardwareClass::X86Cpu
        );
        assert_eq!(
            hardware_class(Arch::Aarch64, None, None, &[]),
            HardwareClass::Arm64Cpu
        );
    }

    #[test]
    fn bf16_follows_the_device_that_runs_the_model() {
        assert!(
            cc_has_bf16(Some("8.0"))
                && cc_has_bf16(Some("12.0"))
                && !cc_has_bf16(Some("7.5"))
                && !cc_has_bf16(None)
        );
        let mut cpu = Cpu::default();
        cpu.features.insert(
            "amx_bf16".into(),
            Feature {
                cpu: true,
                os: Some(true),
                usable: true,
            },
        );
        assert!(supports_bf16(
            HardwareClass::X86Cpu,
            Arch::X86_64,
            &cpu,
            None,
            &[]
        ));
        // A T4 box with a bf16-capable CPU: the GPU decides.
        assert!(!supports_bf16(
            HardwareClass::CudaDiscrete,
            Arch::X86_64,
            &cpu,
            None,
            &[nvidia(Some("7.5"))]
        ));
        assert!(!supports_bf16(
            HardwareClass::CudaDiscrete,
            Arch::X86_64,
            &cpu,
            None,
            &[nvidia(Some("9.0")), nvidia(None)]
        ));
        assert!(supports_bf16(
            HardwareClass::CudaDiscrete,
            Arch::X86_64,
            &Cpu::default(),
            None,
            &[nvidia(Some("9.0"))]
        ));
        let orin = Jetson {
            compute_capability: Some("8.7".into()),
            ..Jetson::default()
        };
        assert!(supports_bf16(
            HardwareClass::Jetson,
            Arch::Aarch64,
            &Cpu::default(),
            Some(&orin),
            &[]
        ));
        cpu.features.insert(
            "amx_bf16".into(),
            Feature {
                cpu: true,
                os: Some(false),
                usable: false,
            },
        );
        assert!(!supports_bf16(
            HardwareClass::X86Cpu,
            Arch::X86_64,
            &cpu,
            None,
            &[]
        ));
    }
}

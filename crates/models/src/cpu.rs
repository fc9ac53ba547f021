//! Which CPU kernels the local chat model runs: the instruction sets this build of llama.cpp
//! was compiled for, beside those the CPU offers, so a user (and `metarag models info`) can
//! see when the build leaves the machine's fastest kernels unused (a portable AVX2 build on a
//! CPU with AVX-512 VNNI or AMX).

use serde::Serialize;
use std::ffi::CStr;

/// Instruction sets that decide llama.cpp's matrix kernels on x86, as
/// `(the name /proc/cpuinfo gives it, the name llama.cpp's system report gives it)`.
const X86_SETS: &[(&str, &str)] = &[
    ("avx2", "AVX2"),
    ("fma", "FMA"),
    ("f16c", "F16C"),
    ("avx_vnni", "AVX_VNNI"),
    ("avx512f", "AVX512"),
    ("avx512vbmi", "AVX512_VBMI"),
    ("avx512_vnni", "AVX512_VNNI"),
    ("avx512_bf16", "AVX512_BF16"),
    ("amx_int8", "AMX_INT8"),
];

/// What the CPU offers and what llama.cpp was built to use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CpuKernels {
    /// The CPU's model name (`/proc/cpuinfo`), if known.
    pub cpu: Option<String>,
    /// The instruction sets of [`X86_SETS`] the CPU offers, in llama.cpp's names; `None`
    /// where they cannot be read (not Linux).
    pub offered: Option<Vec<String>>,
    /// What llama.cpp reports it was compiled with (`llama_print_system_info`), the
    /// features switched on.
    pub compiled: Vec<String>,
    /// Offered by the CPU, not compiled into this build: the kernels left unused.
    pub unused: Vec<String>,
    /// llama.cpp's report as it printed it.
    pub report: String,
}

/// The kernels of this build and this CPU.
#[allow(unsafe_code)]
pub fn cpu_kernels() -> CpuKernels {
    // SAFETY: llama_print_system_info takes no arguments and returns a pointer to a
    // static, NUL-terminated buffer inside llama.cpp (valid for the process's life); it is
    // copied out at once. It reads the CPU backend's compile-time feature list, which is
    // registered statically, so no llama.cpp initialisation is needed first.
    let report = unsafe {
        let p = llama_cpp_sys_2::llama_print_system_info();
        if p.is_null() {
            String::new()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok();
    from_reports(&report, cpuinfo.as_deref())
}

/// [`CpuKernels`] from llama.cpp's system report and the text of `/proc/cpuinfo`.
fn from_reports(report: &str, cpuinfo: Option<&str>) -> CpuKernels {
    // "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | ... | REPACK = 1 |": the features on.
    let compiled: Vec<String> = report
        .split('|')
        .filter_map(|part| {
            let part = part.rsplit(':').next().unwrap_or(part);
            let (name, on) = part.split_once('=')?;
            (on.trim() == "1").then(|| name.trim().to_string())
        })
        .collect();
    let line = |key: &str| {
        cpuinfo?.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
    };
    let offered = line("flags").map(|flags| {
        let flags: Vec<&str> = flags.split_whitespace().collect();
        X86_SETS
            .iter()
            .filter(|(cpu, _)| flags.contains(cpu))
            .map(|(_, ggml)| ggml.to_string())
            .collect::<Vec<_>>()
    });
    let unused = offered
        .iter()
        .flatten()
        .filter(|set| !compiled.contains(set))
        .cloned()
        .collect();
    CpuKernels {
        cpu: line("model name"),
        offered,
        compiled,
        unused,
        report: report.trim().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An AVX-512 VNNI CPU under a portable AVX2 build: the AVX-512 sets are unused; the
    /// report's other entries (accelerators, toggles) are kept as compiled.
    #[test]
    fn unused_sets_are_the_cpus_less_the_builds() {
        let report = "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | AVX512 = 0 | LLAMAFILE = 1 | REPACK = 1 | ";
        let cpuinfo = "processor\t: 0\nmodel name\t: AMD EPYC 9R14 96-Core Processor\nflags\t\t: fpu sse sse2 avx avx2 fma f16c avx512f avx512vbmi avx512_vnni avx512_bf16\n";
        let k = from_reports(report, Some(cpuinfo));
        assert_eq!(k.cpu.as_deref(), Some("AMD EPYC 9R14 96-Core Processor"));
        assert_eq!(
            k.compiled,
            [
                "SSE3",
                "SSSE3",
                "AVX",
                "AVX2",
                "F16C",
                "FMA",
                "BMI2",
                "LLAMAFILE",
                "REPACK"
            ]
        );
        assert_eq!(
            k.unused,
            ["AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16"]
        );
        // A build that has them all leaves nothing unused; no cpuinfo, nothing known.
        let all = "CPU : AVX2 = 1 | FMA = 1 | F16C = 1 | AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 |";
        assert!(from_reports(all, Some(cpuinfo)).unused.is_empty());
        let none = from_reports(all, None);
        assert_eq!((none.cpu, none.offered), (None, None));
    }

    /// The real build reports at least the AVX2 kernels it is compiled with on x86.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn this_build_reports_its_kernels() {
        let k = cpu_kernels();
        assert!(k.report.contains("CPU"), "{}", k.report);
        assert!(k.compiled.iter().any(|s| s == "AVX2"), "{k:?}");
    }
}

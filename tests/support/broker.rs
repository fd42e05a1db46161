//! A real Kafka-compatible broker for tests: tansu with its SQLite engine, started on a
//! free loopback port in a scratch directory and stopped by PID; optionally behind TLS
//! (tansu serves plain TCP only: stunnel terminates TLS in front of it, with a
//! certificate made here for `127.0.0.1`, and the broker advertises the TLS port).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};

/// Where scripts/services.sh installs tansu; `WHYSLOW_TANSU` overrides.
pub fn tansu_binary() -> PathBuf {
    if let Ok(p) = std::env::var("WHYSLOW_TANSU") {
        return PathBuf::from(p);
    }
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let cache = std::env::var("WHYSLOW_CACHE").unwrap_or_else(|_| format!("{home}/.cache/whyslow"));
    Path::new(&cache).join("tansu/bin/tansu")
}

/// A running broker; killed when dropped.
pub struct Broker {
    child: Option<Child>,
    pub port: u16,
    pub dir: tempfile::TempDir,
    tls: Option<Tls>,
}

/// The TLS front of a broker.
struct Tls {
    port: u16,
    stunnel: Child,
    /// The certificate clients trust (self-signed, for 127.0.0.1).
    ca: PathBuf,
}

use super::s3::free_port;

impl Broker {
    /// Starts tansu and waits until it answers metadata requests.
    pub fn start() -> Broker {
        let bin = tansu_binary();
        assert!(
            bin.exists(),
            "the tansu broker is not installed at {} — run scripts/test, which builds it once",
            bin.display()
        );
        let dir = tempfile::tempdir().expect("scratch dir");
        let mut b = Broker {
            child: None,
            port: free_port(),
            dir,
            tls: None,
        };
        b.spawn();
        b
    }

    /// Starts tansu behind stunnel: clients reach it only with TLS, on [`Broker::addr`],
    /// trusting [`Broker::ca`].
    pub fn start_tls() -> Broker {
        let dir = tempfile::tempdir().expect("scratch dir");
        let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
        let made = Command::new("openssl")
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            ])
            .args(["-subj", "/CN=localhost"])
            .args(["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .stderr(Stdio::null())
            .status()
            .expect("run openssl");
        assert!(made.success(), "openssl made no certificate");
        let (port, tls_port) = (free_port(), free_port());
        let conf = dir.path().join("stunnel.conf");
        std::fs::write(
            &conf,
            format!(
                "foreground = yes\npid =\n[kafka]\naccept = 127.0.0.1:{tls_port}\n\
                 connect = 127.0.0.1:{port}\ncert = {}\nkey = {}\n",
                cert.display(),
                key.display()
            ),
        )
        .expect("stunnel config");
        let log = std::fs::File::create(dir.path().join("stunnel.log")).expect("stunnel log");
        let stunnel = Command::new("stunnel")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start stunnel (Debian's stunnel4; scripts/test installs it)");
        let mut b = Broker {
            child: None,
            port,
            dir,
            tls: Some(Tls {
                port: tls_port,
                stunnel,
                ca: cert,
            }),
        };
        b.spawn();
        b
    }

    /// The certificate a TLS broker's clients trust.
    pub fn ca(&self) -> Option<&Path> {
        self.tls.as_ref().map(|t| t.ca.as_path())
    }

    /// A client configuration that reaches the broker (over TLS for a TLS broker).
    pub fn client_config(&self) -> ClientConfig {
        let mut c = ClientConfig::new();
        c.set("bootstrap.servers", self.addr());
        if let Some(ca) = self.ca() {
            c.set("security.protocol", "ssl")
                .set("ssl.ca.location", ca.display().to_string());
        }
        c
    }

    fn spawn(&mut self) {
        let url = format!("tcp://127.0.0.1:{}", self.port);
        let advertised = format!("tcp://{}", self.addr());
        let log = std::fs::File::create(self.dir.path().join("tansu.log")).expect("broker log");
        let child = Command::new(tansu_binary())
            .current_dir(self.dir.path())
            .args([
                "broker",
                "--listener-url",
                &url,
                "--advertised-listener-url",
                &advertised,
            ])
            .args(["--storage-engine", "sqlite://tansu.db"])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start tansu");
        self.child = Some(child);
        self.wait_ready();
    }

    /// The bootstrap address (the TLS port of a TLS broker).
    pub fn addr(&self) -> String {
        let port = self.tls.as_ref().map_or(self.port, |t| t.port);
        format!("127.0.0.1:{port}")
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let consumer: BaseConsumer = self.client_config().create().expect("metadata client");
        while Instant::now() < deadline {
            if consumer
                .fetch_metadata(None, Duration::from_secs(1))
                .is_ok()
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!(
            "tansu did not answer on {} within 60 s; see {}",
            self.addr(),
            self.dir.path().join("tansu.log").display()
        );
    }

    /// Stops the broker (SIGKILL) keeping its data.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same port and data.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    /// Creates a topic with `partitions` partitions.
    pub fn create_topic(&self, name: &str, partitions: i32) {
        let admin: AdminClient<DefaultClientContext> =
            self.client_config().create().expect("admin client");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let res = rt
            .block_on(admin.create_topics(
                &[NewTopic::new(name, partitions, TopicReplication::Fixed(1))],
                &AdminOptions::new().operation_timeout(Some(Duration::from_secs(10))),
            ))
            .expect("create topic");
        for r in res {
            r.map_err(|(t, e)| format!("topic {t}: {e}"))
                .expect("topic created");
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.stop();
        if let Some(t) = self.tls.as_mut() {
            let _ = t.stunnel.kill();
            let _ = t.stunnel.wait();
        }
    }
}

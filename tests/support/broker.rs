//! A real Kafka-compatible broker for tests: tansu with its SQLite engine, started on a
//! free loopback port in a scratch directory and stopped by PID.

use std::net::TcpListener;
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
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a free loopback port");
    l.local_addr().expect("local address").port()
}

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
        };
        b.spawn();
        b
    }

    fn spawn(&mut self) {
        let url = format!("tcp://127.0.0.1:{}", self.port);
        let log = std::fs::File::create(self.dir.path().join("tansu.log")).expect("broker log");
        let child = Command::new(tansu_binary())
            .current_dir(self.dir.path())
            .args([
                "broker",
                "--listener-url",
                &url,
                "--advertised-listener-url",
                &url,
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

    /// The bootstrap address.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", self.addr())
            .create()
            .expect("metadata client");
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
        let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
            .set("bootstrap.servers", self.addr())
            .create()
            .expect("admin client");
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
    }
}

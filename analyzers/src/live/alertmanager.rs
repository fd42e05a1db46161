//! Incidents to Prometheus Alertmanager (`--alertmanager URL`, its v2 API): an opened or
//! revised incident fires an alert whose annotations carry the verdict, the time lost and
//! a summary; an ended or retracted one resolves it. Labels stay the same over an
//! incident's life (Alertmanager tells alerts apart by them), and firing alerts are sent
//! again every [`RESEND`] with an end a few resends ahead, as Prometheus does: if the
//! worker dies, its alerts resolve by themselves.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use serde::Serialize;

use super::message::Outgoing;
use super::tracker::Status;
use crate::report::build::rfc3339_millis;

/// How often firing alerts are sent again.
pub const RESEND: Duration = Duration::from_secs(60);

/// A firing alert ends this long after it was last sent unless it is sent again.
const FIRING_FOR: Duration = Duration::from_secs(4 * 60);

/// How long one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Why an Alertmanager URL or request failed.
#[derive(Debug, thiserror::Error)]
pub enum AlertError {
    #[error(
        "--alertmanager '{0}' is not an http:// URL of Alertmanager (e.g. http://alertmanager:9093)"
    )]
    Url(String),
    #[error("Alertmanager at {url}: {source}")]
    Request {
        url: String,
        #[source]
        source: RequestError,
    },
}

/// What went wrong in one request to Alertmanager.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// No connection (refused, unreachable, reset).
    #[error("{0}")]
    Connect(#[source] std::io::Error),
    /// The HTTP exchange failed.
    #[error("{0}")]
    Http(#[source] hyper::Error),
    /// The request could not be built.
    #[error("{0}")]
    Build(#[source] hyper::http::Error),
    /// Alertmanager answered with an error status.
    #[error("answered {status}: {body}")]
    Status { status: StatusCode, body: String },
    /// Its answer is not the JSON of its API.
    #[error("{0}")]
    Json(#[source] serde_json::Error),
    /// It did not answer in time.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
}

/// One alert of the v2 API (`postableAlert`).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Alert {
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub starts_at: String,
    pub ends_at: String,
}

/// An Alertmanager and the alerts whyslow keeps firing there.
pub struct Alertmanager {
    host: String,
    authority: String,
    alerts_path: String,
    firing: BTreeMap<String, Alert>,
    last_sent: Instant,
}

impl Alertmanager {
    /// `url` is Alertmanager's base URL (a path prefix such as `/alertmanager` is kept).
    pub fn new(url: &str) -> Result<Self, AlertError> {
        let bad = || AlertError::Url(url.to_string());
        let uri: Uri = url.trim().parse().map_err(|_| bad())?;
        if uri.scheme_str() != Some("http") {
            return Err(bad());
        }
        let authority = uri.authority().ok_or_else(bad)?;
        let port = authority.port_u16().unwrap_or(80);
        Ok(Alertmanager {
            host: format!("{}:{port}", authority.host()),
            authority: authority.to_string(),
            alerts_path: format!("{}/api/v2/alerts", uri.path().trim_end_matches('/')),
            firing: BTreeMap::new(),
            last_sent: Instant::now(),
        })
    }

    /// The alert for one incident revision, as of `now_ns`.
    pub fn alert(o: &Outgoing, now_ns: i64) -> Alert {
        let r = &o.revision;
        let s = &r.slowdown;
        let mut labels = BTreeMap::from([
            ("alertname".to_string(), "WhyslowSlowdown".to_string()),
            ("incident_id".to_string(), r.incident_id.clone()),
            ("severity".to_string(), "warning".to_string()),
        ]);
        for (k, v) in [("namespace", &s.namespace), ("workload", &s.workload)] {
            if let Some(v) = v {
                labels.insert(k.to_string(), v.clone());
            }
        }
        let verdict = s.causes.first();
        let verdict_id = verdict.map_or("unknown", |c| c.cause.as_str());
        let who = s.workload.as_deref().unwrap_or("a workload");
        let mut annotations = BTreeMap::from([
            (
                "summary".to_string(),
                format!(
                    "{who}: {} from {} ({:.0} s lost): {verdict_id}",
                    s.kind, s.start, s.lost_seconds
                ),
            ),
            ("verdict".to_string(), verdict_id.to_string()),
            ("lost_seconds".to_string(), format!("{:.1}", s.lost_seconds)),
            ("slowdown_kind".to_string(), s.kind.clone()),
            ("status".to_string(), r.status.as_str().to_string()),
            ("revision".to_string(), r.revision.to_string()),
        ]);
        if let Some(c) = verdict {
            annotations.insert("description".to_string(), c.summary.clone());
            annotations.insert("confidence".to_string(), format!("{:.2}", c.confidence));
        }
        if !s.nodes.is_empty() {
            annotations.insert("nodes".to_string(), s.nodes.join(","));
        }
        let ends_at = match r.status {
            Status::Opened | Status::Revised => {
                rfc3339_millis(now_ns.saturating_add(FIRING_FOR.as_nanos() as i64))
            }
            Status::Ended => s.end.clone(),
            Status::Retracted => rfc3339_millis(now_ns),
        };
        Alert {
            labels,
            annotations,
            starts_at: s.start.clone(),
            ends_at,
        }
    }

    /// Sends the alerts of these revisions (firing or resolved) and remembers the firing
    /// ones for [`Alertmanager::resend_due`].
    pub async fn send(&mut self, revisions: &[Outgoing], now_ns: i64) -> Result<(), AlertError> {
        if revisions.is_empty() {
            return Ok(());
        }
        let mut alerts = Vec::with_capacity(revisions.len());
        for o in revisions {
            let alert = Self::alert(o, now_ns);
            match o.revision.status {
                Status::Opened | Status::Revised => {
                    self.firing
                        .insert(o.revision.incident_id.clone(), alert.clone());
                }
                Status::Ended | Status::Retracted => {
                    self.firing.remove(&o.revision.incident_id);
                }
            }
            alerts.push(alert);
        }
        self.post(&alerts).await
    }

    /// Sends every firing alert again when [`RESEND`] has passed since the last send.
    pub async fn resend_due(&mut self, now_ns: i64) -> Result<(), AlertError> {
        if self.firing.is_empty() || self.last_sent.elapsed() < RESEND {
            return Ok(());
        }
        let ends_at = rfc3339_millis(now_ns.saturating_add(FIRING_FOR.as_nanos() as i64));
        let alerts: Vec<Alert> = self
            .firing
            .values_mut()
            .map(|a| {
                a.ends_at = ends_at.clone();
                a.clone()
            })
            .collect();
        self.post(&alerts).await
    }

    async fn post(&mut self, alerts: &[Alert]) -> Result<(), AlertError> {
        self.last_sent = Instant::now();
        // Serializing maps of strings cannot fail.
        let body = serde_json::to_vec(alerts).unwrap_or_default();
        let (status, text) = self.request(Method::POST, &self.alerts_path, body).await?;
        if status != StatusCode::OK {
            return Err(self.failed(RequestError::Status {
                status,
                body: text.trim().to_string(),
            }));
        }
        Ok(())
    }

    /// The alerts Alertmanager holds (its `GET /api/v2/alerts` JSON).
    pub async fn list(&self) -> Result<serde_json::Value, AlertError> {
        let (status, text) = self
            .request(Method::GET, &self.alerts_path, Vec::new())
            .await?;
        if status != StatusCode::OK {
            return Err(self.failed(RequestError::Status {
                status,
                body: text.trim().to_string(),
            }));
        }
        serde_json::from_str(&text).map_err(|e| self.failed(RequestError::Json(e)))
    }

    fn failed(&self, source: RequestError) -> AlertError {
        AlertError::Request {
            url: format!("http://{}{}", self.authority, self.alerts_path),
            source,
        }
    }

    /// One HTTP/1.1 request on a fresh connection.
    async fn request(
        &self,
        method: Method,
        path: &str,
        body: Vec<u8>,
    ) -> Result<(StatusCode, String), AlertError> {
        let exchange = async {
            let stream = tokio::net::TcpStream::connect(&self.host)
                .await
                .map_err(RequestError::Connect)?;
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .map_err(RequestError::Http)?;
            tokio::spawn(conn);
            let req = Request::builder()
                .method(method)
                .uri(path)
                .header(hyper::header::HOST, &self.authority)
                .header(hyper::header::CONTENT_TYPE, "application/json")
                .body(Full::new(Bytes::from(body)))
                .map_err(RequestError::Build)?;
            let resp = sender.send_request(req).await.map_err(RequestError::Http)?;
            let status = resp.status();
            let bytes = resp
                .into_body()
                .collect()
                .await
                .map_err(RequestError::Http)?
                .to_bytes();
            Ok::<_, RequestError>((status, String::from_utf8_lossy(&bytes).into_owned()))
        };
        match tokio::time::timeout(REQUEST_TIMEOUT, exchange).await {
            Ok(r) => r.map_err(|e| self.failed(e)),
            Err(_) => Err(self.failed(RequestError::Timeout(REQUEST_TIMEOUT))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::tracker::Revision;
    use crate::report::{CauseEntry, Slowdown};

    fn outgoing(status: Status, revision: i64) -> Outgoing {
        let slowdown = Slowdown {
            slowdown_id: "sd-1".into(),
            namespace: Some("llm".into()),
            workload: Some("ft-llama".into()),
            run_id: None,
            kind: "stall".into(),
            ongoing: status == Status::Opened,
            nodes: vec!["gke-gpu-7".into()],
            pods: vec![],
            start: "2026-11-29T10:15:00.000Z".into(),
            end: "2026-11-29T10:20:00.000Z".into(),
            lost_seconds: 300.0,
            baseline: None,
            observed: None,
            metric: None,
            causes: vec![CauseEntry {
                cause: "infrastructure.gpu_xid".into(),
                layer: Some("infrastructure".into()),
                confidence: 0.9,
                explained_seconds: 300.0,
                node: Some("gke-gpu-7".into()),
                device: None,
                summary: "Xid 79 on gke-gpu-7".into(),
                evidence: vec![],
                chain: vec![],
            }],
            profiles: vec![],
        };
        let revision = Revision {
            incident_id: "inc-1".into(),
            revision,
            status,
            verdict_changed: revision == 1,
            slowdown,
            start_ns: 0,
            end_ns: 0,
        };
        Outgoing::new(revision, 1_795_947_300_000_000_000, None).unwrap()
    }

    #[test]
    fn urls_and_alert_fields() {
        assert!(Alertmanager::new("https://am:9093").is_err());
        assert!(Alertmanager::new("not a url").is_err());
        let am = Alertmanager::new("http://am.monitoring:9093/prefix/").unwrap();
        assert_eq!(am.host, "am.monitoring:9093");
        assert_eq!(am.alerts_path, "/prefix/api/v2/alerts");
        let now = 1_795_947_300_000_000_000;
        let firing = Alertmanager::alert(&outgoing(Status::Opened, 1), now);
        assert_eq!(firing.labels["incident_id"], "inc-1");
        assert_eq!(firing.labels["workload"], "ft-llama");
        assert_eq!(firing.annotations["verdict"], "infrastructure.gpu_xid");
        assert_eq!(firing.annotations["lost_seconds"], "300.0");
        assert_eq!(firing.starts_at, "2026-11-29T10:15:00.000Z");
        assert_eq!(firing.ends_at, rfc3339_millis(now + 240_000_000_000));
        let ended = Alertmanager::alert(&outgoing(Status::Ended, 2), now);
        assert_eq!(
            ended.labels, firing.labels,
            "labels stay over an incident's life"
        );
        assert_eq!(ended.ends_at, "2026-11-29T10:20:00.000Z");
    }

    /// A loopback address nobody listens on yet.
    fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    /// Against a real Alertmanager (Debian's `prometheus-alertmanager`, which
    /// `scripts/test` installs): an opened incident is an active alert with its verdict,
    /// an ended one leaves the active list.
    #[test]
    fn fires_and_resolves_in_a_real_alertmanager() {
        let bin = std::env::var("WHYSLOW_ALERTMANAGER_BIN")
            .unwrap_or_else(|_| "prometheus-alertmanager".to_string());
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("alertmanager.yml");
        std::fs::write(
            &config,
            "route:\n  receiver: nowhere\nreceivers:\n  - name: nowhere\n",
        )
        .unwrap();
        let port = free_port();
        let mut child = std::process::Command::new(&bin)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--cluster.listen-address=")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("{bin}: {e} (scripts/test installs Debian's prometheus-alertmanager)")
            });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            runtime.block_on(async {
                let mut am = Alertmanager::new(&format!("http://127.0.0.1:{port}")).unwrap();
                let started = Instant::now();
                while am.list().await.is_err() {
                    assert!(
                        started.elapsed() < Duration::from_secs(30),
                        "Alertmanager did not start"
                    );
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                let now = chrono::Utc::now().timestamp_nanos_opt().unwrap();
                am.send(&[outgoing(Status::Opened, 1)], now).await.unwrap();
                let alerts = am.list().await.unwrap();
                let active = alerts.as_array().unwrap();
                assert_eq!(active.len(), 1, "{alerts}");
                assert_eq!(active[0]["labels"]["incident_id"], "inc-1");
                assert_eq!(
                    active[0]["annotations"]["verdict"],
                    "infrastructure.gpu_xid"
                );
                assert_eq!(active[0]["status"]["state"], "active");
                am.send(&[outgoing(Status::Ended, 2)], now).await.unwrap();
                let alerts = am.list().await.unwrap();
                assert_eq!(alerts.as_array().unwrap().len(), 0, "{alerts}");
            })
        }));
        // Alertmanager stops whether the checks passed or not.
        let _ = child.kill();
        let _ = child.wait();
        if let Err(panic) = result {
            std::panic::resume_unwind(panic);
        }
    }
}

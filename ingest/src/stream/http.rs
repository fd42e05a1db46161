//! The worker's one HTTP listener (hyper): `/metrics` (Prometheus text), `/healthz` (the
//! process answers) and `/readyz` (partitions assigned, the broker answering and no data
//! waiting longer than it should to be committed); 404 elsewhere. Connections are bounded.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::telemetry::Telemetry;

/// Connections served at once; more wait in the kernel's backlog to be accepted.
pub const MAX_CONNECTIONS: usize = 64;

/// How long one connection may take, from accept to the last byte of its answer.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves the endpoints on `addr` until the task is dropped or aborted.
pub async fn serve(
    addr: &str,
    telemetry: Arc<Telemetry>,
) -> std::io::Result<tokio::task::JoinHandle<()>> {
    let listener = TcpListener::bind(addr).await?;
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    Ok(tokio::spawn(async move {
        loop {
            // A connection is accepted only when a slot is free: a flood of idle
            // connections waits in the kernel's backlog instead of taking descriptors.
            let Ok(slot) = slots.clone().acquire_owned().await else {
                return;
            };
            let sock = match listener.accept().await {
                Ok((sock, _)) => sock,
                Err(_) => {
                    // Out of descriptors (EMFILE) or a connection reset before accept:
                    // wait a moment rather than spin on an error that repeats at once.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let t = telemetry.clone();
            tokio::spawn(async move {
                let _slot = slot;
                let service = hyper::service::service_fn(move |req| {
                    let t = t.clone();
                    async move { Ok::<_, Infallible>(answer(&req, &t)) }
                });
                let conn = hyper::server::conn::http1::Builder::new()
                    .keep_alive(false)
                    .serve_connection(TokioIo::new(sock), service);
                // A client that never sends or never reads cannot hold a slot for ever.
                let _ = tokio::time::timeout(CONNECTION_TIMEOUT, conn).await;
            });
        }
    }))
}

fn text(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    r
}

/// The answer to one request.
fn answer(req: &Request<Incoming>, t: &Telemetry) -> Response<Full<Bytes>> {
    const PLAIN: &str = "text/plain; charset=utf-8";
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            PLAIN,
            "only GET and HEAD\n".into(),
        );
    }
    match req.uri().path() {
        "/metrics" => text(
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            t.render(),
        ),
        "/healthz" => text(StatusCode::OK, PLAIN, "ok\n".into()),
        "/readyz" => match t.readiness().not_ready() {
            None => text(StatusCode::OK, PLAIN, "ready\n".into()),
            Some(why) => text(StatusCode::SERVICE_UNAVAILABLE, PLAIN, format!("{why}\n")),
        },
        _ => text(
            StatusCode::NOT_FOUND,
            PLAIN,
            "not found: /metrics, /healthz and /readyz are served here\n".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A loopback address nobody listens on yet.
    fn free_addr() -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().to_string()
    }

    /// One GET of `path` on `addr`: the whole response.
    async fn get(addr: &str, path: &str) -> String {
        let mut sock = tokio::net::TcpStream::connect(addr).await.unwrap();
        let req = format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n");
        sock.write_all(req.as_bytes()).await.unwrap();
        let mut resp = String::new();
        sock.read_to_string(&mut resp).await.unwrap();
        resp
    }

    #[tokio::test]
    async fn routes_metrics_health_readiness_and_nothing_else() {
        let t = Telemetry::new();
        t.consumed
            .get_or_create(&super::super::telemetry::TopicLabels {
                topic: "envelope".into(),
            })
            .inc_by(3);
        let addr = free_addr();
        let server = serve(&addr, t.clone()).await.unwrap();
        let metrics = get(&addr, "/metrics").await;
        assert!(metrics.starts_with("HTTP/1.1 200 OK"), "{metrics}");
        assert!(
            metrics.contains("whyslow_stream_consumed_messages_total{topic=\"envelope\"} 3"),
            "{metrics}"
        );
        assert!(get(&addr, "/healthz").await.starts_with("HTTP/1.1 200 OK"));
        // Nothing assigned yet: not ready, and the answer says why.
        let r = get(&addr, "/readyz").await;
        assert!(r.starts_with("HTTP/1.1 503"), "{r}");
        assert!(r.contains("no partitions assigned"), "{r}");
        t.broker_up.set(1);
        t.note_assigned(3);
        let r = get(&addr, "/readyz").await;
        assert!(r.starts_with("HTTP/1.1 200 OK"), "{r}");
        assert!(get(&addr, "/").await.starts_with("HTTP/1.1 404"));
        assert!(get(&addr, "/metrics/x").await.starts_with("HTTP/1.1 404"));
        server.abort();
    }

    /// Idle connections beyond the bound do not take the endpoint down: they wait, time
    /// out, and a scrape is answered.
    #[tokio::test]
    async fn a_flood_of_idle_connections_does_not_starve_a_scrape() {
        let addr = free_addr();
        let server = serve(&addr, Telemetry::new()).await.unwrap();
        let mut idle = Vec::new();
        for _ in 0..3 * MAX_CONNECTIONS {
            idle.push(tokio::net::TcpStream::connect(&addr).await.unwrap());
        }
        let resp = tokio::time::timeout(Duration::from_secs(120), get(&addr, "/metrics"))
            .await
            .expect("answered while idle connections wait");
        server.abort();
        drop(idle);
        assert!(resp.starts_with("HTTP/1.1 200 OK"), "{resp}");
    }
}

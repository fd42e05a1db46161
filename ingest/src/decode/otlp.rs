//! Decoder of OpenTelemetry OTLP logs and metrics, as the OpenTelemetry Collector ships
//! them: its Kafka exporter (one export request per message, `otlp_proto` or
//! `otlp_json`) and its file exporter (one OTLP/JSON request per line), or a pretty-
//! printed OTLP/JSON document.
//!
//! **Records.** One request is one record. Its log records and data points are its parts:
//! each log record is read by the decoder of the format it carries (see [`logs`]), each
//! data point by the Prometheus decoder (see [`metrics`]), so a kernel Xid line shipped by
//! the `filelog` or `journald` receiver, a Kubernetes Event from the `k8sevents` or
//! `k8sobjects` receiver, a training log line and a DCGM gauge scraped by the
//! `prometheus` receiver become the same rows as when read directly.
//!
//! **Accounting.** A request whose parts became rows is produced; a part that could not
//! be read goes to `dead_letters` on its own (with the format it was read as, and the
//! part as that decoder reads it). A request none of whose parts became rows, and some
//! could not be read, is rejected whole (one dead letter, the request's bytes). A request
//! with nothing to read (no records, traces, profiles) is skipped; bytes that are no OTLP
//! request are rejected.

pub mod attrs;
pub mod logs;
pub mod metrics;
pub mod request;

use std::collections::HashMap;

use opentelemetry_proto::tonic::logs::v1::ResourceLogs;
use opentelemetry_proto::tonic::metrics::v1::ResourceMetrics;
use whyslow_schemas::{DeadLetter, Part};

use crate::decode::prometheus::PrometheusDecoder;
use serde::de::IgnoredAny;

use crate::decode::{Counts, Decoder, Format, Hints, MAX_RECORD_BYTES, Origin, Output};
use request::Request;

/// Decodes OTLP export requests; the log records' own formats are read by decoders from
/// `factory` (the runner's registry).
pub struct OtlpDecoder {
    factory: fn(Format) -> Option<Box<dyn Decoder>>,
    inner: HashMap<Format, Box<dyn Decoder>>,
    prom: PrometheusDecoder,
    scratch: Vec<u8>,
    /// A pretty-printed OTLP/JSON document of a file being collected line by line.
    held: Option<Held>,
}

/// A document's lines so far, and where it began.
struct Held {
    path: String,
    line: u64,
    bytes: Vec<u8>,
}

impl Held {
    fn origin(&self) -> Origin<'_> {
        Origin::File {
            path: &self.path,
            line: self.line,
        }
    }
}

/// Whether a file's line opens a JSON document spread over lines (`{` and not a whole
/// JSON value).
fn opens_document(line: &[u8]) -> bool {
    line.trim_ascii_start().first() == Some(&b'{')
        && serde_json::from_slice::<IgnoredAny>(line).is_err_and(|e| e.is_eof())
}

/// Reads a request from its bytes: OTLP/JSON when it opens with `{`, else protobuf.
fn parse(bytes: &[u8]) -> Result<Request, String> {
    let body = bytes.trim_ascii_start();
    if body.is_empty() {
        // A blank line between JSON lines: an empty request.
        return Ok(Request::Logs(Vec::new()));
    }
    if body.first() == Some(&b'{') {
        let text = std::str::from_utf8(bytes)
            .map_err(|e| format!("OTLP/JSON that is not UTF-8 (at byte {})", e.valid_up_to()))?;
        request::from_json(text)
    } else {
        request::from_protobuf(bytes)
    }
}

impl OtlpDecoder {
    /// `factory` makes the decoder a log record's format needs.
    pub fn new(factory: fn(Format) -> Option<Box<dyn Decoder>>) -> Self {
        OtlpDecoder {
            factory,
            inner: HashMap::new(),
            prom: PrometheusDecoder::new(),
            scratch: Vec::new(),
            held: None,
        }
    }

    /// Reads every log record; returns the first reason a record could not be read.
    fn logs(
        &mut self,
        resources: &[ResourceLogs],
        origin: &Origin<'_>,
        hints: &Hints,
        out: &mut Output,
    ) -> Option<String> {
        let mut first_error = None;
        for rl in resources {
            let res_attrs = rl.resource.as_ref().map_or(&[][..], |r| &r.attributes);
            let res_hints = logs::resource_hints(res_attrs, hints);
            let mut h = res_hints.clone();
            for rec in rl.scope_logs.iter().flat_map(|s| &s.log_records) {
                logs::record_hints(rec, &res_hints, &mut h);
                let letters = out.dead.len();
                match logs::route(rec, res_attrs, hints.default_time_ns, &mut self.scratch) {
                    None => {
                        out.begin_record();
                        out.skip();
                    }
                    Some(format) => {
                        // A kernel line names its node from a file's name when nothing
                        // else does: the name of a file a collector read is no node.
                        let path = if format == Format::Kmsg {
                            h.path.take()
                        } else {
                            None
                        };
                        let decoder = match self.inner.entry(format) {
                            std::collections::hash_map::Entry::Occupied(d) => Some(d.into_mut()),
                            std::collections::hash_map::Entry::Vacant(v) => {
                                (self.factory)(format).map(|d| v.insert(d))
                            }
                        };
                        match decoder {
                            Some(d) => d.decode(&self.scratch, origin, &h, out),
                            None => {
                                out.begin_record();
                                let why = format!("{origin}: no decoder for format {format}");
                                out.reject(origin, format, &why, &self.scratch);
                            }
                        }
                        if path.is_some() {
                            h.path = path;
                        }
                    }
                }
                if first_error.is_none() && out.dead.len() > letters {
                    first_error = out.dead.last_error().map(str::to_string);
                }
            }
        }
        first_error
    }

    /// Reads every data point; returns the points' tallies and the first reason a point
    /// could not be read.
    fn metrics(
        &mut self,
        resources: &[ResourceMetrics],
        origin: &Origin<'_>,
        hints: &Hints,
        out: &mut Output,
    ) -> (Counts, Option<String>) {
        let mut sink = metrics::Sink::new(&mut self.prom, hints, out);
        for rm in resources {
            let res_attrs = rm.resource.as_ref().map_or(&[][..], |r| &r.attributes);
            sink.resource = metrics::resource_labels(res_attrs);
            for metric in rm.scope_metrics.iter().flat_map(|s| &s.metrics) {
                metrics::decode_metric(metric, &mut sink);
            }
        }
        let tally = sink.tally;
        let failed = tally.failed.len() as u64;
        for (i, (line, why)) in tally.failed.iter().enumerate() {
            let part = Part::Point(i as u64 + 1);
            let error = format!("{origin} {part}: {why}");
            out.dead.append(&DeadLetter {
                part: Some(part),
                ..DeadLetter::whole(*origin, Format::Prometheus.name(), &error, line.as_bytes())
            });
        }
        let first = tally.failed.first().map(|(_, why)| why.clone());
        let counts = Counts {
            records: tally.rows + tally.skipped + failed,
            produced: tally.rows,
            skipped: tally.skipped,
            rejected: failed,
            ..Counts::default()
        };
        (counts, first)
    }

    /// Reads one request (its record already begun) and closes its record.
    fn request(&mut self, bytes: &[u8], origin: &Origin<'_>, hints: &Hints, out: &mut Output) {
        let request = match parse(bytes) {
            Ok(r) => r,
            Err(e) => {
                out.reject(origin, Format::Otlp, &format!("{origin}: {e}"), bytes);
                return;
            }
        };
        let mark = out.mark();
        let (parts, first_error) = match &request {
            Request::Other(_) => (Counts::default(), None),
            Request::Logs(rl) => out.parts(|out| self.logs(rl, origin, hints, out)),
            Request::Metrics(rm) => out.parts(|out| self.metrics(rm, origin, hints, out)).1,
        };
        if parts.produced > 0 {
            out.produced();
        } else if parts.rejected == 0 {
            out.skip();
        } else {
            // Nothing read: the request is kept whole, with its context, instead of parts.
            out.rollback(&mark);
            let what = match request {
                Request::Metrics(_) => "data points",
                _ => "log records",
            };
            let first = first_error
                .map(|e| format!(", first: {e}"))
                .unwrap_or_default();
            let why = format!(
                "{origin}: no OTLP {what} became a row; {} of {} unreadable{first}",
                parts.rejected, parts.records
            );
            out.reject(origin, Format::Otlp, &why, bytes);
        }
    }

    /// Adds a file's line (its record already begun) to the document being held, and
    /// reads the document once it is whole; a line held is counted as skipped.
    fn hold_more(&mut self, bytes: &[u8], hints: &Hints, out: &mut Output) {
        let Some(mut h) = self.held.take() else {
            out.skip();
            return;
        };
        h.bytes.extend_from_slice(bytes);
        h.bytes.push(b'\n');
        let origin = h.origin();
        if h.bytes.len() > MAX_RECORD_BYTES {
            let why =
                format!("{origin}: an OTLP/JSON document over the {MAX_RECORD_BYTES} byte limit");
            out.reject(&origin, Format::Otlp, &why, &h.bytes);
            return;
        }
        match serde_json::from_slice::<IgnoredAny>(&h.bytes) {
            // Whole, or broken before its end: read (or rejected) as one request named by
            // its first line.
            Err(e) if e.is_eof() => {
                out.skip();
                self.held = Some(h);
            }
            _ => self.request(&h.bytes, &origin, hints, out),
        }
    }
}

impl Decoder for OtlpDecoder {
    fn format(&self) -> Format {
        Format::Otlp
    }

    fn decode(&mut self, bytes: &[u8], origin: &Origin<'_>, hints: &Hints, out: &mut Output) {
        out.begin_record();
        if let Origin::File { path, line } = *origin {
            if self.held.is_some() {
                self.hold_more(bytes, hints, out);
                return;
            }
            // `--format otlp` on a pretty-printed document: held until it is whole.
            if opens_document(bytes) {
                self.held = Some(Held {
                    path: path.to_string(),
                    line,
                    bytes: [bytes, b"\n"].concat(),
                });
                out.skip();
                return;
            }
        }
        self.request(bytes, origin, hints, out);
    }

    fn finish(&mut self, hints: &Hints, out: &mut Output) {
        if let Some(h) = self.held.take() {
            // Its lines were counted as held (skipped): the first becomes the rejected one.
            out.counts.skipped = out.counts.skipped.saturating_sub(1);
            out.counts.rejected += 1;
            let origin = h.origin();
            let why = format!("{origin}: an OTLP/JSON document that never ends");
            out.dead.append(&DeadLetter::whole(
                origin,
                Format::Otlp.name(),
                &why,
                &h.bytes,
            ));
        }
        self.prom.finish(hints, out);
        for d in self.inner.values_mut() {
            d.finish(hints, out);
        }
    }

    fn release_complete(&mut self, out: &mut Output) {
        for d in self.inner.values_mut() {
            d.release_complete(out);
        }
    }

    fn held_from(&self) -> Option<i64> {
        self.inner.values().filter_map(|d| d.held_from()).min()
    }
}

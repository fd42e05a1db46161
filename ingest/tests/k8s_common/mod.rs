//! Shared helpers of the k8s decoder tests: run the decoder over bytes or a file and read
//! the rows back out of the Arrow batches it built.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arrow::array::{
    Array, BinaryArray, MapArray, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use whyslow_ingest::decode::k8s::K8sDecoder;
use whyslow_ingest::decode::{Counts, Decoder, Hints, Origin, Output};

/// One decoded event row.
#[derive(Debug, Clone, PartialEq)]
pub struct Ev {
    pub time_ns: i64,
    pub event_id: String,
    pub layer: String,
    pub source: String,
    pub kind: String,
    pub severity: String,
    pub cluster: Option<String>,
    pub node: Option<String>,
    pub namespace: Option<String>,
    pub workload: Option<String>,
    pub pod: Option<String>,
    pub reason: Option<String>,
    pub message: Option<String>,
    pub attrs: BTreeMap<String, String>,
}

impl Ev {
    pub fn attr(&self, k: &str) -> Option<&str> {
        self.attrs.get(k).map(String::as_str)
    }
}

/// A dead letter.
#[derive(Debug, Clone)]
pub struct Dead {
    pub source_ref: String,
    pub error: String,
    pub payload: Vec<u8>,
}

/// What a decode run produced.
#[derive(Debug)]
pub struct Decoded {
    pub counts: Counts,
    pub rows: Vec<Ev>,
    pub dead: Vec<Dead>,
}

impl Decoded {
    pub fn kinds(&self) -> Vec<&str> {
        self.rows.iter().map(|r| r.kind.as_str()).collect()
    }
    pub fn of_kind(&self, kind: &str) -> Vec<&Ev> {
        self.rows.iter().filter(|r| r.kind == kind).collect()
    }
}

/// The repository's `fixtures/samples/` directory.
pub fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/samples")
}

fn strings(b: &RecordBatch, name: &str) -> Vec<Option<String>> {
    let a = b
        .column_by_name(name)
        .unwrap()
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap();
    (0..a.len())
        .map(|i| (!a.is_null(i)).then(|| a.value(i).to_string()))
        .collect()
}

/// Reads the builders' rows back.
pub fn collect(mut out: Output) -> Decoded {
    let b = out.events.finish();
    let times = b
        .column_by_name("time")
        .unwrap()
        .as_any()
        .downcast_ref::<TimestampMicrosecondArray>()
        .unwrap();
    let mut cols: Vec<std::vec::IntoIter<Option<String>>> = [
        "event_id",
        "layer",
        "source",
        "kind",
        "severity",
        "cluster",
        "node",
        "namespace",
        "workload",
        "pod",
        "reason",
        "message",
    ]
    .iter()
    .map(|n| strings(&b, n).into_iter())
    .collect();
    let attrs = b
        .column_by_name("attrs")
        .unwrap()
        .as_any()
        .downcast_ref::<MapArray>()
        .unwrap();
    let mut rows = Vec::new();
    for i in 0..b.num_rows() {
        let m = attrs.value(i);
        let keys = m.column(0).as_any().downcast_ref::<StringArray>().unwrap();
        let vals = m.column(1).as_any().downcast_ref::<StringArray>().unwrap();
        let a: BTreeMap<String, String> = (0..keys.len())
            .map(|j| (keys.value(j).to_string(), vals.value(j).to_string()))
            .collect();
        let mut s = |c: usize| cols[c].next().flatten();
        rows.push(Ev {
            time_ns: whyslow_schemas::tables::stored_to_ns(times.value(i)),
            event_id: s(0).unwrap(),
            layer: s(1).unwrap(),
            source: s(2).unwrap(),
            kind: s(3).unwrap(),
            severity: s(4).unwrap(),
            cluster: s(5),
            node: s(6),
            namespace: s(7),
            workload: s(8),
            pod: s(9),
            reason: s(10),
            message: s(11),
            attrs: a,
        });
    }
    let d = out.dead.finish();
    let refs = strings(&d, "source_ref");
    let errs = strings(&d, "error");
    let payload = d
        .column_by_name("payload")
        .unwrap()
        .as_any()
        .downcast_ref::<BinaryArray>()
        .unwrap();
    let dead = (0..d.num_rows())
        .map(|i| Dead {
            source_ref: refs[i].clone().unwrap(),
            error: errs[i].clone().unwrap(),
            payload: payload.value(i).to_vec(),
        })
        .collect();
    assert!(out.counts.balances(), "accounting broken: {:?}", out.counts);
    Decoded {
        counts: out.counts,
        rows,
        dead,
    }
}

/// Decodes bytes as one file named `name` with a fresh decoder.
pub fn decode_bytes(name: &str, bytes: &[u8]) -> Decoded {
    let mut d = K8sDecoder::new();
    decode_with(&mut d, name, bytes)
}

/// Decodes bytes as one file with the given decoder (its learned state carries over).
pub fn decode_with(d: &mut K8sDecoder, name: &str, bytes: &[u8]) -> Decoded {
    let mut out = Output::new(1);
    let hints = Hints {
        cluster: Some("test-cluster".into()),
        ..Hints::default()
    };
    d.decode(
        bytes,
        &Origin::File {
            path: name,
            line: 1,
        },
        &hints,
        &mut out,
    );
    d.finish(&hints, &mut out);
    collect(out)
}

/// Decodes bytes as one Kafka message.
pub fn decode_kafka(bytes: &[u8]) -> Decoded {
    let mut d = K8sDecoder::new();
    let mut out = Output::new(1);
    d.decode(
        bytes,
        &Origin::Kafka {
            topic: "k8s-events",
            partition: 0,
            offset: 42,
        },
        &Hints::default(),
        &mut out,
    );
    collect(out)
}

/// Decodes a sample file under `fixtures/samples/`.
pub fn decode_sample(rel: &str) -> Decoded {
    let p = samples().join(rel);
    let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    decode_bytes(rel, &bytes)
}

/// RFC 3339 → ns.
pub fn ns(s: &str) -> i64 {
    whyslow_schemas::time::parse_rfc3339(s).unwrap()
}

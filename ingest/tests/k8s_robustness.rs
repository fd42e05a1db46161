//! The k8s decoder never panics and always accounts for its records, on every truncation
//! of the real samples and of generated objects, on random byte flips of them, on random
//! bytes, and on hostile nesting and YAML aliases. (A quickcheck-style stand-in for a
//! `cargo fuzz` target: cargo-fuzz is not installed on this machine.)

mod k8s_common;

use k8s_common::*;
use whyslow_ingest::decode::k8s::K8sDecoder;
use whyslow_ingest::decode::{Decoder, Hints, Origin, Output};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Decodes as a file and as a Kafka message; checks the accounting and the dead letters.
fn check(bytes: &[u8]) {
    for kafka in [false, true] {
        let mut d = K8sDecoder::new();
        let mut out = Output::new(0);
        let origin = if kafka {
            Origin::Kafka {
                topic: "t",
                partition: 0,
                offset: 1,
            }
        } else {
            Origin::File { path: "f", line: 1 }
        };
        d.decode(bytes, &origin, &Hints::default(), &mut out);
        let c = out.counts;
        assert!(c.balances(), "{c:?}");
        assert!(
            c.records >= 1 || bytes.iter().all(u8::is_ascii_whitespace) || bytes == b"\xEF\xBB\xBF"
        );
        assert_eq!(c.rejected as usize, out.dead.len());
        let dead = out.dead.finish();
        let errors = dead.column_by_name("error").unwrap();
        assert_eq!(errors.null_count(), 0);
        if kafka {
            assert_eq!(c.records, 1);
        }
    }
}

fn seeds() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for dir in ["k8s-events", "kueue"] {
        for e in std::fs::read_dir(samples().join(dir)).unwrap() {
            v.push(std::fs::read(e.unwrap().path()).unwrap());
        }
    }
    let wl = r#"apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata:
  name: job-ft-3c1a2
  namespace: llm
  uid: w1
  creationTimestamp: "2026-11-29T10:00:00Z"
  ownerReferences: [{kind: Job, name: ft, controller: true}]
spec:
  priority: 10
  podSets: [{name: main, count: 2, template: {spec: {containers: [{name: t, resources: {requests: {nvidia.com/gpu: 2}}}]}}}]
status:
  admission: {clusterQueue: cq}
  conditions:
  - {type: Evicted, status: "True", reason: Preempted, lastTransitionTime: "2026-11-29T10:05:00Z", message: "Preempted to accommodate a workload (UID: w2, JobUID: j2) due to prioritization in the ClusterQueue"}
---
kind: Node
metadata: {name: n1, creationTimestamp: "2026-11-29T10:00:00Z"}
spec: {taints: [{key: node.kubernetes.io/unschedulable, effect: NoSchedule, timeAdded: "2026-11-29T10:01:00Z"}]}
status: {conditions: [{type: Ready, status: "False", lastTransitionTime: "2026-11-29T10:02:00Z"}]}
"#;
    v.push(wl.as_bytes().to_vec());
    let watch = concat!(
        r#"{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a-0-bcdfg","namespace":"n","uid":"p","deletionTimestamp":"2026-11-29T10:09:00Z","deletionGracePeriodSeconds":30},"#,
        r#""spec":{"nodeName":"n1"},"status":{"phase":"Failed","reason":"Evicted","message":"The node was low on resource: memory.","startTime":"2026-11-29T10:00:00Z","#,
        r#""containerStatuses":[{"name":"c","restartCount":2,"state":{"terminated":{"reason":"OOMKilled","exitCode":137,"finishedAt":"2026-11-29T10:08:00Z"}}}]}}}"#,
        "\n",
        r#"{"kind":"EventList","items":[{"metadata":{"name":"e","uid":"u"},"involvedObject":{"kind":"Pod","name":"a-0-bcdfg"},"reason":"Scheduled","message":"Successfully assigned n/a-0-bcdfg to n1","firstTimestamp":"2026-11-29T10:00:00Z","count":3,"lastTimestamp":"2026-11-29T10:01:00Z"}]}"#,
        "\n"
    );
    v.push(watch.as_bytes().to_vec());
    v
}

#[test]
fn every_truncation_of_every_seed() {
    let mut n = 0;
    for s in seeds() {
        for len in 0..=s.len() {
            check(&s[..len]);
            n += 1;
        }
    }
    assert!(n > 15_000, "{n} inputs");
}

#[test]
fn random_mutations_of_the_seeds() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let seeds = seeds();
    let alphabet = b"{}[]:,\"'-\n #&*!|>0123456789.eTZ\\\x00\xff";
    for _ in 0..6_000 {
        let mut s = seeds[rng.below(seeds.len())].clone();
        for _ in 0..1 + rng.below(8) {
            if s.is_empty() {
                break;
            }
            let i = rng.below(s.len());
            match rng.below(4) {
                0 => s[i] = alphabet[rng.below(alphabet.len())],
                1 => {
                    s.remove(i);
                }
                2 => s.insert(i, alphabet[rng.below(alphabet.len())]),
                _ => {
                    let j = rng.below(s.len());
                    let (a, b) = (i.min(j), i.max(j));
                    let chunk = s[a..b].to_vec();
                    s.splice(b..b, chunk);
                }
            }
        }
        check(&s);
    }
}

#[test]
fn random_bytes() {
    let mut rng = Rng(42);
    for _ in 0..3_000 {
        let len = rng.below(300);
        let s: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        check(&s);
        let mut t = s.clone();
        t.insert(0, b'{');
        check(&t);
    }
}

#[test]
fn hostile_nesting_and_aliases() {
    check(&b"[".repeat(200_000));
    check(&b"{\"a\":".repeat(100_000));
    let mut watch = String::new();
    for _ in 0..50 {
        watch.push_str(r#"{"type":"ADDED","object":"#);
    }
    watch.push_str(r#"{"kind":"Event"}"#);
    watch.push_str(&"}".repeat(50));
    let d = decode_bytes("deep-watch.json", watch.as_bytes());
    assert_eq!(d.counts.rejected, 1);
    assert!(d.dead[0].error.contains("nested"), "{}", d.dead[0].error);
    check(format!("a: {}", "[".repeat(20_000)).as_bytes());
    check(
        format!(
            "a:\n{}",
            (1..300)
                .map(|i| format!("{}- x\n", " ".repeat(i)))
                .collect::<String>()
        )
        .as_bytes(),
    );
    // The "billion laughs": aliases expanding exponentially.
    let mut laughs = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for (p, c) in ["a", "b", "c", "d", "e", "f", "g", "h"]
        .iter()
        .zip(["b", "c", "d", "e", "f", "g", "h", "i"])
    {
        laughs.push_str(&format!(
            "{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
        ));
    }
    laughs.push_str("kind: Event\n");
    let d = decode_bytes("laughs.yaml", laughs.as_bytes());
    assert!(d.counts.balances());
    assert_eq!(d.counts.produced, 0);
}

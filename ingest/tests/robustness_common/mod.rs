//! The shared never-panic harness of the line decoders' robustness tests: every
//! truncation and byte substitution of real sample lines, random bytes, and whole samples
//! with bytes flipped fed as Kafka records; after each record the counts must balance.

use std::path::PathBuf;

use whyslow_ingest::decode::{Decoder, Hints, Origin, Output};

/// The lines of a committed sample under `fixtures/samples/`.
pub fn sample_lines(rel: &str) -> Vec<Vec<u8>> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/samples")
        .join(rel);
    std::fs::read(p)
        .unwrap()
        .split(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

/// Feeds records one at a time and checks the accounting after each.
pub struct Feeder {
    pub out: Output,
    pub fed: u64,
}

impl Feeder {
    pub fn new() -> Self {
        Feeder {
            out: Output::new(0),
            fed: 0,
        }
    }

    /// Decodes one file record and asserts every record so far is accounted for.
    pub fn check(&mut self, d: &mut dyn Decoder, bytes: &[u8], hints: &Hints) {
        d.decode(
            bytes,
            &Origin::File {
                path: "fuzz",
                line: 1,
            },
            hints,
            &mut self.out,
        );
        self.fed += 1;
        assert_eq!(self.out.counts.records, self.fed);
        assert!(
            self.out.counts.balances(),
            "{:?} after {:?}",
            self.out.counts,
            String::from_utf8_lossy(bytes)
        );
        if self.out.pending_rows() > 50_000 {
            self.out.events.finish();
            self.out.metrics.finish();
            self.out.dead.finish();
        }
    }

    /// Every truncation and, at every position, each of `special` substituted, of the
    /// first 40 lines of each sample; the decoder's input ends after each sample.
    pub fn mutate_samples(
        &mut self,
        d: &mut dyn Decoder,
        samples: &[&str],
        special: &[u8],
        hints: &Hints,
    ) {
        for rel in samples {
            for line in sample_lines(rel).iter().take(40) {
                for n in 0..=line.len() {
                    self.check(d, &line[..n], hints);
                }
                for i in 0..line.len() {
                    for &s in special {
                        let mut m = line.clone();
                        m[i] = s;
                        self.check(d, &m, hints);
                    }
                }
            }
            d.finish(hints, &mut self.out);
        }
    }

    /// 20,000 random records drawn mostly from `alphabet`, then the whole `sample` fed as
    /// Kafka records with a byte flipped every 7 bytes.
    pub fn random_and_flipped(&mut self, d: &mut dyn Decoder, alphabet: &[u8], sample: &str) {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..20_000 {
            let len = (next() % 200) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    let r = next();
                    if r % 4 == 0 {
                        (r >> 8) as u8
                    } else {
                        alphabet[(r >> 8) as usize % alphabet.len()]
                    }
                })
                .collect();
            self.check(d, &bytes, &Hints::default());
        }
        let whole = sample_lines(sample).join(&b'\n');
        for i in (0..whole.len()).step_by(7) {
            let mut m = whole.clone();
            m[i] ^= (next() as u8) | 1;
            let origin = Origin::Kafka {
                topic: "t",
                partition: 0,
                offset: i as i64,
            };
            d.decode(&m, &origin, &Hints::default(), &mut self.out);
            self.fed += 1;
            assert!(self.out.counts.balances());
        }
        assert_eq!(self.out.counts.records, self.fed);
    }
}

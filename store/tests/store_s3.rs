//! The store in an S3 bucket (SeaweedFS on loopback): rows, dedupe, compaction and
//! offsets as in a directory; several writers committing to one bucket at once, every row
//! exactly once; refused credentials and an unreachable endpoint told in one sentence,
//! nothing written.

mod store_common;

use std::path::Path;
use std::time::{Duration, Instant};

use store_common::s3::S3Server;
use store_common::*;
use whyslow_schemas::Table;
use whyslow_store::{KafkaOffset, Root, Store, StoreWriter, WriterOptions};

fn root(url: &str, env: &[(String, String)]) -> Root {
    Root::parse_with(Path::new(url), env).unwrap()
}

fn offset(topic: &str, partition: i32, next_offset: i64) -> KafkaOffset {
    KafkaOffset {
        topic: topic.into(),
        partition,
        next_offset,
    }
}

/// Writer options without automatic compaction: the test compacts when it says so.
fn manual_compaction() -> WriterOptions {
    WriterOptions {
        auto_compact_segments: 0,
        ..WriterOptions::default()
    }
}

#[test]
fn a_bucket_store_keeps_rows_once_compacts_and_records_offsets() {
    let s3 = S3Server::start();
    let (url, env) = (s3.url("one"), s3.env());
    let manual = manual_compaction();
    let mut w = StoreWriter::open_root(root(&url, &env), manual.clone()).unwrap();
    w.append(Table::Metrics, metrics(0..1_000, BASE_NS))
        .unwrap();
    w.append(Table::Events, events(0..50, 3_600_000_000_000, BASE_NS))
        .unwrap();
    let first = w.commit(&[offset("t", 0, 10)]).unwrap();
    assert_eq!(first.written(), 1_050);
    drop(w);

    // A second writer (a re-run) sees the first one's rows: the overlap is dropped.
    let mut w = StoreWriter::open_root(root(&url, &env), manual).unwrap();
    w.append(Table::Metrics, metrics(500..1_500, BASE_NS))
        .unwrap();
    let second = w.commit(&[offset("t", 0, 20)]).unwrap();
    assert_eq!((second.written(), second.duplicates()), (500, 500));
    let c = w.compact().unwrap();
    assert!(c.segments_removed >= 2, "{c:?}");
    drop(w);

    let store = Store::open_root(root(&url, &env)).unwrap();
    assert_eq!(store.root(), Path::new(&url));
    assert_eq!(store.kafka_offsets()[&("t".to_string(), 0)], 20);
    assert_eq!(
        rows_without_ingest_time(&read_table(&store, Table::Metrics)),
        rows_without_ingest_time(&[metrics(0..1_500, 0)])
    );
    assert_eq!(
        rows_without_ingest_time(&read_table(&store, Table::Events)),
        rows_without_ingest_time(&[events(0..50, 3_600_000_000_000, 0)])
    );
    for s in store.segments(Table::Metrics) {
        assert!(s.path.to_str().unwrap().starts_with(&url), "{s:?}");
    }
}

/// A writer kept open across commits (as the stream worker keeps one per bucket store)
/// sees, after `refresh`, the segments and offsets another writer committed meanwhile:
/// their rows are dropped as duplicates and its offsets never move back.
#[test]
fn a_kept_writer_refreshed_sees_the_commits_of_others() {
    let s3 = S3Server::start();
    let (url, env) = (s3.url("kept"), s3.env());
    let manual = manual_compaction();
    let mut kept = StoreWriter::open_root(root(&url, &env), manual.clone()).unwrap();
    kept.append(Table::Metrics, metrics(0..100, BASE_NS))
        .unwrap();
    kept.commit(&[offset("t", 0, 5)]).unwrap();

    let mut other = StoreWriter::open_root(root(&url, &env), manual.clone()).unwrap();
    other
        .append(Table::Metrics, metrics(100..300, BASE_NS))
        .unwrap();
    other.commit(&[offset("t", 1, 40)]).unwrap();
    other.compact().unwrap();
    drop(other);

    kept.refresh().unwrap();
    assert_eq!(kept.store().rows(Table::Metrics), 300);
    assert_eq!(kept.store().kafka_offsets()[&("t".to_string(), 1)], 40);
    kept.append(Table::Metrics, metrics(50..400, BASE_NS))
        .unwrap();
    let again = kept.commit(&[offset("t", 0, 9)]).unwrap();
    assert_eq!((again.written(), again.duplicates()), (100, 250));
    // Nothing changed since: a refresh reads no commit and keeps the state.
    let version = kept.store().version();
    kept.refresh().unwrap();
    assert_eq!(kept.store().version(), version);
    drop(kept);

    let store = Store::open_root(root(&url, &env)).unwrap();
    assert_eq!(
        rows_without_ingest_time(&read_table(&store, Table::Metrics)),
        rows_without_ingest_time(&[metrics(0..400, 0)])
    );
    let offsets = store.kafka_offsets();
    assert_eq!(
        (
            offsets[&("t".to_string(), 0)],
            offsets[&("t".to_string(), 1)]
        ),
        (9, 40)
    );
}

/// Three writers (threads, each with its own client as separate hosts would have), each
/// with its own Kafka partition and rows, plus rows all of them write, commit to one
/// bucket at once with automatic compaction: every row is stored once, every partition's
/// offset is its last commit's.
#[test]
fn writers_committing_to_one_bucket_at_once_store_every_row_once() {
    let s3 = S3Server::start();
    let (url, env) = (s3.url("many"), s3.env());
    const WRITERS: usize = 3;
    const TURNS: usize = 12;
    const ROWS: usize = 200;
    let options = WriterOptions {
        auto_compact_segments: 3,
        small_segment_rows: 10_000,
        ..WriterOptions::default()
    };
    let started = Instant::now();
    std::thread::scope(|scope| {
        for writer in 0..WRITERS {
            let (url, env, options) = (&url, &env, options.clone());
            scope.spawn(move || {
                for turn in 0..TURNS {
                    // A writer per turn, as the stream worker opens one per micro-batch.
                    let mut w = StoreWriter::open_root(root(url, env), options.clone()).unwrap();
                    let own = (writer * TURNS + turn) * ROWS;
                    w.append(Table::Metrics, metrics(own..own + ROWS, BASE_NS))
                        .unwrap();
                    // Rows every writer writes (a replayed file): kept once.
                    let shared = 1_000_000 + turn * 10;
                    w.append(Table::Metrics, metrics(shared..shared + 10, BASE_NS))
                        .unwrap();
                    w.commit(&[offset("m", writer as i32, turn as i64 + 1)])
                        .unwrap();
                }
            });
        }
    });
    eprintln!(
        "{} commits by {WRITERS} writers in {:?}",
        WRITERS * TURNS,
        started.elapsed()
    );
    let store = Store::open_root(root(&url, &env)).unwrap();
    for writer in 0..WRITERS {
        assert_eq!(
            store.kafka_offsets()[&("m".to_string(), writer as i32)],
            TURNS as i64
        );
    }
    let seen = rows_without_ingest_time(&read_table(&store, Table::Metrics));
    let counts = multiplicities(&seen);
    let own = rows_without_ingest_time(&[metrics(0..WRITERS * TURNS * ROWS, 0)]);
    for row in &own {
        assert_eq!(counts.get(row.as_str()), Some(&1), "{row}");
    }
    // Rows several writers stage in the same instant may each be kept: a writer's dedupe
    // sees what was committed when it staged. Never more than once per writer.
    let shared: Vec<_> = (0..TURNS)
        .map(|t| metrics(1_000_000 + t * 10..1_000_010 + t * 10, 0))
        .collect();
    let shared = rows_without_ingest_time(&shared);
    for row in &shared {
        let n = counts.get(row.as_str()).copied().unwrap_or(0);
        assert!((1..=WRITERS).contains(&n), "{n}× {row}");
    }
    assert_eq!(counts.len(), own.len() + shared.len());
    let segments = store.segments(Table::Metrics).len();
    assert!(
        segments < WRITERS * TURNS,
        "no compaction landed: {segments} segments"
    );
}

#[test]
fn refused_credentials_and_an_unreachable_endpoint_are_one_clear_error() {
    let s3 = S3Server::start();
    let url = s3.url("guarded");
    let mut wrong = s3.env();
    for (k, v) in wrong.iter_mut() {
        if k == "AWS_SECRET_ACCESS_KEY" {
            *v = "not-the-secret".into();
        }
    }
    let e = StoreWriter::open_root(root(&url, &wrong), WriterOptions::default())
        .err()
        .expect("wrong credentials are refused");
    let text = e.to_string();
    assert!(text.contains(&url), "{text}");
    assert!(
        text.contains("403") || text.contains("Forbidden") || text.contains("Signature"),
        "{text}"
    );

    let mut unreachable = s3.env();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for (k, v) in unreachable.iter_mut() {
        if k == "AWS_ENDPOINT_URL" {
            *v = format!("http://127.0.0.1:{closed}");
        }
    }
    let t = Instant::now();
    let e = Store::open_root(root(&url, &unreachable))
        .expect_err("an unreachable endpoint is an error");
    assert!(e.to_string().contains(&url), "{e}");
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());

    // Nothing was written under the prefix.
    let store = Store::open_root(root(&url, &s3.env())).unwrap();
    assert_eq!(store.version(), 0);
    assert!(
        list_objects(&store).is_empty(),
        "{:?}",
        list_objects(&store)
    );
}

/// One process leads a bucket store at a time: a lease taken if absent, renewed while
/// held, given up when dropped, and taken over once expired (the old holder's renewal
/// then fails).
#[test]
fn one_leader_per_bucket_store() {
    use whyslow_store::Leadership;
    let s3 = S3Server::start();
    let url = s3.url("led");
    let env = s3.env();
    let take = |ttl: Duration| Leadership::take_at(root(&url, &env), "_live.lock", ttl).unwrap();
    let mut first = take(Duration::from_secs(60)).expect("free at first");
    assert!(take(Duration::from_secs(60)).is_none(), "held");
    assert!(first.renew().unwrap());
    drop(first);
    let mut short = take(Duration::from_millis(300)).expect("given up on drop");
    assert!(take(Duration::from_secs(60)).is_none(), "not expired yet");
    std::thread::sleep(Duration::from_millis(800));
    let _next = take(Duration::from_secs(60)).expect("expired: taken over");
    assert!(!short.renew().unwrap(), "the old holder lost it");
}

//! A commit whose log entry lands in the bucket while a request after it fails (the
//! bucket restarting under a worker): the writer reports the failure, yet every file the
//! log names stays, the rows are there once, and the same rows committed again are
//! duplicates. Faults are injected between the writer and a real S3 server (SeaweedFS).

mod store_common;

use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::stream::{self, BoxStream, StreamExt};
use object_store::path::Path as ObjectPath;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use store_common::s3::S3Server;
use store_common::*;
use whyslow_schemas::Table;
use whyslow_store::{KafkaOffset, Remote, Root, Store, StoreWriter, WriterOptions};

/// What the faulty bucket does with the next requests.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    /// Every request passes.
    None,
    /// The next put of a Delta commit file is stored, but its answer is lost (the server
    /// died or failed after writing it): the writer gets an error. Then the bucket is
    /// `down` (every request fails until the test heals it), or answers again.
    CommitAnswerLost { down: bool },
    /// Every request fails.
    Down,
    /// Puts of Delta commit files fail without storing anything.
    CommitRefused,
}

/// A bucket whose requests fail as [`Fault`] says, in front of a real one.
#[derive(Debug)]
struct FaultyBucket {
    inner: Arc<dyn ObjectStore>,
    fault: Arc<Mutex<Fault>>,
}

impl fmt::Display for FaultyBucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultyBucket({})", self.inner)
    }
}

fn outage() -> object_store::Error {
    object_store::Error::Generic {
        store: "FaultyBucket",
        source: "connection reset (injected)".into(),
    }
}

/// Whether `location` is a Delta commit file (`_delta_log/<20 digits>.json`).
fn is_commit_file(location: &ObjectPath) -> bool {
    let name = location.filename().unwrap_or_default();
    location.as_ref().contains("/_delta_log/")
        && name.len() == 25
        && name.ends_with(".json")
        && name[..20].bytes().all(|b| b.is_ascii_digit())
}

impl FaultyBucket {
    fn fault(&self) -> Fault {
        *self.fault.lock().unwrap()
    }

    /// Whether a request other than a put fails.
    fn fails(&self) -> bool {
        self.fault() == Fault::Down
    }
}

#[async_trait]
impl ObjectStore for FaultyBucket {
    async fn put_opts(
        &self,
        location: &ObjectPath,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        match (self.fault(), is_commit_file(location)) {
            (Fault::Down, _) | (Fault::CommitRefused, true) => Err(outage()),
            (Fault::CommitAnswerLost { down }, true) => {
                self.inner.put_opts(location, payload, opts).await?;
                *self.fault.lock().unwrap() = if down { Fault::Down } else { Fault::None };
                Err(outage())
            }
            _ => self.inner.put_opts(location, payload, opts).await,
        }
    }

    async fn put_multipart_opts(
        &self,
        location: &ObjectPath,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        if self.fails() {
            return Err(outage());
        }
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &ObjectPath,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        if self.fails() {
            return Err(outage());
        }
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<ObjectPath>>,
    ) -> BoxStream<'static, object_store::Result<ObjectPath>> {
        if self.fails() {
            return stream::once(async { Err(outage()) }).boxed();
        }
        self.inner.delete_stream(locations)
    }

    fn list(
        &self,
        prefix: Option<&ObjectPath>,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        if self.fails() {
            return stream::once(async { Err(outage()) }).boxed();
        }
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(
        &self,
        prefix: Option<&ObjectPath>,
    ) -> object_store::Result<ListResult> {
        if self.fails() {
            return Err(outage());
        }
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &ObjectPath,
        to: &ObjectPath,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        if self.fails() {
            return Err(outage());
        }
        self.inner.copy_opts(from, to, options).await
    }
}

/// The store at `url` seen through a [`FaultyBucket`] steered by the returned handle.
fn faulty_root(url: &str, env: &[(String, String)]) -> (Root, Arc<Mutex<Fault>>) {
    let Root::Remote(remote) = Root::parse_with(Path::new(url), env).unwrap() else {
        panic!("{url} is a bucket");
    };
    let fault = Arc::new(Mutex::new(Fault::None));
    let faulty = Remote {
        url: remote.url.clone(),
        bucket_url: remote.bucket_url.clone(),
        store: Arc::new(FaultyBucket {
            inner: remote.store.clone(),
            fault: fault.clone(),
        }),
        prefix: remote.prefix.clone(),
    };
    (Root::Remote(Arc::new(faulty)), fault)
}

fn offset(next_offset: i64) -> KafkaOffset {
    KafkaOffset {
        topic: "t".into(),
        partition: 0,
        next_offset,
    }
}

/// Every segment the store's log names can be read, and the table holds `expected`.
fn assert_whole(url: &str, env: &[(String, String)], expected: std::ops::Range<usize>) {
    let store = Store::open_root(Root::parse_with(Path::new(url), env).unwrap()).unwrap();
    let objects = list_objects(&store);
    for seg in store.segments(Table::Events) {
        assert!(
            objects.contains(&seg.path),
            "the log names {} but the bucket has no such object",
            seg.path.display()
        );
        assert!(
            objects.contains(&seg.keys_path),
            "the log names {} but the bucket has no such object",
            seg.keys_path.display()
        );
    }
    assert_eq!(
        rows_without_ingest_time(&read_table(&store, Table::Events)),
        rows_without_ingest_time(&[events(expected, 1_000_000_000, 0)])
    );
}

/// A bucket store with rows 0..100 committed through a [`FaultyBucket`], and its writer.
struct Committed {
    _s3: S3Server,
    url: String,
    env: Vec<(String, String)>,
    options: WriterOptions,
    w: StoreWriter,
    fault: Arc<Mutex<Fault>>,
}

fn first_commit(prefix: &str) -> Committed {
    let s3 = S3Server::start();
    let (url, env) = (s3.url(prefix), s3.env());
    let options = WriterOptions {
        auto_compact_segments: 0,
        ..WriterOptions::default()
    };
    let (faulty, fault) = faulty_root(&url, &env);
    let mut w = StoreWriter::open_root(faulty, options.clone()).unwrap();
    w.append(Table::Events, events(0..100, 1_000_000_000, BASE_NS))
        .unwrap();
    w.commit(&[offset(100)]).unwrap();
    Committed {
        _s3: s3,
        url,
        env,
        options,
        w,
        fault,
    }
}

/// The log entry lands but the writer is told it failed, and the bucket stays `down` or
/// not: the commit is reported failed (its outcome is unknown to the writer), its files
/// stay, and a retry of the same rows by a fresh writer (what the stream worker does)
/// writes nothing again.
fn a_commit_that_landed_keeps_its_files(prefix: &str, down: bool) {
    let Committed {
        _s3,
        url,
        env,
        options,
        mut w,
        fault,
    } = first_commit(prefix);
    *fault.lock().unwrap() = Fault::CommitAnswerLost { down };
    w.append(Table::Events, events(100..200, 1_000_000_000, BASE_NS))
        .unwrap();
    let failed = w.commit(&[offset(200)]);
    assert!(failed.is_err(), "the lost answer is reported as a failure");
    drop(w);
    *fault.lock().unwrap() = Fault::None;
    assert_whole(&url, &env, 0..200);

    let mut again =
        StoreWriter::open_root(Root::parse_with(Path::new(&url), &env).unwrap(), options).unwrap();
    again
        .append(Table::Events, events(100..200, 1_000_000_000, BASE_NS))
        .unwrap();
    let retried = again.commit(&[offset(200)]).unwrap();
    assert_eq!((retried.written(), retried.duplicates()), (0, 100));
    assert_eq!(again.store().kafka_offsets()[&("t".to_string(), 0)], 200);
    drop(again);
    assert_whole(&url, &env, 0..200);
}

/// The bucket answers again right after the lost answer: the writer reads the log, sees
/// its commit there and deletes nothing. (It used to delete the segment files, leaving a
/// log that named files that were gone, while the retry found the rows' keys in its
/// cache and skipped them as duplicates: a stream worker lost a micro-batch that way.)
#[test]
fn a_commit_that_landed_though_its_answer_was_lost_keeps_its_files() {
    a_commit_that_landed_keeps_its_files("lost", false);
}

/// The bucket stays down: the writer cannot tell whether its commit landed and leaves
/// every file in place.
#[test]
fn a_commit_that_landed_before_an_outage_keeps_its_files() {
    a_commit_that_landed_keeps_its_files("outage", true);
}

/// A commit whose own put failed did not land: its segment files are deleted at once
/// (the log, read again, does not name them), and the rows are committed by the retry.
#[test]
fn a_commit_that_did_not_land_leaves_no_files() {
    let Committed {
        _s3,
        url,
        env,
        mut w,
        fault,
        ..
    } = first_commit("refused");
    let before =
        list_objects(&Store::open_root(Root::parse_with(Path::new(&url), &env).unwrap()).unwrap());
    // The segment and key file puts pass; the commit file's put fails.
    w.append(Table::Events, events(100..200, 1_000_000_000, BASE_NS))
        .unwrap();
    *fault.lock().unwrap() = Fault::CommitRefused;
    assert!(w.commit(&[offset(200)]).is_err());
    *fault.lock().unwrap() = Fault::None;
    drop(w);
    let store = Store::open_root(Root::parse_with(Path::new(&url), &env).unwrap()).unwrap();
    let after = list_objects(&store);
    let new: Vec<_> = after
        .iter()
        .filter(|p| {
            let p = p.to_string_lossy();
            !before.iter().any(|b| b.to_string_lossy() == p)
                && (p.ends_with(".parquet") || p.ends_with(".keys"))
                && !p.contains("_delta_log")
        })
        .collect();
    assert!(
        new.is_empty(),
        "files of a commit that did not land: {new:?}"
    );
    assert_whole(&url, &env, 0..100);
}

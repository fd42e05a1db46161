//! A [`RowSink`] that runs the store on its own thread: decoding goes on while the
//! previous rows are sorted, deduplicated, encoded and committed. Batches and commit
//! requests travel in order over a bounded channel (bounded memory); commit results come
//! back tagged with what they were for.

use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, channel, sync_channel};
use std::thread::JoinHandle;

use arrow::array::RecordBatch;
use whyslow_schemas::Table;

use super::RowSink;
use crate::decode::Format;
use whyslow_store::{CommitStats, StoreError};

/// Batches (of up to `batch_rows` rows) the channel holds before the decoder waits.
const QUEUE_BATCHES: usize = 16;

enum Message {
    Append(Table, RecordBatch),
    Commit(Format),
}

type Done = Result<(Format, CommitStats), StoreError>;

/// Owns the writer thread; dropping it without [`RowSink::finish`] still joins it.
pub struct PipelinedSink {
    to_writer: Option<SyncSender<Message>>,
    from_writer: Receiver<Done>,
    thread: Option<JoinHandle<()>>,
    in_flight: usize,
}

impl PipelinedSink {
    /// Moves `inner` to a new thread that applies what this sink is given, in order.
    pub fn spawn<S: RowSink + Send + 'static>(mut inner: S) -> Self {
        let (to_writer, inbox) = sync_channel::<Message>(QUEUE_BATCHES);
        let (outbox, from_writer) = channel::<Done>();
        let thread = std::thread::Builder::new()
            .name("whyslow-store-writer".into())
            .spawn(move || {
                for m in inbox {
                    let result = match m {
                        Message::Append(table, batch) => inner.append(table, batch).map(|()| None),
                        // A synchronous sink answers each commit with exactly its own stats.
                        Message::Commit(tag) => inner.commit(tag).map(|mut done| {
                            Some(done.pop().unwrap_or((tag, CommitStats::default())))
                        }),
                    };
                    match result {
                        Ok(None) => {}
                        Ok(Some(done)) => {
                            if outbox.send(Ok(done)).is_err() {
                                return;
                            }
                        }
                        Err(e) => {
                            // The first error ends the writer; the runner reports it.
                            let _ = outbox.send(Err(e));
                            return;
                        }
                    }
                }
            });
        let (to_writer, thread) = match thread {
            Ok(t) => (Some(to_writer), Some(t)),
            Err(_) => (None, None),
        };
        PipelinedSink {
            to_writer,
            from_writer,
            thread,
            in_flight: 0,
        }
    }

    fn send(&mut self, m: Message) -> Result<(), StoreError> {
        let sent = self
            .to_writer
            .as_ref()
            .map(|tx| tx.send(m).is_ok())
            .unwrap_or(false);
        if sent {
            return Ok(());
        }
        // The writer stopped: it said why, or it could not start at all.
        self.to_writer = None;
        while let Ok(done) = self.from_writer.recv() {
            done?;
        }
        Err(writer_gone())
    }

    /// Collects finished commits; with `wait`, all of those requested.
    fn collect(&mut self, wait: bool) -> Result<Vec<(Format, CommitStats)>, StoreError> {
        let mut done = Vec::new();
        while self.in_flight > 0 {
            let next = if wait {
                self.from_writer.recv().map_err(|_| writer_gone())
            } else {
                match self.from_writer.try_recv() {
                    Ok(d) => Ok(d),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => Err(writer_gone()),
                }
            };
            done.push(next??);
            self.in_flight -= 1;
        }
        Ok(done)
    }
}

fn writer_gone() -> StoreError {
    StoreError::Io {
        op: "run",
        path: "the store writer thread".into(),
        source: std::io::Error::other("it stopped unexpectedly"),
    }
}

impl RowSink for PipelinedSink {
    fn append(&mut self, table: Table, batch: RecordBatch) -> Result<(), StoreError> {
        self.send(Message::Append(table, batch))
    }

    fn commit(&mut self, tag: Format) -> Result<Vec<(Format, CommitStats)>, StoreError> {
        self.send(Message::Commit(tag))?;
        self.in_flight += 1;
        self.collect(false)
    }

    fn finish(&mut self) -> Result<Vec<(Format, CommitStats)>, StoreError> {
        let done = self.collect(true);
        self.to_writer = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        done
    }
}

impl Drop for PipelinedSink {
    fn drop(&mut self) {
        self.to_writer = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use whyslow_schemas::DeadLetterBuilder;
    use whyslow_store::TableCommit;

    /// Counts appended rows; each commit reports them as written, or fails when told to.
    struct Counter {
        rows: u64,
        fail_at_commit: Option<usize>,
        commits: usize,
    }

    impl RowSink for Counter {
        fn append(&mut self, _: Table, batch: RecordBatch) -> Result<(), StoreError> {
            self.rows += batch.num_rows() as u64;
            Ok(())
        }

        fn commit(&mut self, tag: Format) -> Result<Vec<(Format, CommitStats)>, StoreError> {
            self.commits += 1;
            if self.fail_at_commit == Some(self.commits) {
                return Err(StoreError::Corrupt {
                    what: "test",
                    path: "x".into(),
                    detail: "boom".into(),
                });
            }
            let mut stats = CommitStats::default();
            stats.tables.insert(
                Table::DeadLetters,
                TableCommit {
                    written: self.rows,
                    ..Default::default()
                },
            );
            self.rows = 0;
            Ok(vec![(tag, stats)])
        }
    }

    fn batch(rows: usize) -> RecordBatch {
        let mut b = DeadLetterBuilder::new(0);
        for i in 0..rows {
            let origin = whyslow_schemas::Origin::File {
                path: "f",
                line: i as u64,
            };
            b.append(&whyslow_schemas::DeadLetter::whole(
                origin, "envelope", "bad", b"x",
            ));
        }
        b.finish()
    }

    #[test]
    fn commits_come_back_in_order_with_their_tags() {
        let mut p = PipelinedSink::spawn(Counter {
            rows: 0,
            fail_at_commit: None,
            commits: 0,
        });
        let mut done = Vec::new();
        for (i, tag) in [Format::Envelope, Format::K8s, Format::Envelope]
            .into_iter()
            .enumerate()
        {
            for _ in 0..40 {
                p.append(Table::DeadLetters, batch(i + 1)).unwrap();
            }
            done.extend(p.commit(tag).unwrap());
        }
        done.extend(p.finish().unwrap());
        let got: Vec<(Format, u64)> = done.iter().map(|(f, s)| (*f, s.written())).collect();
        assert_eq!(
            got,
            vec![
                (Format::Envelope, 40),
                (Format::K8s, 80),
                (Format::Envelope, 120)
            ]
        );
    }

    #[test]
    fn a_store_error_reaches_the_runner() {
        let mut p = PipelinedSink::spawn(Counter {
            rows: 0,
            fail_at_commit: Some(2),
            commits: 0,
        });
        p.append(Table::DeadLetters, batch(1)).unwrap();
        let mut ok = p.commit(Format::Envelope).map(|d| d.len()).unwrap_or(0);
        let mut failed = false;
        for _ in 0..100 {
            match p
                .append(Table::DeadLetters, batch(1))
                .and_then(|()| p.commit(Format::Envelope))
            {
                Ok(d) => ok += d.len(),
                Err(e) => {
                    assert!(e.to_string().contains("boom"), "{e}");
                    failed = true;
                    break;
                }
            }
        }
        if !failed {
            let e = p.finish().unwrap_err();
            assert!(e.to_string().contains("boom"), "{e}");
        }
        assert!(ok <= 1);
    }
}

//! Where batch ingest reads from: files, directories (walked recursively in sorted order)
//! and stdin, plain or gzip (recognized by its magic bytes, not its name), cut into
//! records by [`LineReader`] or read whole by [`read_document`].

mod lines;

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use flate2::read::MultiGzDecoder;

pub use lines::{Line, LineReader, read_document};

/// The most bytes of one record a source reads (the decoders' limit, re-exported here
/// for the readers).
pub use crate::decode::HARD_CAP_BYTES;

/// One input to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// Standard input (`-` on the command line).
    Stdin,
    /// A regular file.
    File(PathBuf),
}

impl Input {
    /// The name used in `dead_letters.source_ref`, messages and the summary.
    pub fn name(&self) -> String {
        match self {
            Input::Stdin => "-".to_string(),
            Input::File(p) => p.display().to_string(),
        }
    }

    /// When the file was last modified (ns since the epoch): the time of records that
    /// carry none and have no `--time` (a scrape saved without timestamps).
    pub fn modified_ns(&self) -> Option<i64> {
        match self {
            Input::Stdin => None,
            Input::File(p) => {
                let t = std::fs::metadata(p).ok()?.modified().ok()?;
                let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
                i64::try_from(d.as_nanos()).ok()
            }
        }
    }

    /// The size in bytes, where it is known before reading.
    pub fn size(&self) -> Option<u64> {
        match self {
            Input::Stdin => None,
            Input::File(p) => std::fs::metadata(p).ok().map(|m| m.len()),
        }
    }
}

/// An input that could not be listed, opened or read: one sentence naming it.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {path}: {source}")]
pub struct SourceError {
    /// The file, directory or `-`.
    pub path: String,
    #[source]
    pub source: io::Error,
}

impl SourceError {
    /// Names `path` as the input the I/O error happened on.
    pub fn new(path: impl Into<String>, source: io::Error) -> Self {
        SourceError {
            path: path.into(),
            source,
        }
    }
}

/// Expands command-line paths into inputs: `-` is stdin, a directory is every file
/// below it (sorted by path; hidden entries and symlinked directories are not entered),
/// a file is itself. Paths that cannot be listed are returned as errors, in order.
pub fn expand(paths: &[String]) -> (Vec<Input>, Vec<SourceError>) {
    let mut inputs = Vec::new();
    let mut errors = Vec::new();
    for p in paths {
        if p == "-" {
            inputs.push(Input::Stdin);
            continue;
        }
        let path = Path::new(p);
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => walk(path, &mut inputs, &mut errors),
            Ok(_) => inputs.push(Input::File(path.to_path_buf())),
            Err(e) => errors.push(SourceError::new(p.clone(), e)),
        }
    }
    (inputs, errors)
}

fn walk(dir: &Path, inputs: &mut Vec<Input>, errors: &mut Vec<SourceError>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(rd) => rd.collect::<Result<Vec<_>, _>>(),
        Err(e) => Err(e),
    };
    let mut entries = match entries {
        Ok(v) => v,
        Err(e) => {
            errors.push(SourceError::new(dir.display().to_string(), e));
            return;
        }
    };
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        if e.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let path = e.path();
        // `file_type` does not follow symlinks: a linked directory is not entered (no
        // cycles), a linked file is read.
        match e.file_type() {
            Ok(t) if t.is_dir() => walk(&path, inputs, errors),
            Ok(t) if t.is_symlink() => match std::fs::metadata(&path) {
                Ok(m) if m.is_file() => inputs.push(Input::File(path)),
                Ok(_) => {}
                Err(err) => errors.push(SourceError::new(path.display().to_string(), err)),
            },
            Ok(t) if t.is_file() => inputs.push(Input::File(path)),
            Ok(_) => {}
            Err(err) => errors.push(SourceError::new(path.display().to_string(), err)),
        }
    }
}

/// Counts the bytes read through it into a shared counter (for progress and MB/s).
pub struct CountingReader<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Opens an input for reading, decompressing gzip (one or more members) when its first
/// bytes are the gzip magic. Bytes read from the file (compressed) are added to `count`.
pub fn open(input: &Input, count: Arc<AtomicU64>) -> Result<Box<dyn Read + Send>, SourceError> {
    let name = input.name();
    let raw: Box<dyn Read + Send> = match input {
        Input::Stdin => Box::new(io::stdin()),
        Input::File(p) => Box::new(File::open(p).map_err(|e| SourceError::new(name.clone(), e))?),
    };
    let mut buffered = BufReader::with_capacity(64 * 1024, CountingReader { inner: raw, count });
    let head = loop {
        match buffered.fill_buf() {
            Ok(b) => break b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(SourceError::new(name, e)),
        }
    };
    if head.starts_with(&[0x1f, 0x8b]) {
        Ok(Box::new(MultiGzDecoder::new(buffered)))
    } else {
        Ok(Box::new(buffered))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn expands_directories_sorted_skipping_hidden() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("b/c")).unwrap();
        std::fs::create_dir_all(d.join(".git")).unwrap();
        for f in ["b/c/z.jsonl", "b/a.jsonl", "a.jsonl", ".hidden", ".git/x"] {
            std::fs::write(d.join(f), "").unwrap();
        }
        let missing = d.join("missing").display().to_string();
        let (inputs, errors) = expand(&[d.display().to_string(), "-".into(), missing.clone()]);
        let names: Vec<String> = inputs.iter().map(|i| i.name()).collect();
        let p = |s: &str| d.join(s).display().to_string();
        assert_eq!(
            names,
            vec![p("a.jsonl"), p("b/a.jsonl"), p("b/c/z.jsonl"), "-".into()]
        );
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0]
                .to_string()
                .starts_with(&format!("cannot read {missing}: "))
        );
    }

    #[test]
    fn gzip_is_detected_by_magic_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let gz = dir.path().join("no-suffix");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(b"one\n").unwrap();
        let mut bytes = enc.finish().unwrap();
        // A second gzip member, as `cat a.gz b.gz` makes.
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(b"two\n").unwrap();
        bytes.extend(enc.finish().unwrap());
        std::fs::write(&gz, &bytes).unwrap();
        let plain = dir.path().join("plain.gz");
        std::fs::write(&plain, b"three\n").unwrap();
        let count = Arc::new(AtomicU64::new(0));
        let mut s = String::new();
        open(&Input::File(gz), count.clone())
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "one\ntwo\n");
        assert_eq!(count.load(Ordering::Relaxed), bytes.len() as u64);
        s.clear();
        open(&Input::File(plain), count)
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "three\n");
    }
}

//! Record framing over a byte stream: lines from one reusable buffer (no copy for lines
//! that fit it), and whole documents; both bounded in memory.

use std::io::{self, Read};

/// One line, without its `\n` (and the `\r` before it).
#[derive(Debug)]
pub struct Line<'a> {
    /// The line's bytes, cut at the reader's hard cap when it was longer.
    pub bytes: &'a [u8],
    /// 1-based line number in the input.
    pub number: u64,
    /// The line's full length in bytes (more than `bytes.len()` when it was cut).
    pub full_len: u64,
}

impl Line<'_> {
    /// Whether the line was longer than the hard cap and `bytes` holds only its start.
    pub fn truncated(&self) -> bool {
        self.full_len > self.bytes.len() as u64
    }
}

const INITIAL_BUFFER: usize = 256 * 1024;
const DISCARD_CHUNK: usize = 64 * 1024;

/// Cuts a stream into lines. `\n` ends a line, a `\r` before it is dropped, and a last
/// line without `\n` is still returned. A line longer than `hard_cap` keeps its first
/// `hard_cap` bytes; the rest is read and counted but not kept, so memory stays bounded.
pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Start of the pending line in `buf`.
    start: usize,
    /// Bytes after `start` already known to hold no `\n`.
    scanned: usize,
    /// End of the valid data in `buf`.
    end: usize,
    eof: bool,
    line: u64,
    hard_cap: usize,
}

impl<R: Read> LineReader<R> {
    /// A reader keeping at most `hard_cap` bytes of any one line.
    pub fn new(inner: R, hard_cap: usize) -> Self {
        let hard_cap = hard_cap.max(1);
        LineReader {
            inner,
            buf: vec![0; INITIAL_BUFFER.min(hard_cap + DISCARD_CHUNK)],
            start: 0,
            scanned: 0,
            end: 0,
            eof: false,
            line: 0,
            hard_cap,
        }
    }

    /// The number of the last line returned.
    pub fn line_number(&self) -> u64 {
        self.line
    }

    /// The next line, or `None` at the end of the input.
    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        loop {
            let from = self.start + self.scanned;
            if let Some(i) = memchr::memchr(b'\n', &self.buf[from..self.end]) {
                let (s, nl) = (self.start, from + i);
                self.start = nl + 1;
                self.scanned = 0;
                return Ok(Some(self.cut(s, nl)));
            }
            self.scanned = self.end - self.start;
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                let (s, e) = (self.start, self.end);
                self.start = e;
                self.scanned = 0;
                return Ok(Some(self.cut(s, e)));
            }
            if self.scanned >= self.hard_cap {
                return self.oversized().map(Some);
            }
            self.make_room();
            self.fill()?;
        }
    }

    /// The line `buf[s..e]`, cut to the hard cap when longer.
    fn cut(&mut self, s: usize, e: usize) -> Line<'_> {
        if e - s > self.hard_cap {
            self.line_at(s, s + self.hard_cap, Some((e - s) as u64))
        } else {
            self.line_at(s, e, None)
        }
    }

    fn line_at(&mut self, s: usize, mut e: usize, full_len: Option<u64>) -> Line<'_> {
        self.line += 1;
        if e > s && self.buf[e - 1] == b'\r' && full_len.is_none() {
            e -= 1;
        }
        Line {
            bytes: &self.buf[s..e],
            number: self.line,
            full_len: full_len.unwrap_or((e - s) as u64),
        }
    }

    /// Moves the pending line to the front, or grows the buffer when it already is there.
    fn make_room(&mut self) {
        if self.end < self.buf.len() {
            return;
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            return;
        }
        let max = self.hard_cap + DISCARD_CHUNK;
        let grown = (self.buf.len() * 2).clamp(1, max);
        self.buf.resize(grown, 0);
    }

    fn fill(&mut self) -> io::Result<()> {
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// The pending line has reached the hard cap with no end in sight: keep its first
    /// `hard_cap` bytes, read and count the rest up to its `\n`, and return it cut.
    fn oversized(&mut self) -> io::Result<Line<'_>> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let kept = self.hard_cap;
        let mut full = self.end as u64;
        if self.buf.len() < kept + DISCARD_CHUNK {
            self.buf.resize(kept + DISCARD_CHUNK, 0);
        }
        loop {
            self.end = kept;
            self.fill()?;
            if self.eof {
                self.start = kept;
                self.end = kept;
                break;
            }
            let got = &self.buf[kept..self.end];
            if let Some(i) = memchr::memchr(b'\n', got) {
                full += i as u64;
                // What follows the `\n` starts the next line: keep it after the cut line.
                self.start = kept + i + 1;
                break;
            }
            full += got.len() as u64;
        }
        self.scanned = 0;
        Ok(self.line_at(0, kept, Some(full)))
    }
}

/// Reads a whole input as one document, keeping at most `hard_cap` bytes; returns the
/// kept bytes and the full length.
pub fn read_document(mut r: impl Read, hard_cap: usize) -> io::Result<(Vec<u8>, u64)> {
    let mut doc = Vec::new();
    (&mut r).take(hard_cap as u64).read_to_end(&mut doc)?;
    let rest = io::copy(&mut r, &mut io::sink())?;
    let full = doc.len() as u64 + rest;
    Ok((doc, full))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out at most `chunk` bytes per read, to cross buffer edges.
    struct Trickle<'a> {
        data: &'a [u8],
        chunk: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.data.len().min(self.chunk).min(buf.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn lines(data: &[u8], chunk: usize, cap: usize) -> Vec<(Vec<u8>, u64, u64)> {
        let mut r = LineReader::new(Trickle { data, chunk }, cap);
        let mut out = Vec::new();
        while let Some(l) = r.next_line().unwrap() {
            out.push((l.bytes.to_vec(), l.number, l.full_len));
        }
        out
    }

    #[test]
    fn frames_lines() {
        let data = b"a\r\nbb\n\n  \nlast";
        for chunk in [1, 2, 3, 1000] {
            let got = lines(data, chunk, 1 << 20);
            let texts: Vec<&[u8]> = got.iter().map(|l| l.0.as_slice()).collect();
            assert_eq!(
                texts,
                vec![&b"a"[..], b"bb", b"", b"  ", b"last"],
                "chunk {chunk}"
            );
            assert_eq!(
                got.iter().map(|l| l.1).collect::<Vec<_>>(),
                vec![1, 2, 3, 4, 5]
            );
        }
        assert!(lines(b"", 7, 10).is_empty());
        assert_eq!(lines(b"x\n", 7, 10).len(), 1);
    }

    #[test]
    fn long_lines_grow_the_buffer_and_oversized_ones_are_cut() {
        let long = vec![b'x'; INITIAL_BUFFER * 3];
        let mut data = long.clone();
        data.extend_from_slice(b"\nnext\n");
        let got = lines(&data, 100_000, INITIAL_BUFFER * 4);
        assert_eq!(got[0].0, long);
        assert_eq!(got[1].0, b"next");

        let cap = 1000;
        let mut data = vec![b'y'; 5000];
        data.extend_from_slice(b"\r\nafter\nz");
        for chunk in [7, 999, 1000, 1001, 100_000] {
            let got = lines(&data, chunk, cap);
            assert_eq!(got.len(), 3, "chunk {chunk}");
            assert_eq!(got[0].0.len(), cap);
            assert_eq!(got[0].2, 5001, "the full length counts the \\r");
            assert_eq!((got[1].0.as_slice(), got[1].1), (&b"after"[..], 2));
            assert_eq!((got[2].0.as_slice(), got[2].1), (&b"z"[..], 3));
        }
        // Cut at the very end of the input, with no newline.
        let got = lines(&vec![b'q'; 3000], 500, cap);
        assert_eq!((got.len(), got[0].0.len(), got[0].2), (1, cap, 3000));
    }

    #[test]
    fn documents_are_bounded() {
        let (doc, full) = read_document(&b"0123456789"[..], 4).unwrap();
        assert_eq!((doc.as_slice(), full), (&b"0123"[..], 10));
        let (doc, full) = read_document(&b"{}"[..], 4).unwrap();
        assert_eq!((doc.as_slice(), full), (&b"{}"[..], 2));
    }
}

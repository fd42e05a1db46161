//! Key files: the sorted row identities of one segment, in blocks with an index, so that a
//! commit can check new rows for duplicates by reading only the blocks whose key range
//! overlaps them (one block in memory at a time; whole files when they come from an object
//! store).
//!
//! Layout (little endian): `WSKEYS03`, blocks, an optional dictionary (sorted distinct
//! hashes as varint deltas, zstd-compressed), the block index (`first_lead i64, last_lead i64, offset u64,
//! len u32, count u32` per block), footer (`index_offset u64, block_count u32, rows u64,
//! dict_offset u64, dict_count u64, WSKEYS03`). A block is zstd-compressed; inside, a
//! sequence of runs of equal `lead`: `varint(lead delta)`, `varint(run length)`, then the
//! run's hashes: `u64` each, or, with a dictionary (used when hashes repeat, as a metric
//! series' hash does at every timestamp), varint deltas of their ascending positions in
//! the dictionary. zstd finds what repeats from run to run (the same series every scrape)
//! that the varints alone cannot. `WSKEYS02` files (blocks not compressed, dictionary as
//! `u64`s) still read.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::StoreError;
use super::keys::Key;

const MAGIC: &[u8; 8] = b"WSKEYS03";
/// The earlier layout, whose blocks are not compressed.
const MAGIC_UNCOMPRESSED: &[u8; 8] = b"WSKEYS02";
/// zstd's default level: most of the gain of higher levels at a fraction of the time.
const ZSTD_LEVEL: i32 = 3;
const FOOTER_LEN: usize = 8 + 4 + 8 + 8 + 8 + 8;
const INDEX_ENTRY_LEN: usize = 8 + 8 + 8 + 4 + 4;
/// Keys per block: small enough to decode cheaply (a commit probes only the blocks its
/// rows' times overlap), large enough that the index stays tiny and zstd sees a series
/// set repeat several times within a block.
const BLOCK_KEYS: usize = 1 << 16;

/// Maps an `i64` to a `u64` with the same order (so deltas never overflow).
fn ordered(lead: i64) -> u64 {
    (lead as u64) ^ (1 << 63)
}

fn unordered(u: u64) -> i64 {
    (u ^ (1 << 63)) as i64
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Encodes sorted keys; `dict` (sorted distinct hashes of the file) when dictionary-coded.
fn encode_block(keys: &[Key], dict: Option<&[u64]>, out: &mut Vec<u8>) {
    let mut prev = keys.first().map_or(0, |k| ordered(k.lead));
    let mut i = 0;
    while i < keys.len() {
        let lead = keys[i].lead;
        let run = keys[i..].iter().take_while(|k| k.lead == lead).count();
        put_varint(out, ordered(lead) - prev);
        put_varint(out, run as u64);
        match dict {
            None => {
                for k in &keys[i..i + run] {
                    out.extend_from_slice(&k.hash.to_le_bytes());
                }
            }
            Some(dict) => {
                // Within a run hashes ascend, so their positions do too.
                let mut prev_pos = 0;
                for k in &keys[i..i + run] {
                    let pos = dict.partition_point(|&h| h < k.hash) as u64;
                    put_varint(out, pos - prev_pos);
                    prev_pos = pos;
                }
            }
        }
        prev = ordered(lead);
        i += run;
    }
}

struct BlockIndex {
    first_lead: i64,
    last_lead: i64,
    offset: u64,
    len: u32,
    count: u32,
}

/// Writes `keys` (sorted, unique) to a new key file at `path`, fsync'd; returns its size.
pub fn write(path: &Path, keys: &[Key]) -> Result<u64, StoreError> {
    let io = |op, e| StoreError::io(op, path, e);
    let bytes = encode(keys).map_err(|e| io("compress", e))?;
    let mut file = File::create(path).map_err(|e| io("create", e))?;
    file.write_all(&bytes).map_err(|e| io("write", e))?;
    file.sync_all().map_err(|e| io("fsync", e))?;
    Ok(bytes.len() as u64)
}

/// `keys` (sorted, unique) as the bytes of a key file.
/// Fails only if zstd does (it does not for in-memory input short of running out of
/// memory).
pub fn encode(keys: &[Key]) -> std::io::Result<Vec<u8>> {
    encode_as(keys, true)
}

/// [`encode`], or the `WSKEYS02` layout (blocks not compressed) when `!compressed`.
fn encode_as(keys: &[Key], compressed: bool) -> std::io::Result<Vec<u8>> {
    let magic = if compressed {
        MAGIC
    } else {
        MAGIC_UNCOMPRESSED
    };
    let mut out = Vec::with_capacity(keys.len() * 2 + 64);
    out.extend_from_slice(magic);
    let mut distinct: Vec<u64> = keys.iter().map(|k| k.hash).collect();
    distinct.sort_unstable();
    distinct.dedup();
    // A dictionary pays when hashes repeat: a few bytes of position instead of 8 per key.
    let dict = (distinct.len() * 2 <= keys.len()).then_some(distinct);
    let mut index = Vec::with_capacity(keys.len() / BLOCK_KEYS + 1);
    let mut plain = Vec::new();
    for chunk in keys.chunks(BLOCK_KEYS) {
        let offset = out.len() as u64;
        plain.clear();
        encode_block(chunk, dict.as_deref(), &mut plain);
        if compressed {
            out.extend_from_slice(&zstd::bulk::compress(&plain, ZSTD_LEVEL)?);
        } else {
            out.extend_from_slice(&plain);
        }
        index.push(BlockIndex {
            first_lead: chunk[0].lead,
            last_lead: chunk[chunk.len() - 1].lead,
            offset,
            len: (out.len() as u64 - offset) as u32,
            count: chunk.len() as u32,
        });
    }
    let dict = dict.unwrap_or_default();
    let dict_offset = out.len() as u64;
    if compressed {
        if !dict.is_empty() {
            plain.clear();
            let mut prev = 0;
            for &h in &dict {
                put_varint(&mut plain, h - prev);
                prev = h;
            }
            out.extend_from_slice(&zstd::bulk::compress(&plain, ZSTD_LEVEL)?);
        }
    } else {
        for h in &dict {
            out.extend_from_slice(&h.to_le_bytes());
        }
    }
    let index_offset = out.len() as u64;
    for b in &index {
        out.extend_from_slice(&b.first_lead.to_le_bytes());
        out.extend_from_slice(&b.last_lead.to_le_bytes());
        out.extend_from_slice(&b.offset.to_le_bytes());
        out.extend_from_slice(&b.len.to_le_bytes());
        out.extend_from_slice(&b.count.to_le_bytes());
    }
    out.extend_from_slice(&index_offset.to_le_bytes());
    out.extend_from_slice(&(index.len() as u32).to_le_bytes());
    out.extend_from_slice(&(keys.len() as u64).to_le_bytes());
    out.extend_from_slice(&dict_offset.to_le_bytes());
    out.extend_from_slice(&(dict.len() as u64).to_le_bytes());
    out.extend_from_slice(magic);
    Ok(out)
}

/// Where a key file's bytes are read from: the file itself, or its whole content
/// (fetched from an object store, or kept by the writer's cache).
enum Source {
    File(File),
    Bytes(Bytes),
}

impl Source {
    fn len(&self) -> std::io::Result<u64> {
        match self {
            Source::File(f) => Ok(f.metadata()?.len()),
            Source::Bytes(b) => Ok(b.len() as u64),
        }
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        match self {
            Source::File(f) => f.read_exact_at(buf, offset),
            Source::Bytes(b) => {
                let start = usize::try_from(offset).unwrap_or(usize::MAX);
                let part = start
                    .checked_add(buf.len())
                    .and_then(|end| b.get(start..end))
                    .ok_or(std::io::ErrorKind::UnexpectedEof)?;
                buf.copy_from_slice(part);
                Ok(())
            }
        }
    }
}

/// The `count` sorted hashes of a compressed dictionary (varint deltas, zstd), or `None`
/// when the bytes are not that.
fn read_dictionary(compressed: &[u8], count: u64) -> Option<Vec<u64>> {
    let count = usize::try_from(count).ok()?;
    // A varint is at most 10 bytes: a larger output is not a dictionary of `count`.
    let plain = zstd::bulk::decompress(compressed, count.checked_mul(10)?).ok()?;
    let mut dict = Vec::with_capacity(count.min(plain.len()));
    let (mut pos, mut h) = (0, 0u64);
    while pos < plain.len() {
        h = h.checked_add(get_varint(&plain, &mut pos)?)?;
        dict.push(h);
    }
    (dict.len() == count).then_some(dict)
}

/// Reusable buffers for reading blocks: the bytes as stored, and decompressed.
#[derive(Default)]
struct BlockBuffers {
    read: Vec<u8>,
    plain: Vec<u8>,
}

/// An open key file with its block index (and dictionary) loaded.
pub struct KeysFile {
    path: PathBuf,
    source: Source,
    index: Vec<BlockIndex>,
    /// Sorted distinct hashes, when the file is dictionary-coded.
    dict: Option<Vec<u64>>,
    /// Whether blocks are zstd-compressed (`WSKEYS03`) or not (`WSKEYS02`).
    compressed: bool,
    #[cfg_attr(not(test), allow(dead_code))]
    rows: u64,
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

impl KeysFile {
    /// Opens a key file and reads its index and dictionary.
    pub fn open(path: &Path) -> Result<KeysFile, StoreError> {
        let file = File::open(path).map_err(|e| StoreError::io("open", path, e))?;
        KeysFile::with_source(path, Source::File(file))
    }

    /// A key file whose whole content is `bytes`; `path` names it in errors.
    pub fn from_bytes(path: &Path, bytes: Bytes) -> Result<KeysFile, StoreError> {
        KeysFile::with_source(path, Source::Bytes(bytes))
    }

    fn with_source(path: &Path, source: Source) -> Result<KeysFile, StoreError> {
        let io = |op, e| StoreError::io(op, path, e);
        let corrupt = |detail: String| StoreError::Corrupt {
            what: "key file",
            path: path.to_path_buf(),
            detail,
        };
        let len = source.len().map_err(|e| io("stat", e))?;
        if len < (MAGIC.len() + FOOTER_LEN) as u64 {
            return Err(corrupt(format!("only {len} bytes")));
        }
        let mut footer = [0u8; FOOTER_LEN];
        source
            .read_exact_at(&mut footer, len - FOOTER_LEN as u64)
            .map_err(|e| io("read", e))?;
        let compressed = match &footer[36..44] {
            m if m == MAGIC => true,
            m if m == MAGIC_UNCOMPRESSED => false,
            _ => return Err(corrupt("bad footer magic".into())),
        };
        let index_offset = le_u64(&footer, 0);
        let blocks = le_u32(&footer, 8) as usize;
        let rows = le_u64(&footer, 12);
        let dict_offset = le_u64(&footer, 20);
        let dict_count = le_u64(&footer, 28);
        let index_len = (blocks * INDEX_ENTRY_LEN) as u64;
        let dict_fits = match compressed {
            true => {
                dict_offset <= index_offset && (dict_count == 0) == (dict_offset == index_offset)
            }
            false => {
                dict_count
                    .checked_mul(8)
                    .and_then(|l| l.checked_add(dict_offset))
                    == Some(index_offset)
            }
        };
        if !dict_fits || index_offset.checked_add(index_len + FOOTER_LEN as u64) != Some(len) {
            return Err(corrupt(format!(
                "index of {blocks} blocks does not fit {len} bytes"
            )));
        }
        let mut raw = vec![0u8; (index_offset - dict_offset + index_len) as usize];
        source
            .read_exact_at(&mut raw, dict_offset)
            .map_err(|e| io("read", e))?;
        let (dict_raw, index_raw) = raw.split_at((index_offset - dict_offset) as usize);
        let index = index_raw
            .chunks_exact(INDEX_ENTRY_LEN)
            .map(|e| BlockIndex {
                first_lead: le_u64(e, 0) as i64,
                last_lead: le_u64(e, 8) as i64,
                offset: le_u64(e, 16),
                len: le_u32(e, 24),
                count: le_u32(e, 28),
            })
            .collect::<Vec<_>>();
        for b in &index {
            if b.offset + u64::from(b.len) > dict_offset {
                return Err(corrupt(format!(
                    "block at {} runs past the index",
                    b.offset
                )));
            }
        }
        let dict = match (dict_count, compressed) {
            (0, _) => None,
            (_, false) => Some(dict_raw.chunks_exact(8).map(|c| le_u64(c, 0)).collect()),
            (n, true) => Some(
                read_dictionary(dict_raw, n)
                    .ok_or_else(|| corrupt(format!("dictionary of {n} hashes is malformed")))?,
            ),
        };
        Ok(KeysFile {
            path: path.to_path_buf(),
            source,
            index,
            dict,
            compressed,
            rows,
        })
    }

    /// Number of keys in the file.
    #[cfg(test)]
    pub fn rows(&self) -> u64 {
        self.rows
    }

    fn read_block(
        &mut self,
        i: usize,
        buf: &mut BlockBuffers,
        out: &mut Vec<Key>,
    ) -> Result<(), StoreError> {
        let b = &self.index[i];
        let (offset, len, count) = (b.offset, b.len as usize, b.count as usize);
        let path = &self.path;
        buf.read.resize(len, 0);
        self.source
            .read_exact_at(&mut buf.read, offset)
            .map_err(|e| StoreError::io("read", path, e))?;
        out.clear();
        let corrupt = || StoreError::Corrupt {
            what: "key file",
            path: path.clone(),
            detail: format!("block at byte {offset} is malformed"),
        };
        let raw: &[u8] = if self.compressed {
            // A key costs at most a varint lead delta and run length (10 bytes each) plus
            // its hash or position (10): a block that inflates past that is corrupt.
            buf.plain = zstd::bulk::decompress(&buf.read, count.saturating_mul(30))
                .map_err(|_| corrupt())?;
            &buf.plain
        } else {
            &buf.read
        };
        let mut pos = 0;
        let mut lead = ordered(self.index[i].first_lead);
        while pos < raw.len() {
            let delta = get_varint(raw, &mut pos).ok_or_else(corrupt)?;
            lead = lead.checked_add(delta).ok_or_else(corrupt)?;
            let run = get_varint(raw, &mut pos).ok_or_else(corrupt)? as usize;
            if out.len() + run > count {
                return Err(corrupt());
            }
            let lead = unordered(lead);
            match &self.dict {
                None => {
                    if pos + run * 8 > raw.len() {
                        return Err(corrupt());
                    }
                    for _ in 0..run {
                        out.push(Key {
                            lead,
                            hash: le_u64(raw, pos),
                        });
                        pos += 8;
                    }
                }
                Some(dict) => {
                    let mut at = 0u64;
                    for _ in 0..run {
                        let step = get_varint(raw, &mut pos).ok_or_else(corrupt)?;
                        at = at.checked_add(step).ok_or_else(corrupt)?;
                        let hash = *dict.get(at as usize).ok_or_else(corrupt)?;
                        out.push(Key { lead, hash });
                    }
                }
            }
        }
        if out.len() != count {
            return Err(corrupt());
        }
        Ok(())
    }

    /// Marks `dup[i]` for every key of `new` (sorted) that this file holds; returns how many
    /// were newly marked. Reads only the blocks whose range overlaps `new`.
    pub fn probe(&mut self, new: &[Key], dup: &mut [bool]) -> Result<u64, StoreError> {
        let (Some(first), Some(last)) = (new.first(), new.last()) else {
            return Ok(0);
        };
        let mut raw = BlockBuffers::default();
        let mut block = Vec::new();
        let mut marked = 0;
        for i in 0..self.index.len() {
            let (lo_lead, hi_lead) = (self.index[i].first_lead, self.index[i].last_lead);
            if hi_lead < first.lead || lo_lead > last.lead {
                continue;
            }
            let lo = new.partition_point(|k| k.lead < lo_lead);
            let hi = new.partition_point(|k| k.lead <= hi_lead);
            if lo == hi {
                continue;
            }
            self.read_block(i, &mut raw, &mut block)?;
            let (mut a, mut b) = (0, lo);
            while a < block.len() && b < hi {
                match block[a].cmp(&new[b]) {
                    std::cmp::Ordering::Less => a += 1,
                    std::cmp::Ordering::Greater => b += 1,
                    std::cmp::Ordering::Equal => {
                        if !dup[b] {
                            dup[b] = true;
                            marked += 1;
                        }
                        a += 1;
                        b += 1;
                    }
                }
            }
        }
        Ok(marked)
    }

    /// Every key in the file, in order.
    #[cfg(test)]
    pub fn read_all(&mut self) -> Result<Vec<Key>, StoreError> {
        let mut out = Vec::with_capacity(self.rows as usize);
        let (mut raw, mut block) = (BlockBuffers::default(), Vec::new());
        for i in 0..self.index.len() {
            self.read_block(i, &mut raw, &mut block)?;
            out.append(&mut block);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: usize) -> Vec<Key> {
        let mut v: Vec<Key> = (0..n)
            .map(|i| Key {
                lead: (i as i64 / 7) * 1_000_000_000 - 5_000_000_000,
                hash: xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes()),
            })
            .collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn round_trip_and_probe() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.keys");
        // Several blocks, so that a probe skips those outside its keys' range.
        let all = keys(300_000);
        let stored: Vec<Key> = all.iter().copied().step_by(2).collect();
        let bytes = write(&path, &stored).unwrap();
        assert_eq!(bytes, std::fs::metadata(&path).unwrap().len());
        let mut f = KeysFile::open(&path).unwrap();
        assert_eq!(f.rows(), stored.len() as u64);
        assert_eq!(f.read_all().unwrap(), stored);
        let mut dup = vec![false; all.len()];
        let marked = f.probe(&all, &mut dup).unwrap();
        assert_eq!(marked, stored.len() as u64);
        for (i, d) in dup.iter().enumerate() {
            assert_eq!(*d, i % 2 == 0, "key {i}");
        }
    }

    #[test]
    fn repeated_hashes_are_dictionary_coded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.keys");
        // 300 series sampled at 100 timestamps.
        let mut stored: Vec<Key> = (0..100i64)
            .flat_map(|t| {
                (0..300u64).map(move |s| Key {
                    lead: t * 15,
                    hash: s.wrapping_mul(0x9e37_79b9_7f4a_7c15),
                })
            })
            .collect();
        stored.sort_unstable();
        let bytes = write(&path, &stored).unwrap();
        assert!(
            bytes < stored.len() as u64 * 2,
            "{bytes} bytes for {} keys",
            stored.len()
        );
        let mut f = KeysFile::open(&path).unwrap();
        assert!(f.dict.is_some());
        assert_eq!(f.read_all().unwrap(), stored);
        let mut probe = vec![stored[5], Key { lead: 15, hash: 7 }, stored[29_999]];
        probe.sort_unstable();
        let mut dup = vec![false; 3];
        assert_eq!(f.probe(&probe, &mut dup).unwrap(), 2);
        assert_eq!(dup.iter().filter(|d| **d).count(), 2);
    }

    #[test]
    fn extreme_leads_and_empty_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.keys");
        let stored = vec![
            Key {
                lead: i64::MIN,
                hash: 1,
            },
            Key {
                lead: i64::MAX,
                hash: 2,
            },
        ];
        write(&path, &stored).unwrap();
        assert_eq!(KeysFile::open(&path).unwrap().read_all().unwrap(), stored);
        write(&path, &[]).unwrap();
        let mut f = KeysFile::open(&path).unwrap();
        assert!(f.read_all().unwrap().is_empty());
        assert_eq!(f.probe(&stored, &mut [false, false]).unwrap(), 0);
    }

    /// 2,000 series scraped at 200 instants with µs jitter: what a metrics segment holds.
    fn scrapes() -> Vec<Key> {
        let mut v: Vec<Key> = (0..200i64)
            .flat_map(|t| {
                (0..2_000u64).map(move |s| Key {
                    lead: t * 15_000_000 + (s as i64 % 40) * 1_013,
                    hash: xxhash_rust::xxh3::xxh3_64(&s.to_le_bytes()),
                })
            })
            .collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn blocks_are_compressed_where_series_repeat() {
        let stored = scrapes();
        let plain = encode_as(&stored, false).unwrap();
        let packed = encode(&stored).unwrap();
        let per_key = packed.len() as f64 / stored.len() as f64;
        // The dictionary of 2,000 hashes alone is 0.04 bytes per key.
        assert!(per_key < 0.3, "{per_key} bytes per key");
        assert!(
            packed.len() * 4 < plain.len(),
            "{} vs {}",
            packed.len(),
            plain.len()
        );
        let mut f = KeysFile::from_bytes(Path::new("s.keys"), Bytes::from(packed)).unwrap();
        assert_eq!(f.read_all().unwrap(), stored);
    }

    #[test]
    fn uncompressed_files_of_the_earlier_layout_still_read() {
        let stored = scrapes();
        let bytes = Bytes::from(encode_as(&stored, false).unwrap());
        assert_eq!(&bytes[..8], MAGIC_UNCOMPRESSED);
        let mut f = KeysFile::from_bytes(Path::new("old.keys"), bytes).unwrap();
        assert_eq!(f.read_all().unwrap(), stored);
        let mut dup = vec![false; 2];
        let probe = [stored[10], stored[399_000]];
        assert_eq!(f.probe(&probe, &mut dup).unwrap(), 2);
    }

    #[test]
    fn a_damaged_block_is_a_named_error() {
        let stored = scrapes();
        let mut bytes = encode(&stored).unwrap();
        for b in &mut bytes[40..200] {
            *b ^= 0x5a;
        }
        let mut f = KeysFile::from_bytes(Path::new("bad.keys"), Bytes::from(bytes)).unwrap();
        let err = f.read_all().err().unwrap().to_string();
        assert!(
            err.contains("bad.keys") && err.contains("malformed"),
            "{err}"
        );
    }

    #[test]
    fn truncated_file_is_a_named_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.keys");
        write(&path, &keys(100)).unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len - 3).unwrap();
        let err = KeysFile::open(&path).err().unwrap().to_string();
        assert!(err.contains("c.keys"), "{err}");
    }
}

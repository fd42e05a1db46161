//! Slurm hostlist expressions (`gpu-[01-03,07]`, `a[1-2]b[3-4]`, `n1,n2`) expanded into
//! node names.

/// The most nodes one expression may expand to; more is not a real cluster.
#[cfg(not(fuzzing))]
pub const MAX_NODES: usize = 65_536;
/// Under the fuzzer (`cargo fuzz` sets `cfg(fuzzing)`) the caps are smaller, so that the
/// same refusals are reached by inputs a fuzzer makes and each run costs little.
#[cfg(fuzzing)]
pub const MAX_NODES: usize = 1_024;

/// The most bytes of node names one expression may expand to (64 bytes for each of
/// [`MAX_NODES`] nodes): long prefixes or zero-padded numbers multiplied by a range must
/// not turn a short line into gigabytes. Checked before anything is allocated.
#[cfg(not(fuzzing))]
pub const MAX_BYTES: usize = 4 * 1024 * 1024;
/// Under the fuzzer: 64 bytes for each of its [`MAX_NODES`].
#[cfg(fuzzing)]
pub const MAX_BYTES: usize = 64 * 1024;

/// A hostlist that could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostlistError {
    #[error("unbalanced brackets in hostlist '{0}'")]
    Brackets(String),
    #[error("bad range '{0}' in hostlist")]
    Range(String),
    #[error("hostlist '{0}' expands to more than {MAX_NODES} nodes")]
    TooLarge(String),
    #[error("hostlist '{0}' expands to more than {MAX_BYTES} bytes of node names")]
    TooManyBytes(String),
}

/// The hostlist as named in an error: its first 200 bytes (at a character boundary).
fn shown(s: &str) -> String {
    let mut end = s.len().min(200);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    if end < s.len() {
        format!("{}…", &s[..end])
    } else {
        s.to_string()
    }
}

/// Splits at commas outside brackets.
fn top_level_items(s: &str) -> Result<Vec<&str>, HostlistError> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err(HostlistError::Brackets(s.to_string()));
        }
    }
    if depth != 0 {
        return Err(HostlistError::Brackets(s.to_string()));
    }
    items.push(&s[start..]);
    Ok(items
        .into_iter()
        .map(str::trim)
        .filter(|i| !i.is_empty())
        .collect())
}

/// The values of one bracket body: `01-03,07` → `01 02 03 07`, and their total length.
fn bracket_values(body: &str) -> Result<(Vec<String>, usize), HostlistError> {
    let mut out = Vec::new();
    let mut bytes = 0usize;
    for part in body.split(',') {
        let part = part.trim();
        match part.split_once('-') {
            Some((a, b)) => {
                let bad = || HostlistError::Range(part.to_string());
                let lo: u64 = a.parse().map_err(|_| bad())?;
                let hi: u64 = b.parse().map_err(|_| bad())?;
                if hi < lo || hi - lo >= MAX_NODES as u64 {
                    return Err(bad());
                }
                let width = if a.starts_with('0') { a.len() } else { 0 };
                // Each value is at most max(width, 20) bytes (a u64 has 20 digits).
                let most = (hi - lo + 1).saturating_mul(width.max(20) as u64);
                if bytes as u64 + most > MAX_BYTES as u64 {
                    return Err(HostlistError::TooManyBytes(shown(body)));
                }
                for v in lo..=hi {
                    let v = format!("{v:0width$}");
                    bytes += v.len();
                    out.push(v);
                }
            }
            None if !part.is_empty() && part.bytes().all(|c| c.is_ascii_digit()) => {
                bytes += part.len();
                out.push(part.to_string())
            }
            None => return Err(HostlistError::Range(shown(part))),
        }
        if out.len() > MAX_NODES {
            return Err(HostlistError::TooLarge(shown(body)));
        }
        if bytes > MAX_BYTES {
            return Err(HostlistError::TooManyBytes(shown(body)));
        }
    }
    Ok((out, bytes))
}

/// Expands a hostlist into node names, in order. At most [`MAX_NODES`] names of
/// [`MAX_BYTES`] in all; the sizes are computed before each product is built.
pub fn expand(s: &str) -> Result<Vec<String>, HostlistError> {
    let mut nodes = Vec::new();
    // Bytes of the names in `nodes`.
    let mut total = 0usize;
    let too_many_bytes = || HostlistError::TooManyBytes(shown(s));
    for item in top_level_items(s.trim()).map_err(|_| HostlistError::Brackets(shown(s)))? {
        let mut names = vec![String::new()];
        // Bytes of the names in `names`.
        let mut names_bytes = 0usize;
        let mut rest = item;
        while let Some(open) = rest.find('[') {
            let close = rest[open..]
                .find(']')
                .ok_or_else(|| HostlistError::Brackets(shown(s)))?
                + open;
            let (values, values_bytes) = bracket_values(&rest[open + 1..close])?;
            let prefix = &rest[..open];
            if names.len() * values.len() > MAX_NODES {
                return Err(HostlistError::TooLarge(shown(s)));
            }
            // Every name gets every value after the prefix.
            let grown = names_bytes
                .checked_mul(values.len())
                .and_then(|b| b.checked_add(names.len().checked_mul(values_bytes)?))
                .and_then(|b| {
                    b.checked_add(
                        names
                            .len()
                            .checked_mul(values.len())?
                            .checked_mul(prefix.len())?,
                    )
                })
                .filter(|&b| total.saturating_add(b) <= MAX_BYTES)
                .ok_or_else(too_many_bytes)?;
            names = names
                .iter()
                .flat_map(|n| values.iter().map(move |v| format!("{n}{prefix}{v}")))
                .collect();
            names_bytes = grown;
            rest = &rest[close + 1..];
        }
        let item_bytes = names
            .len()
            .checked_mul(rest.len())
            .and_then(|b| b.checked_add(names_bytes))
            .filter(|&b| total.saturating_add(b) <= MAX_BYTES)
            .ok_or_else(too_many_bytes)?;
        total += item_bytes;
        nodes.extend(names.into_iter().map(|n| n + rest));
        if nodes.len() > MAX_NODES {
            return Err(HostlistError::TooLarge(shown(s)));
        }
    }
    Ok(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_ranges_lists_and_products() {
        assert_eq!(
            expand("gpu-[01-03,07]").unwrap(),
            ["gpu-01", "gpu-02", "gpu-03", "gpu-07"]
        );
        assert_eq!(expand("gpu-07").unwrap(), ["gpu-07"]);
        assert_eq!(
            expand("a[1-2]b[3-4]").unwrap(),
            ["a1b3", "a1b4", "a2b3", "a2b4"]
        );
        assert_eq!(
            expand("n1,gpu[8-9]-ib,x").unwrap(),
            ["n1", "gpu8-ib", "gpu9-ib", "x"]
        );
        assert_eq!(
            expand("gpu[098-101]").unwrap(),
            ["gpu098", "gpu099", "gpu100", "gpu101"]
        );
        assert!(expand("gpu-[01-03").is_err());
        assert!(expand("gpu-[3-1]").is_err());
        assert!(expand("gpu-[a-b]").is_err());
        assert!(expand("x[0-60000]y[0-60000]").is_err());
        assert!(expand("").unwrap().is_empty());
    }

    /// A 16 KB line used to expand to gigabytes: a long prefix times a range, and a
    /// zero-padded number as wide as the line. Both are refused before any allocation
    /// of that size, quickly.
    #[test]
    fn expansion_is_capped_in_bytes() {
        let started = std::time::Instant::now();
        let long_prefix = format!("{}[0-65535]", "n".repeat(16 * 1024));
        assert!(matches!(
            expand(&long_prefix),
            Err(HostlistError::TooManyBytes(_))
        ));
        let wide = format!("n[{}-65535]", "0".repeat(16 * 1024));
        assert!(matches!(expand(&wide), Err(HostlistError::TooManyBytes(_))));
        let suffix = format!("n[0-65535]{}", "x".repeat(16 * 1024));
        assert!(matches!(
            expand(&suffix),
            Err(HostlistError::TooManyBytes(_))
        ));
        // Many items, each under the cap, not in all.
        let items = vec![format!("{}[0-999]", "p".repeat(100)); 100].join(",");
        assert!(matches!(
            expand(&items),
            Err(HostlistError::TooManyBytes(_))
        ));
        // The error names the list by its head, not whole.
        let e = expand(&long_prefix).unwrap_err().to_string();
        assert!(e.len() < 400, "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        // A real list just under the node cap still expands.
        assert_eq!(expand("gpu-[00000-65535]").unwrap().len(), 65_536);
    }
}

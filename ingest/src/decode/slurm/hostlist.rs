//! Slurm hostlist expressions (`gpu-[01-03,07]`, `a[1-2]b[3-4]`, `n1,n2`) expanded into
//! node names.

/// The most nodes one expression may expand to; more is not a real cluster.
pub const MAX_NODES: usize = 65_536;

/// A hostlist that could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostlistError {
    #[error("unbalanced brackets in hostlist '{0}'")]
    Brackets(String),
    #[error("bad range '{0}' in hostlist")]
    Range(String),
    #[error("hostlist '{0}' expands to more than {MAX_NODES} nodes")]
    TooLarge(String),
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

/// The values of one bracket body: `01-03,07` → `01 02 03 07`.
fn bracket_values(body: &str) -> Result<Vec<String>, HostlistError> {
    let mut out = Vec::new();
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
                for v in lo..=hi {
                    out.push(format!("{v:0width$}"));
                }
            }
            None if !part.is_empty() && part.bytes().all(|c| c.is_ascii_digit()) => {
                out.push(part.to_string())
            }
            None => return Err(HostlistError::Range(part.to_string())),
        }
        if out.len() > MAX_NODES {
            return Err(HostlistError::TooLarge(body.to_string()));
        }
    }
    Ok(out)
}

/// Expands a hostlist into node names, in order.
pub fn expand(s: &str) -> Result<Vec<String>, HostlistError> {
    let mut nodes = Vec::new();
    for item in top_level_items(s.trim())? {
        let mut names = vec![String::new()];
        let mut rest = item;
        while let Some(open) = rest.find('[') {
            let close = rest[open..]
                .find(']')
                .ok_or_else(|| HostlistError::Brackets(s.to_string()))?
                + open;
            let values = bracket_values(&rest[open + 1..close])?;
            let prefix = &rest[..open];
            if names.len() * values.len() > MAX_NODES {
                return Err(HostlistError::TooLarge(s.to_string()));
            }
            names = names
                .iter()
                .flat_map(|n| values.iter().map(move |v| format!("{n}{prefix}{v}")))
                .collect();
            rest = &rest[close + 1..];
        }
        nodes.extend(names.into_iter().map(|n| n + rest));
        if nodes.len() > MAX_NODES {
            return Err(HostlistError::TooLarge(s.to_string()));
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
}

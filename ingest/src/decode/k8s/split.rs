//! Cuts a k8s input into documents: a JSON stream (one object, a `List`, JSON lines or
//! concatenated pretty-printed objects as `kubectl get -w -o json` writes them), YAML
//! documents separated by `---`, or text that is recognizably not an object (kubectl
//! tables and `describe` output, markdown) and is rejected whole with the reason.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::row::K8sError;

/// One document of the input and where it starts (byte offset).
#[derive(Debug)]
pub enum Piece<'a> {
    /// A JSON value.
    Json { bytes: &'a [u8], offset: usize },
    /// A YAML document.
    Yaml { text: &'a str, offset: usize },
    /// Bytes that cannot be cut into documents.
    Bad {
        bytes: &'a [u8],
        offset: usize,
        error: K8sError,
    },
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// Cuts `input` into documents.
pub fn pieces(input: &[u8]) -> Vec<Piece<'_>> {
    let start = if input.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    let Some(first) = input[start..]
        .iter()
        .position(|&b| !is_ws(b))
        .map(|p| p + start)
    else {
        return Vec::new();
    };
    if matches!(input[first], b'{' | b'[') {
        return json_pieces(input, first);
    }
    let Ok(text) = std::str::from_utf8(input) else {
        let error = K8sError::NotObject("neither JSON nor UTF-8 YAML text".into());
        return vec![Piece::Bad {
            bytes: input,
            offset: 0,
            error,
        }];
    };
    if let Some(why) = unreadable_text(&text[first..]) {
        return vec![Piece::Bad {
            bytes: input,
            offset: 0,
            error: K8sError::Text(why),
        }];
    }
    yaml_pieces(text, start)
}

/// Where to resume a JSON stream after a value that failed at `from`: the next line that
/// starts with `{` or `[` (JSON lines, or the next pretty-printed object).
fn resync(input: &[u8], from: usize) -> usize {
    let mut i = from + 1;
    while i < input.len() {
        match memchr::memchr(b'\n', &input[i..]) {
            Some(p) => {
                let next = i + p + 1;
                if next < input.len() && matches!(input[next], b'{' | b'[') {
                    return next;
                }
                i = next;
            }
            None => break,
        }
    }
    input.len()
}

fn json_pieces(input: &[u8], first: usize) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut pos = first;
    while pos < input.len() {
        let mut stream =
            serde_json::Deserializer::from_slice(&input[pos..]).into_iter::<&RawValue>();
        let mut advanced_to = input.len();
        loop {
            let before = pos + stream.byte_offset();
            match stream.next() {
                None => break,
                Some(Ok(raw)) => {
                    let bytes = raw.get().as_bytes();
                    let offset = bytes.as_ptr() as usize - input.as_ptr() as usize;
                    out.push(Piece::Json { bytes, offset });
                }
                Some(Err(e)) => {
                    let bad_start = input[before..]
                        .iter()
                        .position(|&b| !is_ws(b))
                        .map_or(input.len(), |p| before + p);
                    let next = resync(input, bad_start);
                    let end = input[..next]
                        .iter()
                        .rposition(|&b| !is_ws(b))
                        .map_or(bad_start, |p| p + 1)
                        .max(bad_start);
                    out.push(Piece::Bad {
                        bytes: &input[bad_start..end],
                        offset: bad_start,
                        error: K8sError::Json(e.to_string()),
                    });
                    advanced_to = next;
                    break;
                }
            }
        }
        if advanced_to >= input.len() {
            break;
        }
        pos = advanced_to;
    }
    out
}

/// Whether a line is a YAML document marker (`---`, `--- # c`, `...`).
fn is_marker(line: &str) -> bool {
    let l = line.trim_end();
    l == "---" || l == "..." || l.starts_with("--- ") || l.starts_with("---\t")
}

fn push_doc<'t>(text: &'t str, from: usize, to: usize, out: &mut Vec<Piece<'t>>) {
    let doc = &text[from..to];
    let has_content = doc.lines().any(|l| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with('#') && !t.starts_with('%')
    });
    if has_content {
        out.push(Piece::Yaml {
            text: doc,
            offset: from,
        });
    }
}

fn yaml_pieces(text: &str, start: usize) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut doc_start = start;
    let mut pos = start;
    while pos < text.len() {
        let end = text[pos..].find('\n').map_or(text.len(), |p| pos + p + 1);
        let line = text[pos..end].trim_end_matches(['\n', '\r']);
        if is_marker(line) {
            push_doc(text, doc_start, pos, &mut out);
            // `--- {inline: doc}` keeps what follows the marker.
            doc_start = if line.starts_with("--- ") && !line[4..].trim_start().starts_with('#') {
                pos + 4
            } else {
                end
            };
        }
        pos = end;
    }
    push_doc(text, doc_start, text.len(), &mut out);
    out
}

/// Why a text is recognizably not a Kubernetes object, if it is one of the shapes people
/// paste instead of objects.
pub fn unreadable_text(text: &str) -> Option<&'static str> {
    const TABLE: &str = "kubectl table or describe output, not an object: it shows relative ages \
        (like '111s' or '22m') and no timestamps, so its events cannot be dated; export with \
        `kubectl get ... -o json` or `-o yaml`";
    const MARKDOWN: &str =
        "markdown text, not a Kubernetes object: extract the YAML or JSON it quotes";
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let first = lines.next()?.trim_start();
    if text.lines().any(|l| l.trim_start().starts_with("```")) {
        return Some(MARKDOWN);
    }
    let is_table_header = |l: &str| {
        let t: Vec<&str> = l.split_whitespace().collect();
        t.starts_with(&["Type", "Reason", "Age", "From", "Message"])
            || t.starts_with(&["LAST", "SEEN", "TYPE", "REASON"])
            || t.starts_with(&["TYPE", "REASON", "OBJECT", "MESSAGE"])
            || t.starts_with(&["NAMESPACE", "LAST", "SEEN"])
    };
    let is_table_row = |l: &str| {
        let t = l.trim_start();
        (t.starts_with("Normal ") || t.starts_with("Warning ")) && t.split_whitespace().count() >= 3
    };
    if text.lines().any(is_table_header) || is_table_row(first) || first.starts_with("kubectl ") {
        return Some(TABLE);
    }
    if first.starts_with("Name:")
        && text
            .lines()
            .any(|l| l.starts_with("Events:") || l.starts_with("API Version:"))
    {
        return Some(TABLE);
    }
    None
}

/// The deepest nesting of flow collections (`[`, `{`) a YAML document may have: the
/// YAML deserializer's own recursion limit (128), checked before parsing, because the
/// parser's cost grows with the square of the depth (64K nested `[` took seconds).
pub const MAX_YAML_DEPTH: usize = 128;

/// The deepest flow nesting of a YAML text, counted in one pass: `[`/`{` open and
/// `]`/`}` close outside quoted scalars and comments. A bracket inside a plain scalar
/// (`message: a [b`) counts too, so the count is an upper bound; stops counting past
/// `limit`.
fn flow_depth(doc: &str, limit: usize) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut quote: Option<u8> = None;
    let mut prev = b'\n';
    let mut bytes = doc.bytes();
    while let Some(c) = bytes.next() {
        match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                } else if q == b'"' && c == b'\\' {
                    bytes.next();
                }
            }
            None => match c {
                b'"' | b'\'' if !prev.is_ascii_alphanumeric() => quote = Some(c),
                b'#' if prev.is_ascii_whitespace() => {
                    // A comment runs to the end of its line.
                    for c in bytes.by_ref() {
                        if c == b'\n' {
                            break;
                        }
                    }
                }
                b'[' | b'{' => {
                    depth += 1;
                    deepest = deepest.max(depth);
                    if deepest > limit {
                        return deepest;
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
        prev = c;
    }
    deepest
}

/// The most block sequences one line opens at once (`- - - x`, compact nesting that
/// costs the parser as much as flow nesting).
fn compact_depth(doc: &str) -> usize {
    doc.lines()
        .map(|l| {
            let mut t = l.trim_start();
            let mut n = 0;
            while let Some(rest) = t.strip_prefix("- ").or_else(|| t.strip_prefix("-\t")) {
                n += 1;
                t = rest.trim_start();
            }
            n
        })
        .max()
        .unwrap_or(0)
}

/// A YAML document as JSON bytes, so that one reader serves both.
pub fn yaml_to_json(doc: &str) -> Result<Vec<u8>, K8sError> {
    if flow_depth(doc, MAX_YAML_DEPTH) > MAX_YAML_DEPTH || compact_depth(doc) > MAX_YAML_DEPTH {
        return Err(K8sError::Yaml(format!(
            "collections nested deeper than {MAX_YAML_DEPTH} levels"
        )));
    }
    let mut values = Vec::new();
    for d in serde_norway::Deserializer::from_str(doc) {
        let v = serde_json::Value::deserialize(d).map_err(|e| K8sError::Yaml(e.to_string()))?;
        values.push(v);
    }
    let value = match values.len() {
        1 => values.pop().unwrap_or(serde_json::Value::Null),
        0 => serde_json::Value::Null,
        _ => {
            return Err(K8sError::Yaml(
                "several documents where one was expected".into(),
            ));
        }
    };
    if !value.is_object() {
        let what = match value {
            serde_json::Value::Null => "an empty document",
            serde_json::Value::String(_) => "a plain text scalar",
            serde_json::Value::Array(_) => "a sequence",
            _ => "a scalar",
        };
        return Err(K8sError::NotObject(format!(
            "the YAML document is {what}, not a mapping"
        )));
    }
    serde_json::to_vec(&value).map_err(|e| K8sError::Yaml(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(p: &[Piece<'_>]) -> Vec<&'static str> {
        p.iter()
            .map(|p| match p {
                Piece::Json { .. } => "json",
                Piece::Yaml { .. } => "yaml",
                Piece::Bad { .. } => "bad",
            })
            .collect()
    }

    #[test]
    fn json_lines_with_a_broken_line_resync() {
        let input = b"{\"a\":1}\n{\"b\":\n{\"c\":3}\n";
        let p = pieces(input);
        assert_eq!(kinds(&p), ["json", "bad", "json"]);
        if let Piece::Bad { bytes, offset, .. } = &p[1] {
            assert_eq!(*bytes, b"{\"b\":");
            assert_eq!(*offset, 8);
        }
    }

    #[test]
    fn concatenated_pretty_objects() {
        let input = b"{\n  \"kind\": \"Pod\"\n}\n{\n  \"kind\": \"Pod\"\n}\n";
        assert_eq!(kinds(&pieces(input)), ["json", "json"]);
    }

    #[test]
    fn yaml_documents() {
        let input = "# comment\n---\nkind: Pod\n---\n---\nkind: Node\n...\n";
        let p = pieces(input.as_bytes());
        assert_eq!(kinds(&p), ["yaml", "yaml"]);
        assert!(
            yaml_to_json("kind: Pod\nstatus: True")
                .unwrap()
                .starts_with(b"{")
        );
        assert!(yaml_to_json("just words").is_err());
    }

    /// 64K nested `[` used to take seconds (200K never ended) in the YAML parser: refused
    /// by the depth pre-scan at once; nesting within the limit still parses.
    #[test]
    fn deep_yaml_nesting_fails_fast() {
        let started = std::time::Instant::now();
        for deep in [
            format!("kind: Pod\nx: {}", "[".repeat(64 * 1024)),
            format!("kind: Pod\nx: {}", "{a: ".repeat(200_000)),
            format!("kind: Pod\nx:\n  {}y", "- ".repeat(64 * 1024)),
        ] {
            let e = yaml_to_json(&deep).unwrap_err().to_string();
            assert!(e.contains("nested deeper than 128"), "{e}");
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        let ok = format!(
            "kind: Pod\nx: {}1{}\nm: 'a [ b' # [ [\nn: \"[[\"",
            "[".repeat(100),
            "]".repeat(100)
        );
        assert!(yaml_to_json(&ok).unwrap().starts_with(b"{"));
        assert_eq!(flow_depth(&ok, 1000), 100);
    }

    #[test]
    fn recognizes_pasted_text() {
        assert!(unreadable_text("Events:\n  Type  Reason  Age  From  Message\n").is_some());
        assert!(unreadable_text("  Type     Reason  Age  From  Message\n").is_some());
        assert!(unreadable_text("Normal    QuotaReserved   wl   Quota reserved\n").is_some());
        assert!(unreadable_text("kind: Pod\n").is_none());
        assert!(unreadable_text("Name: x\nAPI Version: v1\n").is_some());
    }
}

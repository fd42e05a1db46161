//! Record accounting for line formats (kernel logs, Prometheus text): a record is one
//! line of a file, or a whole Kafka message that may hold many lines.

use whyslow_schemas::{DeadLetter, Part};

use crate::decode::{Format, Origin, Output};

/// Decodes one record line by line with `each` (which returns whether the line became
/// rows, or why it could not be read) and accounts for it once:
/// - one line: produced, skipped, or rejected with its reason;
/// - several lines (a Kafka message): produced if any line became rows, each unreadable
///   line then going to `dead_letters` on its own as `<origin> line N`; rejected whole if
///   lines failed and none became rows; else skipped.
///
/// Bytes that are not UTF-8 are rejected whole.
pub fn decode_lines(
    bytes: &[u8],
    origin: &Origin<'_>,
    format: Format,
    out: &mut Output,
    mut each: impl FnMut(&str, &mut Output) -> Result<bool, String>,
) {
    out.begin_record();
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let why = format!(
                "{origin}: not UTF-8 text (invalid byte at offset {})",
                e.valid_up_to()
            );
            out.reject(origin, format, &why, bytes);
            return;
        }
    };
    let body = text.trim_end_matches(['\n', '\r']);
    let mut errors: Vec<(usize, usize, String)> = Vec::new();
    let mut rows = false;
    let mut lines = 0usize;
    let mut at = 0usize;
    for raw in body.split('\n') {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        match each(line, out) {
            Ok(r) => rows |= r,
            Err(e) => errors.push((lines, at, e)),
        }
        lines += 1;
        at += raw.len() + 1;
    }
    if errors.is_empty() {
        if rows {
            out.produced();
        } else {
            out.skip();
        }
        return;
    }
    if lines == 1 || !rows {
        let (n, _, e) = &errors[0];
        let why = if lines == 1 {
            format!("{origin}: {e}")
        } else {
            format!(
                "{origin}: no line became a row; {} of {lines} unreadable, first line {}: {e}",
                errors.len(),
                n + 1
            )
        };
        out.reject(origin, format, &why, bytes);
        return;
    }
    for (n, start, e) in &errors {
        let line = body[*start..].split('\n').next().unwrap_or("");
        let part = Part::Line(*n as u64 + 1);
        let error = format!("{origin} {part}: {e}");
        out.dead.append(&DeadLetter {
            part: Some(part),
            ..DeadLetter::whole(*origin, format.name(), &error, line.as_bytes())
        });
    }
    out.produced();
}

//! What a store location (`--store`) names: a local directory, or a `file://` URL of one.
//! Any other URL is refused in one sentence before anything is created, so that
//! `--store s3://bucket/prefix` never quietly becomes a local directory named `s3:`.

use std::path::{Path, PathBuf};

use super::StoreError;

/// The local directory `location` names.
pub fn local_root(location: &Path) -> Result<PathBuf, StoreError> {
    let Some(text) = location.to_str() else {
        return Ok(location.to_path_buf());
    };
    match url_scheme(text) {
        None => Ok(location.to_path_buf()),
        Some(("file", rest)) if rest.starts_with('/') => Ok(PathBuf::from(rest)),
        Some((scheme, _)) => Err(StoreError::UnsupportedLocation {
            location: text.to_string(),
            scheme: scheme.to_string(),
        }),
    }
}

/// `scheme` and the rest after `scheme://`, where the scheme follows RFC 3986
/// (a letter, then letters, digits, `+`, `-` or `.`).
fn url_scheme(text: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some((scheme, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_and_file_urls_are_local() {
        for (given, root) in [
            ("./whyslow-data", "./whyslow-data"),
            ("/data/store", "/data/store"),
            ("relative/a:b", "relative/a:b"),
            ("odd/dir://x", "odd/dir://x"),
            ("file:///data/store", "/data/store"),
        ] {
            assert_eq!(
                local_root(Path::new(given)).unwrap(),
                PathBuf::from(root),
                "{given}"
            );
        }
    }

    #[test]
    fn other_urls_are_refused_naming_the_scheme() {
        for (given, scheme) in [
            ("s3://bucket/prefix", "s3"),
            ("gs://bucket/prefix", "gs"),
            ("hdfs://namenode/x", "hdfs"),
            ("file://host/x", "file"),
        ] {
            let e = local_root(Path::new(given)).unwrap_err();
            assert!(
                matches!(&e, StoreError::UnsupportedLocation { scheme: s, .. } if s == scheme),
                "{given}: {e}"
            );
            assert!(e.to_string().contains(given), "{e}");
        }
    }
}

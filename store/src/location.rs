//! What a store location (`--store`) names: a local directory (or a `file://` URL of one),
//! or a prefix in an object store bucket (`s3://bucket/prefix`, `gs://bucket/prefix`),
//! reached through object_store with the credentials and endpoint of the usual
//! environment variables (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, …,
//! `GOOGLE_SERVICE_ACCOUNT`, …). Any other URL is refused in one sentence before
//! anything is created, so that `--store hdfs://x` never quietly becomes a local
//! directory named `hdfs:`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use object_store::path::Path as ObjectPath;
use object_store::{ClientConfigKey, ObjectStore, RetryConfig};
use url::Url;

use super::StoreError;

/// Where a store keeps its files.
#[derive(Clone, Debug)]
pub enum Root {
    /// An absolute local directory.
    Local(PathBuf),
    /// A prefix in an object store bucket.
    Remote(Arc<Remote>),
}

/// A store in an object store bucket.
pub struct Remote {
    /// `scheme://bucket/prefix`, without a trailing slash.
    pub url: Url,
    /// `scheme://bucket`: what DataFusion registers the bucket under.
    pub bucket_url: Url,
    /// The bucket.
    pub store: Arc<dyn ObjectStore>,
    /// The prefix inside the bucket (empty for the bucket's root).
    pub prefix: ObjectPath,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("url", &self.url.as_str())
            .finish()
    }
}

impl Root {
    /// The root `location` names: a local directory made absolute, or an object store
    /// prefix whose client is built from the environment (nothing is contacted yet).
    pub fn parse(location: &Path) -> Result<Root, StoreError> {
        Root::parse_with(location, &[])
    }

    /// [`parse`](Self::parse) with object store options given here (the names of the
    /// environment variables, `AWS_ENDPOINT_URL`…, or object_store's keys) on top of the
    /// environment's.
    pub fn parse_with(location: &Path, options: &[(String, String)]) -> Result<Root, StoreError> {
        let local = local_root(location);
        let remote = match local {
            Ok(dir) => {
                let dir =
                    std::path::absolute(&dir).map_err(|e| StoreError::io("resolve", &dir, e))?;
                return Ok(Root::Local(dir));
            }
            Err(StoreError::UnsupportedLocation { location, scheme })
                if matches!(scheme.as_str(), "s3" | "s3a" | "gs") =>
            {
                (location, scheme)
            }
            Err(e) => return Err(e),
        };
        if !options.is_empty() {
            return Ok(Root::Remote(Arc::new(Remote::build(
                &remote.0, &remote.1, options,
            )?)));
        }
        // One client per bucket location for the process (its connections are reused by
        // every open: the stream worker opens the store at every micro-batch).
        static CLIENTS: std::sync::LazyLock<
            std::sync::Mutex<std::collections::HashMap<String, Arc<Remote>>>,
        > = std::sync::LazyLock::new(Default::default);
        let mut clients = CLIENTS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(r) = clients.get(&remote.0) {
            return Ok(Root::Remote(r.clone()));
        }
        let built = Arc::new(Remote::build(&remote.0, &remote.1, &[])?);
        clients.insert(remote.0.clone(), built.clone());
        Ok(Root::Remote(built))
    }

    /// How the root is shown and joined with relative paths: the directory, or the URL
    /// as a path (`s3://bucket/prefix`).
    pub fn display_path(&self) -> PathBuf {
        match self {
            Root::Local(dir) => dir.clone(),
            Root::Remote(r) => PathBuf::from(r.url.as_str()),
        }
    }

    /// The remote store, if the root is one.
    pub fn remote(&self) -> Option<&Arc<Remote>> {
        match self {
            Root::Local(_) => None,
            Root::Remote(r) => Some(r),
        }
    }
}

impl Remote {
    fn build(
        location: &str,
        scheme: &str,
        options: &[(String, String)],
    ) -> Result<Remote, StoreError> {
        let bad = |detail: String| StoreError::BadLocation {
            location: location.to_string(),
            detail,
        };
        let url = Url::parse(location.trim_end_matches('/')).map_err(|e| bad(e.to_string()))?;
        let bucket = url
            .host_str()
            .filter(|b| !b.is_empty())
            .ok_or_else(|| bad("it names no bucket".into()))?
            .to_string();
        let prefix = ObjectPath::from_url_path(url.path()).map_err(|e| bad(e.to_string()))?;
        let bucket_url =
            Url::parse(&format!("{scheme}://{bucket}")).map_err(|e| bad(e.to_string()))?;
        // A few quick retries: an unreachable endpoint or refused credentials are told in
        // seconds, while a transient error of a reachable bucket is still ridden out.
        let retry = RetryConfig {
            max_retries: 4,
            retry_timeout: Duration::from_secs(60),
            ..RetryConfig::default()
        };
        let connect_timeout = ClientConfigKey::ConnectTimeout;
        let store: Arc<dyn ObjectStore> = match scheme {
            "gs" => Arc::new(
                configured(
                    object_store::gcp::GoogleCloudStorageBuilder::from_env(),
                    options,
                    |b, k, v| b.with_config(k, v),
                )
                .map_err(bad)?
                .with_bucket_name(&bucket)
                .with_retry(retry)
                .with_config(
                    object_store::gcp::GoogleConfigKey::Client(connect_timeout),
                    "5s",
                )
                .build()
                .map_err(|e| bad(e.to_string()))?,
            ),
            _ => Arc::new(
                configured(
                    object_store::aws::AmazonS3Builder::from_env(),
                    options,
                    |b, k, v| b.with_config(k, v),
                )
                .map_err(bad)?
                .with_bucket_name(&bucket)
                .with_retry(retry)
                .with_config(
                    object_store::aws::AmazonS3ConfigKey::Client(connect_timeout),
                    "5s",
                )
                .build()
                .map_err(|e| bad(e.to_string()))?,
            ),
        };
        Ok(Remote {
            url,
            bucket_url,
            store,
            prefix,
        })
    }

    /// The object at `rel` (a path relative to the store root).
    pub fn object(&self, rel: &str) -> ObjectPath {
        let mut parts: Vec<&str> = self.prefix.as_ref().split('/').collect();
        parts.extend(rel.split('/'));
        ObjectPath::from_iter(parts.into_iter().filter(|p| !p.is_empty()))
    }

    /// `rel` relative to the store root, for an object of the bucket inside the store.
    pub fn relative<'a>(&self, object: &'a ObjectPath) -> Option<&'a str> {
        let full = object.as_ref();
        let prefix = self.prefix.as_ref();
        if prefix.is_empty() {
            return Some(full);
        }
        full.strip_prefix(prefix)?.strip_prefix('/')
    }
}

/// `builder` with each of `options` set through `set`, names parsed as object_store's
/// configuration keys (or the environment variables' names), case-insensitively.
fn configured<B, K>(
    builder: B,
    options: &[(String, String)],
    set: impl Fn(B, K, &str) -> B,
) -> Result<B, String>
where
    K: std::str::FromStr<Err = object_store::Error>,
{
    options.iter().try_fold(builder, |b, (k, v)| {
        let key = k
            .to_ascii_lowercase()
            .parse()
            .map_err(|e| format!("option {k}: {e}"))?;
        Ok(set(b, key, v))
    })
}

/// The local directory `location` names; a URL of another kind is refused, naming its
/// scheme (also for `s3://` and `gs://`, which [`Root::parse`] accepts).
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
            assert!(
                matches!(Root::parse(Path::new(given)).unwrap(), Root::Local(d) if d.is_absolute())
            );
        }
    }

    #[test]
    fn other_urls_are_refused_naming_the_scheme() {
        for (given, scheme) in [
            ("hdfs://namenode/x", "hdfs"),
            ("file://host/x", "file"),
            ("abfs://c/x", "abfs"),
        ] {
            let e = Root::parse(Path::new(given)).unwrap_err();
            assert!(
                matches!(&e, StoreError::UnsupportedLocation { scheme: s, .. } if s == scheme),
                "{given}: {e}"
            );
            assert!(e.to_string().contains(given), "{e}");
        }
    }

    #[test]
    fn bucket_urls_name_objects_under_their_prefix() {
        let root = Root::parse(Path::new("s3://bucket/some/prefix/")).unwrap();
        let r = root.remote().unwrap();
        assert_eq!(r.url.as_str(), "s3://bucket/some/prefix");
        assert_eq!(r.bucket_url.as_str(), "s3://bucket");
        let o = r.object("events/date=2026-12-01/a.parquet");
        assert_eq!(o.as_ref(), "some/prefix/events/date=2026-12-01/a.parquet");
        assert_eq!(r.relative(&o), Some("events/date=2026-12-01/a.parquet"));
        assert_eq!(
            root.display_path(),
            PathBuf::from("s3://bucket/some/prefix")
        );
        let bare = Root::parse(Path::new("gs://b")).unwrap();
        let r = bare.remote().unwrap();
        assert_eq!(r.object("x/y").as_ref(), "x/y");
        assert_eq!(r.relative(&ObjectPath::from("x/y")), Some("x/y"));
        let e = Root::parse(Path::new("s3:///prefix")).unwrap_err();
        assert!(e.to_string().contains("bucket"), "{e}");
    }
}

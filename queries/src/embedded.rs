//! The `.sql` files of `queries/sql/`, embedded at build time (see `build.rs`).

include!(concat!(env!("OUT_DIR"), "/sql_files.rs"));

/// The text of the embedded file at `path` under `queries/sql/` (`views/timeline.sql`).
pub fn sql_file(path: &str) -> Option<&'static str> {
    SQL_FILES
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, text)| *text)
}

/// The embedded files directly in one directory (`views`, `incidents`,
/// `causes/infrastructure`, ...), as (name without `.sql`, text), in name order.
pub fn sql_dir(dir: &str) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
    SQL_FILES.iter().filter_map(move |(p, text)| {
        let name = p
            .strip_prefix(dir)?
            .strip_prefix('/')?
            .strip_suffix(".sql")?;
        (!name.contains('/')).then_some((name, *text))
    })
}

/// The named incident query `name` (`node_window` or `node_window.sql`), if embedded.
pub fn incident_query(name: &str) -> Option<&'static str> {
    let name = name.strip_suffix(".sql").unwrap_or(name);
    sql_dir("incidents")
        .find(|(n, _)| *n == name)
        .map(|(_, text)| text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on_disk(dir: &std::path::Path, rel: &str, out: &mut Vec<String>) {
        for f in std::fs::read_dir(dir).unwrap().flatten() {
            let name = f.file_name().to_string_lossy().into_owned();
            let child = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            if f.path().is_dir() {
                on_disk(&f.path(), &child, out);
            } else if name.ends_with(".sql") && !rel.is_empty() {
                out.push(child);
            }
        }
    }

    #[test]
    fn every_file_on_disk_is_embedded() {
        let mut files = Vec::new();
        on_disk(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sql"),
            "",
            &mut files,
        );
        files.sort();
        let embedded: Vec<&str> = SQL_FILES.iter().map(|(p, _)| *p).collect();
        assert_eq!(embedded, files);
        assert!(sql_dir("views").count() > 0);
        assert!(incident_query("node_window").is_some());
        assert_eq!(
            incident_query("node_window.sql"),
            sql_file("incidents/node_window.sql")
        );
    }
}

//! Embeds every `.sql` file under `sql/` (at any depth) in the library, so the binary
//! finds its views and named queries from any working directory.

use std::fmt::Write as _;
use std::path::Path;
use std::{env, fs};

/// Collects `(path relative to sql/, absolute path)` of the `.sql` files under `dir`.
fn collect(dir: &Path, rel: &str, files: &mut Vec<(String, String)>) {
    // A new or removed file changes the directory's mtime: rebuild then.
    println!("cargo:rerun-if-changed={}", dir.display());
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let child = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if path.is_dir() {
            collect(&path, &child, files);
        } else if name.ends_with(".sql") && !rel.is_empty() {
            files.push((child, path.display().to_string()));
        }
    }
}

fn main() {
    let manifest = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let mut files = Vec::new();
    collect(&Path::new(&manifest).join("sql"), "", &mut files);
    files.sort();
    let mut out =
        String::from("/// Every embedded `.sql` file: (path under `queries/sql/`, text).\n");
    out.push_str("pub static SQL_FILES: &[(&str, &str)] = &[\n");
    for (rel, abs) in &files {
        writeln!(out, "    ({rel:?}, include_str!({abs:?})),").expect("writing to a String");
    }
    out.push_str("];\n");
    let dest = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("sql_files.rs");
    fs::write(dest, out).expect("OUT_DIR is writable");
}

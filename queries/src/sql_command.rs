//! `whyslow sql`: one query, a query file, or an interactive prompt, over a store.

use std::io::Write;
use std::path::{Path, PathBuf};

use datafusion::execution::context::SessionContext;
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use crate::embedded::{incident_query, sql_dir};
use crate::error::QueryError;
use crate::output::{OutputFormat, write_output};
use crate::params::Params;
use crate::session::run_read_only;
use crate::store_source::open_session_limited;

/// The arguments of `whyslow sql`.
#[derive(Debug, Clone, Default)]
pub struct SqlCommand {
    /// The store directory.
    pub store: PathBuf,
    /// SQL text (one or more statements).
    pub query: Option<String>,
    /// A named query of `queries/sql/incidents/` (`node_window`) or a path to a `.sql` file.
    pub file: Option<String>,
    /// `NAME=VALUE` parameters, bound as `$NAME`.
    pub params: Vec<String>,
    /// `table`, `csv` or `json`.
    pub format: OutputFormat,
    /// The most memory (bytes) a query's pool may hold (`None`: no limit).
    pub memory_limit: Option<usize>,
}

/// The default `--memory-limit`: 4 GiB.
pub const DEFAULT_MEMORY_LIMIT: usize = 4 << 30;

/// A size as `--memory-limit` takes it: bytes, or a number with `K`/`M`/`G`/`T` (or
/// `KiB`/`MiB`/`GiB`/`TiB`, `KB`/`MB`/`GB`/`TB`: all powers of 1024).
pub fn parse_size(s: &str) -> Result<usize, QueryError> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => u32::MAX,
    };
    num.parse::<usize>()
        .ok()
        .filter(|n| *n > 0 && shift < 64)
        .and_then(|n| n.checked_mul(1usize.checked_shl(shift)?))
        .ok_or_else(|| {
            QueryError::Usage(format!(
                "--memory-limit '{s}': expected a size like 4GiB, 512MiB or a number of bytes"
            ))
        })
}

/// Runs `whyslow sql`: the query or file, printing each statement's result to `out`;
/// with neither, an interactive prompt on the terminal.
pub fn run_sql(cmd: &SqlCommand, out: &mut dyn Write) -> Result<(), QueryError> {
    let format = cmd.format;
    let params = Params::parse(&cmd.params)?;
    let sql = match (&cmd.query, &cmd.file) {
        (Some(_), Some(_)) => {
            return Err(QueryError::Usage(
                "give a QUERY or -f FILE, not both".into(),
            ));
        }
        (Some(q), None) => Some(q.clone()),
        (None, Some(f)) => Some(resolve_file(f)?),
        (None, None) => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| QueryError::io("starting the query runtime", e))?;
    runtime.block_on(async {
        let ctx = open_session_limited(&cmd.store, cmd.memory_limit).await?;
        match sql {
            Some(sql) => run_and_print(&ctx, &sql, &params, format, out).await,
            None => interactive(&ctx, &params, format).await,
        }
    })
}

/// The SQL of `-f NAME`: an embedded incident query when NAME is one (with or without
/// `.sql`) and has no `/`, else the file at that path.
pub fn resolve_file(name: &str) -> Result<String, QueryError> {
    if !name.contains('/')
        && let Some(sql) = incident_query(name)
    {
        return Ok(sql.to_string());
    }
    let path = Path::new(name);
    if path.is_file() {
        return std::fs::read_to_string(path)
            .map_err(|e| QueryError::io(format!("reading {name}"), e));
    }
    let known: Vec<&str> = sql_dir("incidents").map(|(n, _)| n).collect();
    Err(QueryError::Usage(format!(
        "-f {name}: no such file and no named query of that name (named queries: {})",
        known.join(", ")
    )))
}

async fn run_and_print(
    ctx: &SessionContext,
    sql: &str,
    params: &Params,
    format: OutputFormat,
    out: &mut dyn Write,
) -> Result<(), QueryError> {
    let results = run_read_only(ctx, sql, params).await?;
    for (i, r) in results.iter().enumerate() {
        if i > 0 && format == OutputFormat::Table {
            writeln!(out).map_err(|e| QueryError::io("writing the result", e))?;
        }
        write_output(out, r, format)?;
    }
    Ok(())
}

fn history_path() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".whyslow_sql_history"))
}

const HELP: &str = "End a statement with ';' (it may span lines). \\d lists tables and views, \
\\d NAME describes one, \\q quits. Named queries: whyslow sql -f NAME.";

/// What a line typed at the prompt asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptInput {
    /// Nothing yet: the statement goes on (or the line was empty).
    More,
    /// Run this SQL (a statement ended by `;`, or what a `\d` command stands for).
    Run(String),
    /// Print the help.
    Help,
    /// Leave the prompt.
    Quit,
}

/// Collects prompt lines into statements: a statement may span lines and ends with a line
/// ending in `;`. At the start of a statement, `\q` / `quit` / `exit` quit, `\d` lists
/// the tables and views, `\d NAME` describes one, any other `\` command asks for help.
#[derive(Debug, Default)]
pub struct StatementBuffer {
    text: String,
}

impl StatementBuffer {
    /// Whether no statement is in progress.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Drops the statement in progress (Ctrl-C).
    pub fn clear(&mut self) {
        self.text.clear();
    }

    /// Takes one line.
    pub fn feed(&mut self, line: &str) -> PromptInput {
        let trimmed = line.trim();
        if self.text.is_empty() {
            if trimmed.is_empty() {
                return PromptInput::More;
            }
            if let Some(meta) = trimmed.strip_prefix('\\') {
                return match meta.split_whitespace().collect::<Vec<_>>().as_slice() {
                    ["q"] => PromptInput::Quit,
                    ["d"] => PromptInput::Run(
                        "SELECT table_name, table_type FROM information_schema.tables \
                         WHERE table_schema = 'public' ORDER BY table_name"
                            .to_string(),
                    ),
                    ["d", name] => PromptInput::Run(format!("DESCRIBE {name}")),
                    _ => PromptInput::Help,
                };
            }
            if matches!(trimmed, "quit" | "exit") {
                return PromptInput::Quit;
            }
        }
        self.text.push_str(line);
        self.text.push('\n');
        if trimmed.ends_with(';') {
            PromptInput::Run(std::mem::take(&mut self.text))
        } else {
            PromptInput::More
        }
    }
}

/// The prompt: see [`StatementBuffer`]; errors are printed and the prompt goes on.
async fn interactive(
    ctx: &SessionContext,
    params: &Params,
    format: OutputFormat,
) -> Result<(), QueryError> {
    let mut editor = DefaultEditor::new()
        .map_err(|e| QueryError::io("starting the prompt", std::io::Error::other(e)))?;
    let history = history_path();
    if let Some(h) = &history {
        // A missing history file is normal on first use.
        let _ = editor.load_history(h);
    }
    let stdout = std::io::stdout();
    let mut buffer = StatementBuffer::default();
    loop {
        let prompt = if buffer.is_empty() {
            "whyslow> "
        } else {
            "     ... "
        };
        let line = match editor.readline(prompt) {
            Ok(l) => l,
            Err(ReadlineError::Interrupted) => {
                buffer.clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                return Err(QueryError::io(
                    "reading the prompt",
                    std::io::Error::other(e),
                ));
            }
        };
        match buffer.feed(&line) {
            PromptInput::More => {}
            PromptInput::Help => eprintln!("{HELP}"),
            PromptInput::Quit => break,
            PromptInput::Run(sql) => {
                // History keeps what was typed; a `\d` is kept as typed too.
                let typed = if line.trim().starts_with('\\') {
                    line.trim()
                } else {
                    sql.trim()
                };
                let _ = editor.add_history_entry(typed);
                report(run_and_print(ctx, &sql, params, format, &mut stdout.lock()).await);
            }
        }
    }
    if let Some(h) = &history {
        // Losing the history is not worth failing the session over.
        let _ = editor.save_history(h);
    }
    Ok(())
}

fn report(r: Result<(), QueryError>) {
    if let Err(e) = r {
        eprintln!("error: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("4GiB").unwrap(), 4 << 30);
        assert_eq!(parse_size("512M").unwrap(), 512 << 20);
        assert_eq!(parse_size("1048576").unwrap(), 1 << 20);
        for bad in ["", "0", "x", "4 PB", "-1G", "99999999999999999999T"] {
            assert!(parse_size(bad).unwrap_err().is_usage(), "{bad}");
        }
    }

    /// A query whose working set passes the limit fails with one clear sentence naming
    /// the flag, instead of taking the machine's memory.
    #[test]
    fn a_query_over_the_memory_limit_fails_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let cmd = SqlCommand {
            store: dir.path().to_path_buf(),
            query: Some(
                "SELECT v, count(*) FROM generate_series(1, 300000) t(v) GROUP BY v ORDER BY v DESC LIMIT 1"
                    .into(),
            ),
            format: "csv".parse().unwrap(),
            memory_limit: Some(64 * 1024),
            ..SqlCommand::default()
        };
        let e = run_sql(&cmd, &mut Vec::new()).unwrap_err();
        assert!(matches!(e, QueryError::MemoryLimit(_)), "{e}");
        assert!(e.to_string().contains("raise --memory-limit"), "{e}");
        // The same query runs within the default limit.
        let mut out = Vec::new();
        let ok = SqlCommand {
            memory_limit: Some(DEFAULT_MEMORY_LIMIT),
            ..cmd
        };
        run_sql(&ok, &mut out).unwrap();
        assert!(String::from_utf8(out).unwrap().contains("300000"));
    }

    /// Text a query builds itself (`repeat`, `lpad`), which DataFusion's pool does not
    /// track, is held to the same limit.
    #[test]
    fn a_huge_built_string_is_refused_by_the_default_limit() {
        let dir = tempfile::tempdir().unwrap();
        let cmd = SqlCommand {
            store: dir.path().to_path_buf(),
            query: Some("SELECT length(repeat('x', 2000000000))".into()),
            format: "csv".parse().unwrap(),
            memory_limit: Some(DEFAULT_MEMORY_LIMIT),
            ..SqlCommand::default()
        };
        let e = run_sql(&cmd, &mut Vec::new()).unwrap_err();
        assert!(matches!(e, QueryError::MemoryLimit(_)), "{e}");
        assert!(e.to_string().contains("repeat() would build"), "{e}");
    }

    #[test]
    fn statements_span_lines_and_end_with_a_semicolon() {
        let mut b = StatementBuffer::default();
        assert_eq!(b.feed(""), PromptInput::More);
        assert_eq!(b.feed("SELECT count(*)"), PromptInput::More);
        assert!(!b.is_empty());
        assert_eq!(
            b.feed("  FROM events;  "),
            PromptInput::Run("SELECT count(*)\n  FROM events;  \n".into())
        );
        assert!(b.is_empty());
        assert_eq!(b.feed("SELECT 1;"), PromptInput::Run("SELECT 1;\n".into()));
        // Inside a statement, \q and quit are just text.
        assert_eq!(b.feed("SELECT"), PromptInput::More);
        assert_eq!(b.feed("quit"), PromptInput::More);
        b.clear();
        assert!(b.is_empty());
    }

    #[test]
    fn backslash_commands_at_the_start_of_a_statement() {
        let mut b = StatementBuffer::default();
        assert_eq!(b.feed("\\q"), PromptInput::Quit);
        assert_eq!(b.feed("exit"), PromptInput::Quit);
        assert_eq!(
            b.feed("\\d events"),
            PromptInput::Run("DESCRIBE events".into())
        );
        assert!(
            matches!(b.feed("\\d"), PromptInput::Run(s) if s.contains("information_schema.tables"))
        );
        assert_eq!(b.feed("\\?"), PromptInput::Help);
        assert!(b.is_empty());
    }

    #[test]
    fn named_queries_resolve_before_paths() {
        assert!(resolve_file("node_window").unwrap().contains("$node"));
        assert!(resolve_file("node_window.sql").unwrap().contains("$node"));
        assert!(resolve_file("./no/such.sql").unwrap_err().is_usage());
    }
}

//! Command-line flags of `contracts/cli.md` and their dispatch to the library crates.

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};

/// A flag that takes one of `names` (listed in `--help`; any other is a usage error),
/// read into `T` by its `FromStr`: the names are the library type's own.
fn one_of<T>(names: impl IntoIterator<Item = &'static str>) -> impl TypedValueParser<Value = T>
where
    T: std::str::FromStr + Clone + Send + Sync + 'static,
    T::Err: std::error::Error + Send + Sync + 'static,
{
    PossibleValuesParser::new(names).try_map(|s| s.parse::<T>())
}

/// An input format flag: the names of [`whyslow_ingest::Format::ALL`].
fn input_format() -> impl TypedValueParser<Value = whyslow_ingest::Format> {
    one_of(whyslow_ingest::Format::ALL.map(whyslow_ingest::Format::name))
}

/// Why did this ML workload slow down? Cross-layer root causes from an Arrow/Parquet event log.
#[derive(Debug, Parser)]
#[command(name = "whyslow", version, about)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    /// More logging on stderr (-v info, -vv debug); `WHYSLOW_LOG` overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Log lines as `text` or `json` (one object a line, for log collectors).
    #[arg(
        long,
        global = true,
        env = "WHYSLOW_LOG_FORMAT",
        default_value = "text",
        value_parser = ["text", "json"]
    )]
    pub log_format: String,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every command takes.
#[derive(Debug, Args)]
pub struct Global {
    /// The store directory (created on first write).
    #[arg(
        long,
        global = true,
        env = "WHYSLOW_STORE",
        default_value = "./whyslow-data"
    )]
    pub store: PathBuf,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Batch-ingest files, directories (recursively) or stdin (`-`) into the store.
    Ingest(IngestArgs),
    /// A Kafka ingest worker: a consumer-group member that runs until SIGINT/SIGTERM.
    Stream(StreamArgs),
    /// Ad hoc SQL over the store; with no QUERY and no -f, an interactive prompt.
    Sql(SqlArgs),
    /// The root-cause report for the selected workloads and window.
    Report(ReportArgs),
    /// Ingest the bundled seed scenario into a temporary store and print its report.
    Demo,
    /// Rebuild everything derived from the raw log and retry dead letters.
    Replay(ReplayArgs),
}

#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Files, directories (read recursively) or `-` for stdin; plain or gzip.
    #[arg(required = true)]
    pub paths: Vec<String>,
    /// The input format (auto detects it per file, and per record in mixed streams).
    #[arg(long, default_value = "auto", value_parser = input_format())]
    pub format: whyslow_ingest::Format,
    #[command(flatten)]
    pub hints: HintArgs,
    /// Never draw a progress bar, even on a terminal.
    #[arg(long)]
    pub no_progress: bool,
}

/// `whyslow stream`: the worker's own flags (defined once, by the library's
/// [`whyslow_ingest::stream::StreamOptions`]) and those of its live analyzer.
#[derive(Debug, Args)]
pub struct StreamArgs {
    #[command(flatten)]
    pub worker: whyslow_ingest::stream::StreamOptions,
    /// Publish each incident (the report's slowdown objects) to this topic.
    #[arg(long, env = "WHYSLOW_INCIDENTS_TOPIC", help_heading = LIVE)]
    pub incidents_topic: Option<String>,
    /// Run this command with the incident JSON on stdin when an incident opens or its
    /// verdict changes: a shell command (`sh -c`) or a JSON array of arguments run
    /// without a shell (`["/hook","--page"]`); a failure is logged, never blocks ingest.
    #[arg(long, env = "WHYSLOW_ON_INCIDENT", help_heading = LIVE)]
    pub on_incident: Option<String>,
    /// Fire and resolve incidents as alerts in this Alertmanager (its base URL, e.g.
    /// http://alertmanager.monitoring:9093; the v2 API).
    #[arg(long, value_name = "URL", env = "WHYSLOW_ALERTMANAGER", help_heading = LIVE)]
    pub alertmanager: Option<String>,
    /// How far back from the newest data the live analyzers look after each commit
    /// (e.g. 24h, 6h); `off` runs no live analysis.
    // `std::option::Option`: the parser's None (`off`), not an optional flag.
    #[arg(
        long,
        env = "WHYSLOW_ANALYSIS_WINDOW",
        default_value = "24h",
        value_parser = analysis_window,
        help_heading = LIVE
    )]
    pub analysis_window: std::option::Option<std::time::Duration>,
    /// The most of the wall time the live analyzer spends analyzing (0 < share <= 1):
    /// after an analysis it rests so that it takes no more, leaving the CPU to ingest
    /// (1: analyses back to back).
    #[arg(
        long,
        env = "WHYSLOW_ANALYSIS_SHARE",
        default_value_t = whyslow_analyzers::live::runner::DEFAULT_BUSY_SHARE,
        value_parser = analysis_share,
        help_heading = LIVE
    )]
    pub analysis_share: f64,
}

/// `--analysis-share`: a number in (0, 1].
fn analysis_share(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 1.0 => Ok(v),
        _ => Err(format!(
            "{s} is no share of the time: a number above 0 and at most 1"
        )),
    }
}

/// The `--help` heading of the live analyzer's flags.
const LIVE: &str = "Live analysis";

/// `--analysis-window`: a duration, or `off` (also `none`) for no live analysis.
fn analysis_window(
    s: &str,
) -> Result<Option<std::time::Duration>, whyslow_ingest::stream::OptionError> {
    match s.trim() {
        "off" | "none" => Ok(None),
        window => whyslow_ingest::stream::parse_duration(window).map(Some),
    }
}

#[derive(Debug, Args)]
pub struct SqlArgs {
    /// The query; omit it (and -f) for an interactive prompt.
    pub query: Option<String>,
    /// Run a named query from queries/ or any .sql path.
    #[arg(short = 'f', long = "file")]
    pub file: Option<String>,
    /// Bind a parameter: NAME=VALUE, used as $NAME in the query. Repeatable.
    #[arg(long = "param")]
    pub params: Vec<String>,
    /// Output format: json is one array, ndjson one object per line.
    #[arg(long, default_value = "table", value_parser = one_of::<whyslow_queries::OutputFormat>(whyslow_queries::OutputFormat::NAMES))]
    pub format: whyslow_queries::OutputFormat,
    /// The most memory a query may hold for sorts, aggregations and joins (e.g. 4GiB,
    /// 512MiB); past it a query spills to disk or fails with a clear message.
    #[arg(long = "memory-limit", default_value = "4GiB", value_parser = whyslow_queries::parse_size)]
    pub memory_limit: usize,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[arg(long)]
    pub workload: Option<String>,
    #[arg(long)]
    pub namespace: Option<String>,
    #[arg(long)]
    pub run: Option<String>,
    /// Window start (RFC 3339 or relative, e.g. -2h).
    #[arg(long, allow_hyphen_values = true, value_parser = cli_time)]
    pub from: Option<i64>,
    /// Window end (RFC 3339 or relative).
    #[arg(long, allow_hyphen_values = true, value_parser = cli_time)]
    pub to: Option<i64>,
    /// The report's format (html: one self-contained file).
    #[arg(long, default_value = "md", value_parser = one_of::<whyslow_analyzers::report::Format>(whyslow_analyzers::report::Format::NAMES))]
    pub format: whyslow_analyzers::report::Format,
    /// Write to this file instead of stdout.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Also save the verdicts into the store's slowdowns and causes tables (the whole
    /// store only; written only when they changed, as `replay` does). Without it the
    /// report only reads the store.
    #[arg(long, conflicts_with_all = ["workload", "namespace", "run", "from", "to"])]
    pub persist: bool,
}

/// What decoders cannot read from a record itself (ingest and replay).
#[derive(Debug, Args)]
pub struct HintArgs {
    /// The node for records that do not name one (kernel logs, scrapes).
    #[arg(long)]
    pub node: Option<String>,
    /// The cluster to stamp on rows that carry none.
    #[arg(long)]
    pub cluster: Option<String>,
    /// Namespace for plain `kubectl logs` output.
    #[arg(long)]
    pub namespace: Option<String>,
    /// Pod for plain `kubectl logs` output, and for a serving engine's scrapes that name none.
    #[arg(long)]
    pub pod: Option<String>,
    /// Time for records that carry none (RFC 3339 or relative, e.g. -2h).
    #[arg(long, allow_hyphen_values = true, value_parser = cli_time)]
    pub time: Option<i64>,
    /// Boot time for kernel records stamped relative to boot (RFC 3339 or relative).
    #[arg(long, allow_hyphen_values = true, value_parser = cli_time)]
    pub boot_time: Option<i64>,
}

impl HintArgs {
    /// The decoder hints.
    fn into_hints(self) -> whyslow_ingest::decode::Hints {
        whyslow_ingest::decode::Hints {
            path: None,
            node: self.node,
            namespace: self.namespace,
            pod: self.pod,
            cluster: self.cluster,
            default_time_ns: self.time,
            boot_time_ns: self.boot_time,
            record_time_ns: None,
        }
    }
}

/// A time flag (`--from`, `--to`, `--time`, `--boot-time`): RFC 3339 or relative to now
/// (e.g. -2h), in nanoseconds since the epoch.
fn cli_time(s: &str) -> Result<i64, BadCliTime> {
    whyslow_schemas::time::parse_cli_time(s, whyslow_schemas::time::now_ns()).map_err(BadCliTime)
}

/// A time flag's value that is no time.
#[derive(Debug, thiserror::Error)]
#[error("{0} (expected RFC 3339 or relative like -2h)")]
struct BadCliTime(#[source] whyslow_schemas::time::BadTime);

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Only retry dead letters; leave slowdowns and causes as they are.
    #[arg(long, conflicts_with = "derived_only")]
    pub dead_letters_only: bool,
    /// Only rebuild slowdowns and causes; leave dead letters as they are.
    #[arg(long)]
    pub derived_only: bool,
    /// Retry every dead letter with this format instead of its own (e.g. auto, after an
    /// ingest with the wrong --format).
    #[arg(long, value_parser = input_format())]
    pub retry_format: Option<whyslow_ingest::Format>,
    /// Retry only the dead letters whose source starts with this (a file, a directory, a
    /// topic), e.g. to give one node's kernel log its --boot-time.
    #[arg(long)]
    pub source: Option<String>,
    /// The decoder hints, as for ingest (applied to every letter retried).
    #[command(flatten)]
    pub hints: HintArgs,
}

/// Why a command failed. Every usage error (clap's and the library crates' alike) is
/// [`Error::Usage`]: exit code 2; the rest are failures: exit code 1. A library crate's
/// error becomes one or the other as it converts (its `is_usage`), keeping its chain.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The command line asks for something impossible.
    #[error(transparent)]
    Usage(Box<dyn std::error::Error + Send + Sync>),
    /// Ingesting, reading the store or running a stream worker failed.
    #[error(transparent)]
    Ingest(whyslow_ingest::Error),
    /// A query failed.
    #[error(transparent)]
    Queries(whyslow_queries::Error),
    /// Analyzing, reporting, replaying or publishing incidents failed.
    #[error(transparent)]
    Analyzers(whyslow_analyzers::Error),
    /// The async runtime could not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// Inputs of `whyslow ingest` could not be read (each is named on stderr).
    #[error("{0} input(s) could not be read; the others were ingested")]
    Unread(usize),
}

impl Error {
    /// A usage error saying `e`.
    pub fn usage(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Error::Usage(e.into())
    }

    /// Whether this is a usage error.
    pub fn is_usage(&self) -> bool {
        matches!(self, Error::Usage(_))
    }

    /// The exit code of `contracts/cli.md`: 2 for bad usage, else 1.
    pub fn exit_code(&self) -> u8 {
        if self.is_usage() { 2 } else { 1 }
    }
}

impl From<clap::Error> for Error {
    fn from(e: clap::Error) -> Self {
        Error::usage(CommandLine(e))
    }
}

impl From<whyslow_ingest::Error> for Error {
    fn from(e: whyslow_ingest::Error) -> Self {
        if e.is_usage() {
            Error::usage(e)
        } else {
            Error::Ingest(e)
        }
    }
}

impl From<whyslow_queries::Error> for Error {
    fn from(e: whyslow_queries::Error) -> Self {
        if e.is_usage() {
            Error::usage(e)
        } else {
            Error::Queries(e)
        }
    }
}

impl From<whyslow_analyzers::Error> for Error {
    fn from(e: whyslow_analyzers::Error) -> Self {
        if e.is_usage() {
            Error::usage(e)
        } else {
            Error::Analyzers(e)
        }
    }
}

/// `?` on a library module's error goes through its crate's error type, which tells
/// usage errors apart.
macro_rules! through_crate_error {
    ($krate:ty: $($module:ty),+) => {$(
        impl From<$module> for Error {
            fn from(e: $module) -> Self {
                <$krate>::from(e).into()
            }
        }
    )+};
}

through_crate_error!(whyslow_ingest::Error:
    whyslow_ingest::run::IngestError,
    whyslow_ingest::stream::StreamError,
    whyslow_ingest::stream::OptionError
);
through_crate_error!(whyslow_analyzers::Error:
    whyslow_analyzers::AnalyzeError,
    whyslow_analyzers::replay::ReplayError,
    whyslow_analyzers::live::alertmanager::AlertError
);

/// A command line clap refused, in one sentence: clap's first paragraph (what is wrong,
/// and the values that would do) on one line.
#[derive(Debug)]
pub struct CommandLine(clap::Error);

impl std::fmt::Display for CommandLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = self.0.render().to_string();
        let first = text.split("\n\n").next().unwrap_or_default();
        let sentence: Vec<&str> = first.lines().map(str::trim).collect();
        let sentence = sentence.join(" ");
        f.write_str(sentence.strip_prefix("error: ").unwrap_or(&sentence))
    }
}

impl std::error::Error for CommandLine {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// A multi-threaded runtime for the async library calls.
fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)
}

/// The commands' result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Runs the chosen command.
pub fn dispatch(cli: Cli) -> Result<()> {
    let store = cli.global.store;
    match cli.command {
        Command::Ingest(args) => ingest(store, args),
        Command::Stream(args) => stream(store, args),
        Command::Sql(a) => {
            let cmd = whyslow_queries::SqlCommand {
                store,
                query: a.query,
                file: a.file,
                params: a.params,
                format: a.format,
                memory_limit: Some(a.memory_limit),
            };
            Ok(whyslow_queries::run_sql(
                &cmd,
                &mut std::io::stdout().lock(),
            )?)
        }
        Command::Report(args) => report(store, args),
        Command::Demo => Ok(runtime()?.block_on(whyslow_analyzers::command::run_demo(
            &mut std::io::stdout().lock(),
        ))?),
        Command::Replay(args) => replay(store, args),
    }
}

/// `whyslow report`: analyzes the store (or the selection) and prints or writes the report.
fn report(store: PathBuf, args: ReportArgs) -> Result<()> {
    use whyslow_analyzers::command::{ReportRequest, run_report};
    let req = ReportRequest {
        store,
        selection: whyslow_analyzers::Selection {
            namespace: args.namespace,
            workload: args.workload,
            run_id: args.run,
            from_ns: args.from,
            to_ns: args.to,
        },
        format: args.format,
        output: args.output,
        persist: args.persist,
    };
    Ok(runtime()?.block_on(run_report(&req))?)
}

/// `whyslow replay`: retries dead letters, rebuilds slowdowns and causes, prints what changed.
fn replay(store: PathBuf, a: ReplayArgs) -> Result<()> {
    use whyslow_analyzers::replay::{ReplayRequest, render, replay as run_replay};
    let mut req = ReplayRequest::new(store);
    req.dead_letters = !a.derived_only;
    req.derived = !a.dead_letters_only;
    req.redecode.retry_format = a.retry_format;
    req.redecode.source_prefix = a.source;
    req.redecode.hints = a.hints.into_hints();
    let summary = runtime()?.block_on(run_replay(&req))?;
    print!("{}", render(&summary));
    Ok(())
}

fn stream(store: PathBuf, args: StreamArgs) -> Result<()> {
    use whyslow_analyzers::live::{LiveAnalyzer, LiveOptions};
    use whyslow_ingest::stream;
    let runtime = runtime()?;
    let shutdown = shutdown_signal(&runtime);
    let mut opts = args.worker;
    opts.store = store.clone();
    opts.read_kafka_config_file()?;
    let live: Option<Box<dyn stream::CommitObserver>> = match args.analysis_window {
        None => None,
        Some(window) => {
            let mut live = LiveOptions::new(store);
            live.window = window;
            live.busy_share = args.analysis_share;
            if let Some(command) = &args.on_incident {
                whyslow_analyzers::live::hook::argv(command).map_err(Error::usage)?;
            }
            live.on_incident = args.on_incident;
            live.alertmanager = args
                .alertmanager
                .as_deref()
                .map(whyslow_analyzers::live::alertmanager::Alertmanager::new)
                .transpose()?;
            live.publisher = match &args.incidents_topic {
                Some(topic) => Some(
                    whyslow_analyzers::live::publisher::IncidentPublisher::new(
                        &opts.brokers,
                        topic,
                        &opts.kafka_config,
                    )
                    .map_err(whyslow_analyzers::Error::from)?,
                ),
                None => None,
            };
            Some(Box::new(LiveAnalyzer::start(live)?))
        }
    };
    let summary = runtime.block_on(stream::run(
        opts,
        |format| Some(whyslow_ingest::decode::decoder_for(format)),
        live,
        shutdown,
    ))?;
    eprintln!(
        "whyslow stream: stopped after {} messages ({} redelivered and skipped): {} rows written, {} duplicate rows skipped, {} rejected to dead_letters, {} commits.",
        summary.messages,
        summary.redelivered,
        summary.rows_written,
        summary.duplicate_rows,
        summary.rejected,
        summary.commits
    );
    Ok(())
}

/// Takes over SIGINT and SIGTERM at once (called inside `runtime`), so that one arriving
/// while the worker is still starting stops it cleanly instead of killing it; the future
/// resolves on either.
fn shutdown_signal(
    runtime: &tokio::runtime::Runtime,
) -> impl std::future::Future<Output = ()> + use<> {
    use tokio::signal::unix::{SignalKind, signal};
    let handlers = {
        let _inside = runtime.enter();
        (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        )
    };
    async move {
        let (Ok(mut term), Ok(mut int)) = handlers else {
            // Without signal handlers the worker still stops on a kill; wait forever here.
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    }
}

/// `whyslow ingest`: prints the summary; inputs that could not be read are named on
/// stderr and make the exit code 1 after the others were ingested.
fn ingest(store: PathBuf, a: IngestArgs) -> Result<()> {
    use std::io::IsTerminal;
    use whyslow_ingest::run::IngestOptions;

    let mut opts = IngestOptions::new(store, a.paths, a.format);
    opts.hints = a.hints.into_hints();
    opts.progress = !a.no_progress && std::io::stderr().is_terminal();
    let summary = whyslow_ingest::run::ingest(&opts)?;
    print!("{}", summary.render());
    for f in &summary.failures {
        eprintln!("whyslow: {f}.");
    }
    match summary.failures.len() {
        0 => Ok(()),
        n => Err(Error::Unread(n)),
    }
}

/// The error as one sentence (each library error's message already names its cause);
/// a usage error points to `--help`.
pub fn one_sentence(e: &Error) -> String {
    let mut s = e.to_string();
    if e.is_usage() {
        s.push_str(" (see --help)");
    } else if !s.ends_with(['.', '?', '!']) {
        s.push('.');
    }
    s
}

/// The causes below `e`'s message that it does not already say, outermost first (for
/// `-v`).
pub fn causes(e: &Error) -> Vec<String> {
    let mut said = e.to_string();
    let mut out = Vec::new();
    let mut next = std::error::Error::source(e);
    while let Some(c) = next {
        let text = c.to_string();
        if !said.contains(&text) {
            said.push_str(&text);
            out.push(text);
        }
        next = c.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli> {
        Ok(Cli::try_parse_from(
            std::iter::once("whyslow").chain(args.iter().copied()),
        )?)
    }

    #[test]
    fn clap_and_library_usage_errors_are_one_kind() {
        let clap = parse(&["report", "--persist", "--namespace", "ml"]).unwrap_err();
        let time = parse(&["ingest", "--time", "yesterday", "x"]).unwrap_err();
        let query = Error::from(whyslow_queries::QueryError::Usage("no SQL".into()));
        let option = Error::from(whyslow_ingest::stream::OptionError::Property("x".into()));
        let url = Error::from(whyslow_analyzers::live::alertmanager::AlertError::Url(
            "ftp://x".into(),
        ));
        for e in [&clap, &time, &query, &option, &url] {
            assert_eq!(e.exit_code(), 2, "{e}");
            let s = one_sentence(e);
            assert!(s.ends_with(" (see --help)") && !s.contains('\n'), "{s}");
        }
        assert!(one_sentence(&time).contains("unreadable time 'yesterday'"));
    }

    #[test]
    fn failures_keep_their_chain() {
        let io = std::io::Error::other("disk gone");
        let store = whyslow_store::StoreError::Io {
            op: "read",
            path: "/s/_log".into(),
            source: io,
        };
        let e = Error::from(whyslow_analyzers::AnalyzeError::store(
            std::path::Path::new("/s"),
            store,
        ));
        assert_eq!(e.exit_code(), 1);
        assert_eq!(
            one_sentence(&e),
            "store /s: cannot read /s/_log: disk gone."
        );
        let mut chain = 0;
        let mut next = std::error::Error::source(&e);
        while let Some(c) = next {
            chain += 1;
            next = c.source();
        }
        assert!(chain >= 2, "the store error and its I/O error are kept");
        assert!(causes(&e).is_empty(), "the message already says them");
    }
}

//! Command-line flags of `contracts/cli.md` and their dispatch to the library crates.

use std::path::PathBuf;

use anyhow::Result;
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
    #[arg(long = "memory-limit", default_value = "4GiB")]
    pub memory_limit: String,
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
    #[arg(long, allow_hyphen_values = true)]
    pub from: Option<String>,
    /// Window end (RFC 3339 or relative).
    #[arg(long, allow_hyphen_values = true)]
    pub to: Option<String>,
    /// The report's format (html: one self-contained file).
    #[arg(long, default_value = "md", value_parser = one_of::<whyslow_analyzers::report::Format>(whyslow_analyzers::report::Format::NAMES))]
    pub format: whyslow_analyzers::report::Format,
    /// Write to this file instead of stdout.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Also save the verdicts into the store's slowdowns and causes tables (the whole
    /// store only; written only when they changed, as `replay` does). Without it the
    /// report only reads the store.
    #[arg(long)]
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
    /// Pod for plain `kubectl logs` output.
    #[arg(long)]
    pub pod: Option<String>,
    /// Time for records that carry none (RFC 3339 or relative, e.g. -2h).
    #[arg(long, allow_hyphen_values = true)]
    pub time: Option<String>,
    /// Boot time for kernel records stamped relative to boot (RFC 3339 or relative).
    #[arg(long, allow_hyphen_values = true)]
    pub boot_time: Option<String>,
}

impl HintArgs {
    /// The decoder hints, with the times parsed (relative ones against now).
    fn into_hints(self) -> Result<whyslow_ingest::decode::Hints> {
        let now = whyslow_ingest::time::now_ns();
        let time = |flag: &str, v: Option<String>| {
            v.map(|s| {
                whyslow_ingest::time::parse_cli_time(&s, now).map_err(|e| {
                    usage(format!(
                        "--{flag}: {e} (expected RFC 3339 or relative like -2h)"
                    ))
                })
            })
            .transpose()
        };
        Ok(whyslow_ingest::decode::Hints {
            path: None,
            node: self.node,
            namespace: self.namespace,
            pod: self.pod,
            cluster: self.cluster,
            default_time_ns: time("time", self.time)?,
            boot_time_ns: time("boot-time", self.boot_time)?,
            record_time_ns: None,
        })
    }
}

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

/// A usage error found after parsing (a bad time, format or parameter): exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Runs the chosen command.
pub fn dispatch(cli: Cli) -> Result<()> {
    let store = cli.global.store;
    match cli.command {
        Command::Ingest(args) => ingest(store, args),
        Command::Stream(args) => stream(store, args),
        Command::Sql(a) => {
            let usage = |e: whyslow_queries::QueryError| -> anyhow::Error {
                if e.is_usage() {
                    UsageError(e.to_string()).into()
                } else {
                    anyhow::Error::new(e)
                }
            };
            let memory_limit = whyslow_queries::parse_size(&a.memory_limit).map_err(usage)?;
            let cmd = whyslow_queries::SqlCommand {
                store,
                query: a.query,
                file: a.file,
                params: a.params,
                format: a.format,
                memory_limit: Some(memory_limit),
            };
            whyslow_queries::run_sql(&cmd, &mut std::io::stdout().lock()).map_err(usage)
        }
        Command::Report(args) => report(store, args),
        Command::Demo => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            runtime.block_on(whyslow_analyzers::command::run_demo(
                &mut std::io::stdout().lock(),
            ))?;
            Ok(())
        }
        Command::Replay(args) => replay(store, args),
    }
}

/// `whyslow report`: analyzes the store (or the selection) and prints or writes the report.
fn report(store: PathBuf, args: ReportArgs) -> Result<()> {
    use whyslow_analyzers::command::{ReportRequest, run_report};
    let bad = |e: &dyn std::fmt::Display| anyhow::Error::new(UsageError(e.to_string()));
    let now = chrono::Utc::now().timestamp_nanos_opt().unwrap_or(i64::MAX);
    let time = |t: &Option<String>| -> Result<Option<i64>> {
        t.as_deref()
            .map(|t| whyslow_ingest::time::parse_cli_time(t, now).map_err(|e| bad(&e)))
            .transpose()
    };
    let selection = whyslow_analyzers::Selection {
        namespace: args.namespace,
        workload: args.workload,
        run_id: args.run,
        from_ns: time(&args.from)?,
        to_ns: time(&args.to)?,
    };
    let persist = args.persist;
    if persist && selection != whyslow_analyzers::Selection::default() {
        return Err(bad(
            &"--persist saves the analysis of the whole store: drop --workload, --namespace, \
              --run, --from and --to",
        ));
    }
    let req = ReportRequest {
        store,
        selection,
        format: args.format,
        output: args.output,
        persist,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run_report(&req))?;
    Ok(())
}

/// `whyslow replay`: retries dead letters, rebuilds slowdowns and causes, prints what changed.
fn replay(store: PathBuf, a: ReplayArgs) -> Result<()> {
    use whyslow_analyzers::replay::{ReplayRequest, render, replay as run_replay};
    let mut req = ReplayRequest::new(store);
    req.dead_letters = !a.derived_only;
    req.derived = !a.dead_letters_only;
    req.redecode.retry_format = a.retry_format;
    req.redecode.source_prefix = a.source;
    req.redecode.hints = a.hints.into_hints()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let summary = runtime.block_on(run_replay(&req))?;
    print!("{}", render(&summary));
    Ok(())
}

fn usage<E: std::fmt::Display>(e: E) -> anyhow::Error {
    UsageError(e.to_string()).into()
}

fn stream(store: PathBuf, args: StreamArgs) -> Result<()> {
    use whyslow_analyzers::live::{LiveAnalyzer, LiveOptions};
    use whyslow_ingest::stream;
    let mut opts = args.worker;
    opts.store = store.clone();
    opts.read_kafka_config_file().map_err(usage)?;
    let live: Option<Box<dyn stream::CommitObserver>> = match args.analysis_window {
        None => None,
        Some(window) => {
            let mut live = LiveOptions::new(store);
            live.window = window;
            if let Some(command) = &args.on_incident {
                whyslow_analyzers::live::hook::argv(command).map_err(usage)?;
            }
            live.on_incident = args.on_incident;
            live.alertmanager = args
                .alertmanager
                .as_deref()
                .map(whyslow_analyzers::live::alertmanager::Alertmanager::new)
                .transpose()
                .map_err(usage)?;
            live.publisher = match &args.incidents_topic {
                Some(topic) => Some(whyslow_analyzers::live::publisher::IncidentPublisher::new(
                    &opts.brokers,
                    topic,
                    &opts.kafka_config,
                )?),
                None => None,
            };
            Some(Box::new(LiveAnalyzer::start(live)?))
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let summary = runtime.block_on(stream::run(
        opts,
        |format| whyslow_ingest::run::decoder_for(format).ok(),
        live,
        shutdown_signal(),
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

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        // Without signal handlers the worker still stops on a kill; wait forever here.
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

/// `whyslow ingest`: prints the summary; inputs that could not be read are named on
/// stderr and make the exit code 1 after the others were ingested.
fn ingest(store: PathBuf, a: IngestArgs) -> Result<()> {
    use std::io::IsTerminal;
    use whyslow_ingest::run::{IngestError, IngestOptions};

    let mut opts = IngestOptions::new(store, a.paths, a.format);
    opts.hints = a.hints.into_hints()?;
    opts.progress = !a.no_progress && std::io::stderr().is_terminal();
    let summary = whyslow_ingest::run::ingest(&opts).map_err(|e| match e {
        IngestError::Unsupported(_) => anyhow::Error::new(UsageError(e.to_string())),
        e => anyhow::Error::new(e),
    })?;
    print!("{}", summary.render());
    for f in &summary.failures {
        eprintln!("whyslow: {f}.");
    }
    match summary.failures.len() {
        0 => Ok(()),
        n => anyhow::bail!("{n} input(s) could not be read; the others were ingested"),
    }
}

/// Exit code of `contracts/cli.md` for an error: 2 for bad usage, else 1.
pub fn exit_code(e: &anyhow::Error) -> u8 {
    if e.chain().any(|c| c.is::<UsageError>()) {
        2
    } else {
        1
    }
}

/// The error as one sentence: its own message and, where the cause adds something,
/// the cause after a colon.
pub fn one_sentence(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in e.chain() {
        let s = c.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    let mut s = parts.join(": ");
    if !s.ends_with(['.', '?', '!']) {
        s.push('.');
    }
    s
}

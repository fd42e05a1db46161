//! The `whyslow` binary: parses arguments and dispatches to the library crates.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = match cli::Cli::try_parse() {
        Ok(a) => a,
        Err(e) if e.use_stderr() => {
            // A usage error in one sentence, like every other (exit 2): clap's first
            // paragraph (what is wrong, and the values that would do) on one line.
            let text = e.render().to_string();
            let first = text.split("\n\n").next().unwrap_or_default();
            let sentence: Vec<&str> = first.lines().map(str::trim).collect();
            let sentence = sentence.join(" ");
            let sentence = sentence.strip_prefix("error: ").unwrap_or(&sentence);
            eprintln!("whyslow: {sentence} (see --help)");
            return ExitCode::from(2);
        }
        Err(e) => {
            // Help and version, to stdout.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
    };
    init_tracing(args.verbose, args.log_format == "json");
    match cli::dispatch(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let code = cli::exit_code(&e);
            eprintln!("whyslow: {}", cli::one_sentence(&e));
            ExitCode::from(code)
        }
    }
}

fn init_tracing(verbose: u8, json: bool) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("WHYSLOW_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let fmt = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if json {
        fmt.json()
            .flatten_event(true)
            .with_current_span(false)
            .init();
    } else {
        fmt.init();
    }
}

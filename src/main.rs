//! The `whyslow` binary: parses arguments and dispatches to the library crates.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = match cli::Cli::try_parse() {
        Ok(a) => a,
        Err(e) if e.use_stderr() => return fail(&cli::Error::from(e), 0),
        Err(e) => {
            // Help and version, to stdout.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
    };
    let verbose = args.verbose;
    init_tracing(verbose, args.log_format == "json");
    match cli::dispatch(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e, verbose),
    }
}

/// Every error, clap's included, ends here: one sentence on stderr (with `-v`, the causes
/// below it, one a line) and the exit code, 2 for a usage error and 1 for the rest.
fn fail(e: &cli::Error, verbose: u8) -> ExitCode {
    eprintln!("whyslow: {}", cli::one_sentence(e));
    if verbose > 0 {
        for cause in cli::causes(e) {
            eprintln!("  caused by: {cause}");
        }
    }
    ExitCode::from(e.exit_code())
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

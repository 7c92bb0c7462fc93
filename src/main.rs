//! `basalt [config-file] [--name value ...]`: starts the server.

use std::process::ExitCode;

/// mimalloc behind a counting switch (`basalt::allocs`).
#[global_allocator]
static ALLOCATOR: basalt::allocs::Counting = basalt::allocs::Counting;

fn main() -> ExitCode {
    basalt::allocs::configure();
    if std::env::var_os("BASALT_COUNT_ALLOCS").is_some_and(|v| v == "1") {
        basalt::allocs::enable();
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{}", basalt::config::help_text());
        return ExitCode::SUCCESS;
    }
    if args.iter().any(|a| a == "--version" || a == "-v") {
        println!("basalt {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    let config = match basalt::config::Config::from_args(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("basalt: {e}");
            return ExitCode::from(1);
        }
    };
    let level = match config.get("loglevel").as_str() {
        "debug" => tracing::Level::DEBUG,
        "verbose" => tracing::Level::INFO,
        "warning" | "nothing" => tracing::Level::WARN,
        _ => tracing::Level::INFO,
    };
    let logfile = config.get("logfile");
    let sub = tracing_subscriber::fmt().with_max_level(level).with_target(false);
    if logfile.is_empty() {
        // Colour codes only for a terminal: a log redirected to a file (as
        // `.ci/setup > log`) stays plain text.
        use std::io::IsTerminal;
        sub.with_ansi(std::io::stderr().is_terminal()).with_writer(std::io::stderr).init();
    } else {
        match std::fs::OpenOptions::new().create(true).append(true).open(&logfile) {
            Ok(f) => sub.with_ansi(false).with_writer(std::sync::Mutex::new(f)).init(),
            Err(e) => {
                eprintln!("basalt: cannot open logfile {logfile}: {e}");
                return ExitCode::from(1);
            }
        }
    }
    match basalt::server::run(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            ExitCode::from(1)
        }
    }
}

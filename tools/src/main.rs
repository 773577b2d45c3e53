//! The `ember` binary: the command line of `cli.rs`.

fn main() -> std::process::ExitCode {
    // Exit codes are 0, 2 or a runner process's (0..=255).
    std::process::ExitCode::from(u8::try_from(ember_tools::main(std::env::args_os())).unwrap_or(2))
}

//! wgnn-superres: not yet implemented; it lands with its own issue.

fn main() -> std::process::ExitCode {
    eprintln!("wgnn-superres: not yet implemented (see the README's status section)");
    std::process::ExitCode::from(2)
}

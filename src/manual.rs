//! The CLIs' manuals. Each program describes its EXAMPLES and EXIT STATUS
//! once, as [`Section`]s; `--help` ends with them (so it reads like the man
//! page), and `--generate man` renders the man page from the same clap
//! definition plus those sections, with FILES and ENVIRONMENT shared by all
//! three programs. `--generate bash|zsh|fish` prints a completion script.
//! The Debian package ships the generated pages (`dist/`, kept current by
//! `tests/cli/manual.rs`).

use std::io::{self, Write};

use clap::ValueEnum;
use clap_mangen::roff::{bold, roman, Roff};

/// What `--generate` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Generate {
    /// The manual page (roff, for man(1)).
    Man,
    /// A bash completion script.
    Bash,
    /// A zsh completion script.
    Zsh,
    /// A fish completion script.
    Fish,
}

/// One entry of a section: a term (a command line, a code, a variable)
/// with what it means, or a paragraph.
pub enum Item {
    Entry(&'static str, &'static str),
    Para(&'static str),
}

/// The exit codes wgnn-selfie and wgnn-superres share.
pub const EXIT_DONE: Item = Item::Entry("0", "Done.");
pub const EXIT_PIPELINE: Item = Item::Entry("1", "The pipeline failed.");
pub const EXIT_USAGE: Item = Item::Entry(
    "2",
    "Bad command line: a flag's value, the output's name or folder, -o naming the input.",
);
pub const EXIT_NO_GPU: Item = Item::Entry("4", "No GPU, with --device gpu.");

/// A man-page section after OPTIONS.
pub struct Section {
    pub title: &'static str,
    pub items: &'static [Item],
}

const FILES: Section = Section {
    title: "FILES",
    items: &[
        Item::Para(
            "Bundled models, model-procs and the sample media are read from the first of \
             these folders that exists:",
        ),
        Item::Entry("$WGNN_ASSETS_DIR", "when set (see ENVIRONMENT)."),
        Item::Entry(
            "PREFIX/share/wgnn",
            "beside the installed program (PREFIX/bin) or plugin \
             (PREFIX/lib/[TRIPLET/]gstreamer-1.0): /usr/share/wgnn for the Debian package, \
             the --prefix folder of cargo cinstall.",
        ),
        Item::Entry(
            "assets/",
            "in the source tree the program was built from (not installed).",
        ),
        Item::Entry(
            "$XDG_DATA_HOME/wgnn, $XDG_DATA_DIRS/wgnn",
            "~/.local/share/wgnn, /usr/local/share/wgnn, /usr/share/wgnn by default.",
        ),
        Item::Para(
            "The folder holds models/ (each with its LICENSE and PROVENANCE) and samples/. \
             The GStreamer plugin libgstwgnn.so lives in the system plugin folder \
             (/usr/lib/TRIPLET/gstreamer-1.0 for the Debian package); the programs carry \
             the same elements built in and need no plugin path.",
        ),
    ],
};

const ENVIRONMENT: Section = Section {
    title: "ENVIRONMENT",
    items: &[
        Item::Entry(
            "WGNN_ASSETS_DIR",
            "The folder of bundled models and samples, instead of the installed one.",
        ),
        Item::Entry(
            "RUST_LOG",
            "wgnn's own log (error, warn, info, debug); warn by default.",
        ),
        Item::Entry(
            "GST_DEBUG",
            "GStreamer's log; each element has its own category (wgnnsegment:5).",
        ),
        Item::Entry(
            "VK_DRIVER_FILES",
            "Which Vulkan driver manifests the loader reads, e.g. to pick a GPU's ICD.",
        ),
    ],
};

/// The sections every program ends with, after its own.
pub const COMMON: [&Section; 2] = [&FILES, &ENVIRONMENT];

/// The text `--help` ends with: the program's sections, then the common ones.
pub fn help(own: &[&Section]) -> String {
    let mut out = String::new();
    for section in own.iter().chain(COMMON.iter()) {
        out.push_str(section.title);
        out.push_str(":\n");
        for item in section.items {
            match item {
                Item::Entry(term, text) => {
                    // A short term (an exit code) shares its first line, as
                    // man's tagged paragraphs do.
                    let lines = wrap(text, 72);
                    let mut rest = lines.iter();
                    if term.len() <= 4 {
                        let first = rest.next().map(String::as_str).unwrap_or_default();
                        out.push_str(&format!("  {term:<4}{first}\n"));
                    } else {
                        out.push_str(&format!("  {term}\n"));
                    }
                    for line in rest {
                        out.push_str(&format!("      {line}\n"));
                    }
                }
                Item::Para(text) => {
                    for line in wrap(text, 78) {
                        out.push_str(&format!("  {line}\n"));
                    }
                }
            }
        }
        out.push('\n');
    }
    out.trim_end().to_string()
}

fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().unwrap();
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(word.to_string());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines
}

/// Prints what `--generate` asked for about `cmd` (the program's whole clap
/// definition) to `out`.
pub fn generate(
    what: Generate,
    mut cmd: clap::Command,
    own: &[&Section],
    out: &mut dyn Write,
) -> io::Result<()> {
    let name = cmd.get_name().to_string();
    let shell = match what {
        Generate::Man => return man_page(cmd, own, out),
        Generate::Bash => clap_complete::Shell::Bash,
        Generate::Zsh => clap_complete::Shell::Zsh,
        Generate::Fish => clap_complete::Shell::Fish,
    };
    // clap_complete panics when its writer fails (a closed pipe): it writes
    // into memory, and only this write_all meets standard output.
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, name, &mut buf);
    out.write_all(&buf)
}

/// `--generate`: prints to standard output. Exit status 0, or 1 when it
/// cannot be written.
pub fn print(what: Generate, cmd: clap::Command, own: &[&Section]) -> std::process::ExitCode {
    let name = cmd.get_name().to_string();
    let mut out = io::stdout().lock();
    match generate(what, cmd, own, &mut out).and_then(|()| out.flush()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: cannot write to standard output: {e}");
            std::process::ExitCode::from(1)
        }
    }
}

fn man_page(cmd: clap::Command, own: &[&Section], out: &mut dyn Write) -> io::Result<()> {
    let mut page = Vec::new();
    man_sections(cmd, own, &mut page)?;
    // clap_mangen starts each section it renders alone with the same
    // quote-character preamble; one at the top is enough.
    let page = String::from_utf8_lossy(&page);
    let preamble = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";
    let body = page.replace(preamble, "");
    out.write_all(preamble.as_bytes())?;
    out.write_all(body.as_bytes())
}

fn man_sections(cmd: clap::Command, own: &[&Section], out: &mut dyn Write) -> io::Result<()> {
    // The sections are rendered below as roff; --help's plain-text copy of
    // them would otherwise come out again, reflowed, as "EXTRA".
    let cmd = cmd
        .after_long_help(None::<&'static str>)
        .after_help(None::<&'static str>);
    let version = cmd.get_version().unwrap_or_default().to_string();
    let man = clap_mangen::Man::new(cmd.clone())
        .source(format!("wgnn {version}"))
        .manual("User Commands");
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    if cmd.has_subcommands() {
        man.render_subcommands_section(out)?;
    }
    let mut roff = Roff::default();
    for section in own.iter().chain(COMMON.iter()) {
        roff.control("SH", [section.title]);
        for item in section.items {
            match item {
                Item::Entry(term, text) => {
                    roff.control("TP", []);
                    roff.text([bold(*term)]);
                    roff.text([roman(*text)]);
                }
                Item::Para(text) => {
                    roff.control("PP", []);
                    roff.text([roman(*text)]);
                }
            }
        }
    }
    roff.control("SH", ["SEE ALSO"]);
    roff.text([roman(
        "wgnn-selfie(1), wgnn-superres(1), wgnn-bench(1), gst-inspect-1.0(1) wgnn, \
         gst-launch-1.0(1)",
    )]);
    roff.to_writer(out)?;
    man.render_version_section(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_text_wraps_and_keeps_every_section() {
        const OWN: Section = Section {
            title: "EXAMPLES",
            items: &[Item::Entry("prog --flag", "does a thing")],
        };
        let text = help(&[&OWN]);
        assert!(
            text.starts_with("EXAMPLES:\n  prog --flag\n      does a thing\n"),
            "{text}"
        );
        for title in ["FILES:", "ENVIRONMENT:", "WGNN_ASSETS_DIR"] {
            assert!(text.contains(title), "{title} missing: {text}");
        }
        assert!(text.lines().all(|l| l.len() <= 80), "{text}");
    }
}

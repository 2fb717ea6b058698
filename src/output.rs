//! Output helpers shared by every command: the one table preset, the JSON writer,
//! stdout writing, the stdin-from-a-terminal hint, and how bytes, milliseconds and
//! percentages are shown.
//!
//! Formatting lives here so that a figure reads the same wherever it appears; what to
//! show stays with the domain renderers (`plan::render`, `bench::report`,
//! `probe::render`).

use std::io::Write;

use comfy_table::{ContentArrangement, Table, presets::ASCII_MARKDOWN};
use serde::Serialize;
use unicode_width::UnicodeWidthStr;

const MIB: f64 = 1024.0 * 1024.0;

/// The width human output is laid out for when nothing says otherwise: stdout is a pipe
/// or a file, and no `COLUMNS` is set.
pub const DEFAULT_WIDTH: usize = 80;

/// The narrowest width honoured; a smaller `COLUMNS` or terminal is laid out at this.
pub const MIN_WIDTH: usize = 40;

/// The one width every table, wrapped note and `--help` is laid out for: `COLUMNS` when
/// it holds a number, else the terminal's width when stdout is a terminal, else
/// [`DEFAULT_WIDTH`]; never under [`MIN_WIDTH`].
pub fn width() -> usize {
    let columns = std::env::var("COLUMNS").ok();
    let terminal = terminal_size::terminal_size_of(std::io::stdout()).map(|(w, _)| w.0 as usize);
    width_from(columns.as_deref(), terminal)
}

/// [`width`] from its inputs: the `COLUMNS` variable and the terminal's width (`None`
/// when stdout is not a terminal).
pub fn width_from(columns: Option<&str>, terminal: Option<usize>) -> usize {
    let columns = columns
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0);
    columns
        .or(terminal.filter(|&t| t > 0))
        .unwrap_or(DEFAULT_WIDTH)
        .max(MIN_WIDTH)
}

/// Columns `text` takes on a terminal (wide characters count two).
pub fn display_width(text: &str) -> usize {
    UnicodeWidthStr::width(text)
}

/// `text` word-wrapped to `width` columns, one string per line: the first line begins
/// with `first`, the others with `rest` (a hanging indent). The text is escaped first
/// ([`cell`]: a newline in it is shown as `\n`, so it cannot start a line of its own),
/// so what is measured is what the terminal shows; a word wider than the room left is
/// cut at the width, so no line is ever wider.
pub fn wrap(text: &str, width: usize, first: &str, rest: &str) -> Vec<String> {
    wrap_units(cell(text).split_whitespace(), width, first, rest)
}

/// `units` laid out as words of a line wrapped to `width` columns (see [`wrap`]); a unit
/// (`--flag value`, `"key":value,`) moves to the next line whole unless it alone is
/// wider than the room. The units are shown as given: escape input text first.
pub fn wrap_units<'a>(
    units: impl IntoIterator<Item = &'a str>,
    width: usize,
    first: &str,
    rest: &str,
) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = first.to_string();
    let mut empty = true;
    for unit in units {
        if !empty && display_width(&line) + 1 + display_width(unit) <= width {
            line.push(' ');
            line.push_str(unit);
            continue;
        }
        if !empty {
            lines.push(std::mem::replace(&mut line, rest.to_string()));
        }
        let mut unit = unit;
        while display_width(&line) + display_width(unit) > width {
            let room = width.saturating_sub(display_width(&line));
            let (head, tail) = split_at_width(unit, room);
            line.push_str(head);
            lines.push(std::mem::replace(&mut line, rest.to_string()));
            unit = tail;
        }
        line.push_str(unit);
        empty = false;
    }
    if !empty || lines.is_empty() {
        lines.push(line.trim_end().to_string());
    }
    lines
}

/// `text` cut after at most `room` columns (at least one character, so a cut always
/// makes progress).
fn split_at_width(text: &str, room: usize) -> (&str, &str) {
    let mut used = 0;
    for (i, c) in text.char_indices() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w > room && i > 0 {
            return text.split_at(i);
        }
        used += w;
    }
    (text, "")
}

/// [`wrap`] joined into lines that each end in a newline.
pub fn wrapped(text: &str, width: usize, first: &str, rest: &str) -> String {
    let mut out = String::new();
    for line in wrap(text, width, first, rest) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// A bulleted note (`  - text`) wrapped to `width` with a hanging indent.
pub fn bullet(text: &str, width: usize) -> String {
    wrapped(text, width, "  - ", "    ")
}

/// The stderr line for `-` (read `what` from stdin) when stdin is a terminal, where the
/// read would otherwise wait with nothing said; `None` for a pipe or a file.
pub fn stdin_terminal_hint(what: &str, is_terminal: bool) -> Option<String> {
    is_terminal.then(|| {
        format!("edgeplan: reading {what} from stdin, a terminal: paste, then press Ctrl-D")
    })
}

/// Prints [`stdin_terminal_hint`] for the process's stdin.
pub fn hint_if_stdin_is_terminal(what: &str) {
    use std::io::IsTerminal;
    if let Some(line) = stdin_terminal_hint(what, std::io::stdin().is_terminal()) {
        eprintln!("{line}");
    }
}

/// A new table in the crate's one preset (Markdown-compatible ASCII), laid out for
/// [`width`]: cells wrap at spaces when the table would be wider (a word wider than its
/// column is cut). Cell text from inputs must be escaped first ([`cell`]), so the width
/// measured is the width shown.
pub fn table() -> Table {
    table_at(width())
}

/// [`table`] laid out for `width` columns.
pub fn table_at(width: usize) -> Table {
    let mut table = Table::new();
    table.load_style(ASCII_MARKDOWN);
    table.set_content_arrangement(ContentArrangement::Dynamic);
    table.set_width(u16::try_from(width).unwrap_or(u16::MAX));
    table
}

/// Human text (a table, a report) made safe for a terminal: every control character,
/// C1 control and bidi override from the inputs shown escaped, the text's own newlines
/// and tabs kept ([`crate::sanitize::escape`]). Every table goes through this or
/// [`Terminal`].
pub fn terminal_text(text: &str) -> String {
    crate::sanitize::escape(text, true)
}

/// A table cell or a label that must stay on one line: newlines escaped too.
pub fn cell(text: &str) -> String {
    crate::sanitize::escape(text, false)
}

/// A writer that passes human text through [`terminal_text`] on its way to `W`. Bytes
/// of a character split across two writes are held until the rest arrives; bytes that
/// are not UTF-8 at all are shown as `\x{..}`.
pub struct Terminal<W: Write> {
    inner: W,
    pending: Vec<u8>,
}

impl<W: Write> Terminal<W> {
    pub fn new(inner: W) -> Terminal<W> {
        Terminal {
            inner,
            pending: Vec::new(),
        }
    }
}

impl<W: Write> Write for Terminal<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(text) => {
                    out.push_str(&terminal_text(text));
                    self.pending.clear();
                    break;
                }
                Err(e) => {
                    let good = e.valid_up_to();
                    // The prefix up to `valid_up_to` is UTF-8 by definition.
                    out.push_str(&terminal_text(
                        std::str::from_utf8(&self.pending[..good]).unwrap_or_default(),
                    ));
                    match e.error_len() {
                        // An incomplete character at the end: wait for the rest.
                        None => {
                            self.pending.drain(..good);
                            break;
                        }
                        Some(bad) => {
                            for b in &self.pending[good..good + bad] {
                                out.push_str(&format!("\\x{{{b:02x}}}"));
                            }
                            self.pending.drain(..good + bad);
                        }
                    }
                }
            }
        }
        self.inner.write_all(out.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.pending.is_empty() {
            let rest = std::mem::take(&mut self.pending);
            let shown: String = rest.iter().map(|b| format!("\\x{{{b:02x}}}")).collect();
            self.inner.write_all(shown.as_bytes())?;
        }
        self.inner.flush()
    }
}

/// `value` as pretty JSON with a trailing newline.
pub fn json_text<T: Serialize + ?Sized>(value: &T) -> anyhow::Result<String> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    Ok(text)
}

/// Standard output whose write errors name it (`stdout: cannot write: No space left on
/// device`), as every error names its input or output; the error kind is kept, so a
/// closed pipe is still recognised (and treated as success by `main`).
pub struct Stdout(std::io::StdoutLock<'static>);

/// A buffered [`Stdout`]: what every command writes its data to.
pub fn stdout() -> std::io::BufWriter<Stdout> {
    std::io::BufWriter::new(Stdout(std::io::stdout().lock()))
}

fn named(err: std::io::Error) -> std::io::Error {
    std::io::Error::new(err.kind(), format!("stdout: cannot write: {err}"))
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf).map_err(named)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush().map_err(named)
    }
}

/// Writes `text` to stdout and flushes (a closed pipe surfaces as an error that `main`
/// treats as success).
pub fn print_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = stdout();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// A size for people: whole MiB below 1 GiB, else GiB with two decimals.
pub fn bytes(b: u64) -> String {
    let mib = b as f64 / MIB;
    if mib >= 1024.0 {
        format!("{:.2} GiB", mib / 1024.0)
    } else {
        format!("{mib:.0} MiB")
    }
}

/// GiB as a bare number with two decimals (a table column headed in GiB).
pub fn gib_number(b: u64) -> String {
    format!("{:.2}", b as f64 / (MIB * 1024.0))
}

/// GiB with one decimal, or `unknown` (the probe's table).
pub fn gib_short(b: Option<u64>) -> String {
    match b {
        Some(b) => format!("{:.1} GiB", b as f64 / (MIB * 1024.0)),
        None => "unknown".into(),
    }
}

/// GiB with two decimals plus the exact count (the memory fit, where the bytes matter).
pub fn gib_exact(b: u64) -> String {
    format!("{:.2} GiB ({b} B)", b as f64 / (MIB * 1024.0))
}

/// Milliseconds by magnitude: no decimals from 100, two from 1, else three.
pub fn ms(ms: f64) -> String {
    if ms >= 100.0 {
        format!("{ms:.0}")
    } else if ms >= 1.0 {
        format!("{ms:.2}")
    } else {
        format!("{ms:.3}")
    }
}

/// A percentage (82.4) with no decimals (`82%`); `-` when absent.
pub fn percent(p: Option<f64>) -> String {
    p.map_or_else(|| "-".to_string(), |p| format!("{p:.0}%"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_switch_from_mib_to_gib_at_one_gib() {
        assert_eq!(bytes(69 << 20), "69 MiB");
        assert_eq!(bytes((1 << 30) - (1 << 20)), "1023 MiB");
        assert_eq!(bytes(1 << 30), "1.00 GiB");
        assert_eq!(bytes(23 * (1 << 30) + (1 << 28)), "23.25 GiB");
        assert_eq!(bytes(32 * 1024 * 1024), "32 MiB");
        assert_eq!(bytes(3 * 1024 * 1024 * 1024 / 2), "1.50 GiB");
    }

    #[test]
    fn formats_milliseconds_by_magnitude() {
        assert_eq!(ms(123.4), "123");
        assert_eq!(ms(5.914), "5.91");
        assert_eq!(ms(0.0824), "0.082");
    }

    #[test]
    fn width_comes_from_columns_then_the_terminal_then_80() {
        assert_eq!(width_from(None, None), 80);
        assert_eq!(width_from(None, Some(132)), 132);
        assert_eq!(width_from(Some("100"), Some(132)), 100);
        assert_eq!(width_from(Some("wide"), Some(132)), 132);
        assert_eq!(width_from(Some("0"), None), 80);
        assert_eq!(width_from(Some("12"), None), MIN_WIDTH);
    }

    #[test]
    fn wrap_keeps_every_line_within_the_width_with_a_hanging_indent() {
        let text = "the W4A8 kernel itself can use zero points (mixed_precision/cpu.py:98 in vLLM 0.28) but stock vLLM refuses";
        let lines = wrap(text, 30, "  - ", "    ");
        assert_eq!(lines[0], "  - the W4A8 kernel itself can");
        assert!(
            lines[1..]
                .iter()
                .all(|l| l.starts_with("    ") && !l.starts_with("     "))
        );
        assert!(lines.iter().all(|l| display_width(l) <= 30), "{lines:#?}");
        assert_eq!(lines.join(" ").split_whitespace().collect::<Vec<_>>(), {
            let mut words = vec!["-"];
            words.extend(text.split_whitespace());
            words
        });
        // A word wider than the room is cut, never left wide.
        let long = wrap(&"x".repeat(75), 30, "", "  ");
        assert_eq!(long.len(), 3, "{long:?}");
        assert!(long.iter().all(|l| display_width(l) <= 30), "{long:?}");
        // Wide characters count two columns.
        let wide = wrap(&"漢字".repeat(20), 20, "", "");
        assert!(wide.iter().all(|l| display_width(l) <= 20), "{wide:?}");
        assert_eq!(wide.len(), 4);
        // Input cannot start a line of its own or reach the terminal raw.
        let evil = wrap("ok\nedgeplan: all passed \u{1b}[2J", 80, "", "");
        assert_eq!(evil, ["ok\\nedgeplan: all passed \\u{1b}[2J"]);
        // Units stay whole: a flag keeps its value.
        let flags = wrap_units(["--a 1", "--bb 22", "--ccc 333"], 16, "", "  ");
        assert_eq!(flags, ["--a 1 --bb 22", "  --ccc 333"]);
        assert_eq!(wrap("", 80, "  - ", "    "), ["  -"]);
    }

    #[test]
    fn tables_fit_the_width() {
        let mut t = table_at(40);
        t.set_header(vec!["key", "value"]);
        t.add_row(vec!["a", &"word ".repeat(30)]);
        t.add_row(vec!["b", &"y".repeat(90)]);
        let text = t.to_string();
        assert!(text.lines().all(|l| display_width(l) <= 40), "{text}");
        let mut narrow = table_at(80);
        narrow.set_header(vec!["a"]).add_row(vec!["b"]);
        assert!(
            narrow.to_string().starts_with("| a |"),
            "short tables stay short"
        );
    }

    #[test]
    fn percent_and_json_and_table() {
        assert_eq!(percent(Some(82.4)), "82%");
        assert_eq!(percent(None), "-");
        let mut out = Terminal::new(Vec::new());
        let text = "a\u{1b}]0;t\u{7}|\u{9b}|\u{202e}|é\n";
        for chunk in text.as_bytes().chunks(1) {
            out.write_all(chunk).unwrap();
        }
        out.write_all(&[0xff]).unwrap();
        out.flush().unwrap();
        assert_eq!(
            String::from_utf8(out.inner).unwrap(),
            "a\\u{1b}]0;t\\u{7}|\\u{9b}|\\u{202e}|é\n\\x{ff}"
        );
        assert_eq!(cell("rack\nFAIL"), "rack\\nFAIL");
        assert_eq!(stdin_terminal_hint("a profile", false), None);
        let hint = stdin_terminal_hint("a profile", true).expect("a terminal gets a hint");
        assert!(hint.contains("a profile") && hint.contains("Ctrl-D") && !hint.contains('\n'));
        assert_eq!(json_text(&[1]).unwrap(), "[\n  1\n]\n");
        let mut t = table();
        t.set_header(vec!["a"]).add_row(vec!["b"]);
        assert!(t.to_string().starts_with("| a |"), "{t}");
    }
}

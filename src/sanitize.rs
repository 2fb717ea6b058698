//! The one place text from inputs is made safe for a terminal: every profile, catalog,
//! manifest, model-config, `build.prop` or GPU-file string a table or a diagnostic shows
//! passes through [`escape`], so no input can send the terminal a control sequence (an
//! ESC sequence clearing the screen, setting the title or writing the clipboard with
//! OSC 52), a C1 control, or a bidi override that reorders what is shown, and a newline
//! in a label cannot forge a line of its own.
//!
//! What is escaped is shown as Rust writes it in a string (`\u{1b}`, `\n`), so it stays
//! visible and unambiguous. Machine formats (JSON, `env`, `args`, scripts) are not
//! passed through here: they carry values exactly, quoted or escaped by their own rules.

/// True for a character a terminal may act on rather than show: the C0 controls, DEL,
/// the C1 controls (U+0080 to U+009F), and the bidi marks, embeddings, overrides and
/// isolates (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069).
pub fn is_unsafe(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{61c}' | '\u{200e}' | '\u{200f}'
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every [`is_unsafe`] character escaped, except newlines and tabs when
/// `multi_line` (a table's own line breaks).
pub fn escape(text: &str, multi_line: bool) -> String {
    if !text.chars().any(is_unsafe) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' | '\t' if multi_line => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_unsafe(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_c1_and_bidi_are_shown_escaped() {
        assert_eq!(
            escape("a\u{1b}]52;c;eA==\u{7}b", false),
            "a\\u{1b}]52;c;eA==\\u{7}b"
        );
        assert_eq!(escape("x\u{9b}2J\u{7f}", false), "x\\u{9b}2J\\u{7f}");
        assert_eq!(
            escape("\u{202e}gpj.exe\u{2066}", false),
            "\\u{202e}gpj.exe\\u{2066}"
        );
        assert_eq!(escape("l1\nl2\r\tend", false), "l1\\nl2\\r\\tend");
        assert_eq!(escape("l1\nl2\r\tend", true), "l1\nl2\\r\tend");
        assert_eq!(escape("plain: ünïcode → ok", false), "plain: ünïcode → ok");
        for c in [
            '\u{0}', '\u{1b}', '\u{85}', '\u{9f}', '\u{202d}', '\u{2069}',
        ] {
            assert!(!escape(&c.to_string(), true).chars().any(is_unsafe));
        }
    }
}

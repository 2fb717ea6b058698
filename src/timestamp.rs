//! RFC 3339 UTC timestamps for saved measurements: when `bench --save` measured
//! (written), and how old a saved run is (read back by `plan`).
//!
//! A timestamp is whole seconds since the Unix epoch, written `YYYY-MM-DDTHH:MM:SSZ`.
//! The calendar arithmetic and the RFC 3339 grammar are `jiff`'s: reading accepts what
//! RFC 3339 allows for an instant (`Z` or a numeric offset, fractional seconds, which are
//! dropped); writing is always UTC with whole seconds.

use jiff::Timestamp;

/// Seconds since the Unix epoch now.
pub fn now_unix() -> i64 {
    Timestamp::now().as_second()
}

/// `unix` seconds as `YYYY-MM-DDTHH:MM:SSZ` (clamped to jiff's range, years -9999..=9999).
pub fn format_rfc3339(unix: i64) -> String {
    let ts = Timestamp::from_second(unix).unwrap_or(if unix < 0 {
        Timestamp::MIN
    } else {
        Timestamp::MAX
    });
    format!("{:.0}", ts)
}

/// Seconds since the Unix epoch of an RFC 3339 timestamp, or `None` when `text` is not one.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let t = text.trim();
    // jiff also reads RFC 9557 annotations (`[America/New_York]`) and other
    // ISO 8601 forms; a saved profile holds plain RFC 3339, so take only that shape.
    let date_time_sep = t.as_bytes().get(10).copied();
    if !matches!(date_time_sep, Some(b'T' | b't' | b' ')) || t.contains('[') {
        return None;
    }
    let normalized = if date_time_sep == Some(b' ') {
        format!("{}T{}", &t[..10], &t[11..])
    } else {
        t.to_string()
    };
    normalized
        .parse::<Timestamp>()
        .ok()
        .map(|ts| ts.as_second())
}

/// A duration in seconds as people say an age: `45 s`, `12 min`, `5 h`, `3 days`.
pub fn human_age(secs: i64) -> String {
    let a = secs.unsigned_abs();
    let text = if a < 120 {
        format!("{a} s")
    } else if a < 2 * 3600 {
        format!("{} min", a / 60)
    } else if a < 2 * 86_400 {
        format!("{} h", a / 3600)
    } else {
        format!("{} days", a / 86_400)
    };
    if secs < 0 {
        format!("{text} in the future")
    } else {
        format!("{text} ago")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Known instants: (Unix seconds, RFC 3339), from `date -u -d @N +%FT%TZ`.
    const KNOWN: &[(i64, &str)] = &[
        (0, "1970-01-01T00:00:00Z"),
        (-1, "1969-12-31T23:59:59Z"),
        (951_782_400, "2000-02-29T00:00:00Z"),
        (951_868_799, "2000-02-29T23:59:59Z"),
        (1_234_567_890, "2009-02-13T23:31:30Z"),
        (4_107_542_400, "2100-03-01T00:00:00Z"),
        (1_709_164_800, "2024-02-29T00:00:00Z"),
        (1_798_675_200, "2026-12-31T00:00:00Z"),
        (1_796_083_200, "2026-12-01T00:00:00Z"),
        (253_402_128_000, "9999-12-30T00:00:00Z"),
        (-62_135_596_800, "0001-01-01T00:00:00Z"),
    ];

    #[test]
    fn formats_and_parses_known_dates() {
        for &(unix, text) in KNOWN {
            assert_eq!(format_rfc3339(unix), text, "{unix}");
            assert_eq!(parse_rfc3339(text), Some(unix), "{text}");
        }
    }

    #[test]
    fn reads_offsets_fractions_and_lowercase() {
        let base = 1_234_567_890;
        assert_eq!(parse_rfc3339("2009-02-13T23:31:30.123456Z"), Some(base));
        assert_eq!(parse_rfc3339("2009-02-14T01:31:30+02:00"), Some(base));
        assert_eq!(parse_rfc3339("2009-02-13T18:31:30-05:00"), Some(base));
        assert_eq!(parse_rfc3339("2009-02-13t23:31:30z"), Some(base));
        assert_eq!(parse_rfc3339("2009-02-13 23:31:30Z"), Some(base));
        assert_eq!(parse_rfc3339(" 2009-02-13T23:31:30Z\n"), Some(base));
        // ISO 8601's offset without a colon is read too (lenient on input).
        assert_eq!(parse_rfc3339("2009-02-14T01:31:30+0200"), Some(base));
    }

    #[test]
    fn refuses_what_is_not_a_timestamp() {
        for bad in [
            "",
            "yesterday",
            "2009-02-13",
            "2009-02-13T23:31:30",
            "2009-02-13T23:31:30.Z",
            "2009-13-01T00:00:00Z",
            "2009-02-29T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "2009-02-13T24:00:00Z",
            "2009-02-13T23:60:00Z",
            "2009-2-13T23:31:30ZZ",
            "2009-02-13X23:31:30Z",
            "+009-02-13T23:31:30Z",
            "2009-02-13T23:31:30Zextra",
            "2009-02-13T23:31:3éZ",
            "2009-02-13T23:31:30Z[Europe/Paris]",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn now_formats_and_reads_back() {
        let now = now_unix();
        assert_eq!(parse_rfc3339(&format_rfc3339(now)), Some(now));
    }

    #[test]
    fn ages_read_as_people_say_them() {
        assert_eq!(human_age(45), "45 s ago");
        assert_eq!(human_age(12 * 60 + 5), "12 min ago");
        assert_eq!(human_age(5 * 3600), "5 h ago");
        assert_eq!(human_age(3 * 86_400 + 7), "3 days ago");
        assert_eq!(human_age(-3 * 3600), "3 h in the future");
    }
}

//! RFC 3339 UTC timestamps for saved measurements, with `std` only: when `bench --save`
//! measured (written), and how old a saved run is (read back by `plan`).
//!
//! A timestamp is whole seconds since the Unix epoch, written `YYYY-MM-DDTHH:MM:SSZ`.
//! The civil-date conversion is the days-from-civil / civil-from-days arithmetic of
//! Howard Hinnant's "chrono-Compatible Low-Level Date Algorithms" (proleptic Gregorian
//! calendar, 400-year eras); no time zones, no leap seconds (as Unix time has none).
//! Reading accepts what RFC 3339 allows for a UTC instant: `Z` or a numeric offset,
//! optional fractional seconds (dropped), `T`, `t` or a space between date and time.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch now (negative before 1970, which a sane clock never is).
pub fn now_unix() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    }
}

/// Days since 1970-01-01 of the civil date `y-m-d` (`m` 1-12, `d` 1-31).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400; // [0, 399]
    let mp = (m as i64 + 9) % 12; // March = 0
    let doy = (153 * mp + 2) / 5 + d as i64 - 1; // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    era * 146_097 + doe - 719_468
}

/// The civil date `(year, month, day)` of `days` since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097; // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11]
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// `unix` seconds as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn format_rfc3339(unix: i64) -> String {
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

fn digits(s: &str) -> Option<u32> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Seconds since the Unix epoch of an RFC 3339 timestamp, or `None` when `text` is not one.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let t = text.trim();
    if t.len() < 20 || !t.is_char_boundary(10) || !t.is_char_boundary(19) {
        return None;
    }
    let (date, rest) = t.split_at(10);
    let sep = rest.as_bytes()[0];
    if !matches!(sep, b'T' | b't' | b' ') {
        return None;
    }
    let (time, mut zone) = rest[1..].split_at(8);
    let mut dp = date.split('-');
    let (y, m, d) = (dp.next()?, dp.next()?, dp.next()?);
    if dp.next().is_some() || y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let (y, m, d) = (digits(y)? as i64, digits(m)?, digits(d)?);
    if !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) {
        return None;
    }
    let mut tp = time.split(':');
    let (hh, mm, ss) = (tp.next()?, tp.next()?, tp.next()?);
    if tp.next().is_some() || hh.len() != 2 || mm.len() != 2 || ss.len() != 2 {
        return None;
    }
    let (hh, mm, ss) = (digits(hh)?, digits(mm)?, digits(ss)?);
    // 60 is a leap second; Unix time folds it into the next minute's first second.
    if hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    if let Some(frac) = zone.strip_prefix('.') {
        let end = frac
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(frac.len());
        if end == 0 {
            return None;
        }
        zone = &frac[end..];
    }
    let offset = match zone {
        "Z" | "z" => 0,
        _ => {
            let sign = match zone.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let (oh, om) = zone[1..].split_once(':')?;
            if oh.len() != 2 || om.len() != 2 {
                return None;
            }
            let (oh, om) = (digits(oh)?, digits(om)?);
            if oh > 23 || om > 59 {
                return None;
            }
            sign * (oh as i64 * 3600 + om as i64 * 60)
        }
    };
    let local = days_from_civil(y, m, d) * 86_400 + (hh * 3600 + mm * 60 + ss) as i64;
    Some(local - offset)
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
        (253_402_300_799, "9999-12-31T23:59:59Z"),
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
    fn round_trips_every_day_for_a_thousand_years() {
        let mut prev = None;
        for day in days_from_civil(1600, 1, 1)..days_from_civil(2600, 1, 1) {
            let (y, m, d) = civil_from_days(day);
            assert_eq!(days_from_civil(y, m, d), day);
            assert!(d >= 1 && d <= days_in_month(y, m));
            if let Some((py, pm, pd)) = prev {
                // Consecutive days: next day of the month, or the first of the next.
                assert!(
                    (y, m, d) == (py, pm, pd + 1)
                        || (d == 1 && ((y, m) == (py, pm + 1) || (y, m, pm) == (py + 1, 1, 12)))
                );
            }
            prev = Some((y, m, d));
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
    }

    #[test]
    fn refuses_what_is_not_a_timestamp() {
        for bad in [
            "",
            "yesterday",
            "2009-02-13",
            "2009-02-13T23:31:30",
            "2009-02-13T23:31:30+0200",
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

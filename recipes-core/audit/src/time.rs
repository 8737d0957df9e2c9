//! Times as text: the leader's clock (ms since the Unix epoch) in RFC 3339 UTC, and back.

/// Days since 1970-01-01 of a civil date (proleptic Gregorian; H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `ms` since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
///
/// ```
/// assert_eq!(zk_lock_audit::time::format(0), "1970-01-01T00:00:00.000Z");
/// assert_eq!(zk_lock_audit::time::format(1_796_541_200_123), "2026-12-06T07:13:20.123Z");
/// ```
pub fn format(ms: i64) -> String {
    let (days, rest) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (y, m, d) = civil_from_days(days);
    let (h, min, s, milli) = (
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1000 % 60,
        rest % 1000,
    );
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{milli:03}Z")
}

/// Reads a time: ms since the epoch (digits only), or `YYYY-MM-DDTHH:MM:SS[.fff]Z` (UTC;
/// `Z` may be left out).
///
/// ```
/// use zk_lock_audit::time::parse;
/// assert_eq!(parse("2026-12-06T07:13:20.123Z"), Some(1_796_541_200_123));
/// assert_eq!(parse("2026-12-06T07:13:20"), Some(1_796_541_200_000));
/// assert_eq!(parse("1796541200123"), Some(1_796_541_200_123));
/// assert_eq!(parse("2026-13-06T07:13:20Z"), None);
/// ```
pub fn parse(text: &str) -> Option<i64> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse().ok();
    }
    let text = text.strip_suffix('Z').unwrap_or(text);
    let (date, clock) = text.split_once('T')?;
    let mut date = date.splitn(3, '-');
    let num = |s: Option<&str>| -> Option<i64> {
        let s = s?;
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let (y, m, d) = (num(date.next())?, num(date.next())?, num(date.next())?);
    let (clock, frac) = match clock.split_once('.') {
        Some((c, f)) => (c, Some(f)),
        None => (clock, None),
    };
    let mut clock = clock.splitn(3, ':');
    let (h, min, s) = (num(clock.next())?, num(clock.next())?, num(clock.next())?);
    let milli = match frac {
        None => 0,
        Some(f) => {
            let digits: String = f.chars().chain("000".chars()).take(3).collect();
            num(Some(&digits))?
        }
    };
    let valid = (1..=12).contains(&m) && (1..=31).contains(&d) && h < 24 && min < 60 && s < 61;
    valid.then(|| {
        days_from_civil(y, m, d) * 86_400_000 + h * 3_600_000 + min * 60_000 + s * 1000 + milli
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_day_of_four_centuries_round_trips() {
        for day in -146_097..146_097i64 {
            let ms = day * 86_400_000 + 45_296_789;
            assert_eq!(parse(&format(ms)), Some(ms), "{}", format(ms));
        }
    }
}

//! Command-line flags shared by the benchmarks: `--flag value` or `--flag=value` pairs,
//! seconds within a range, and round counts.

use std::error::Error;
use std::ops::RangeInclusive;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// Splits `args` into `(flag, value)` pairs; a flag without a value is an error.
pub(crate) fn flags(args: &[String]) -> Result<Vec<(String, String)>> {
    let mut pairs = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (flag, value) = match arg.split_once('=') {
            Some((flag, value)) => (flag.to_owned(), value.to_owned()),
            None => {
                let value = args
                    .next()
                    .ok_or_else(|| format!("`{arg}` needs a value"))?;
                (arg.clone(), value.clone())
            }
        };
        pairs.push((flag, value));
    }
    Ok(pairs)
}

/// Seconds given to `flag`, within `range`.
pub(crate) fn seconds(flag: &str, value: &str, range: RangeInclusive<f64>) -> Result<f64> {
    value
        .parse()
        .ok()
        .filter(|v| range.contains(v))
        .ok_or_else(|| format!("`{flag}` wants seconds in {range:?}, got `{value}`").into())
}

/// `--rounds`: 1 to 20.
pub(crate) fn rounds(value: &str) -> Result<u32> {
    value
        .parse()
        .ok()
        .filter(|r| (1..=20).contains(r))
        .ok_or_else(|| format!("`--rounds` wants 1 to 20, got `{value}`").into())
}

/// The range of a measured window: above 0, at most an hour.
pub(crate) const WINDOW: RangeInclusive<f64> = 0.001..=3600.0;

/// The range of a warm-up: up to a minute.
pub(crate) const WARMUP: RangeInclusive<f64> = 0.0..=60.0;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn pairs_both_forms_and_refuses_a_missing_value() {
        let pairs = flags(&strings(&["--seconds", "2", "--rounds=3"])).unwrap();
        assert_eq!(
            pairs,
            [
                ("--seconds".into(), "2".into()),
                ("--rounds".into(), "3".into())
            ]
        );
        assert!(flags(&strings(&["--seconds"])).is_err());
        assert_eq!(seconds("--seconds", "2.5", WINDOW).unwrap(), 2.5);
        assert!(seconds("--seconds", "0", WINDOW).is_err());
        assert!(rounds("21").is_err());
    }
}

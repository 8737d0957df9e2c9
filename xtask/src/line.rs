//! The lines between xtask and its workers (Rust, Java and Python alike): `READY` once
//! connected, `GO` back, `WINDOW_END` when a measured window closes, `ERROR <message>` on a
//! failure, and one result line of `key=value` fields at the end: `RESULT ...` from a
//! benchmark worker ([`Sample`](crate::bench::sample::Sample)), `COUNTS ...` from an interop or stress
//! worker ([`Counts`](crate::interop::Counts)). [`Fields`] is the one parser of result lines;
//! [`WorkerProcess`](crate::worker_process::WorkerProcess) moves the lines.

/// The fields of one result line `<TAG> key=value key=value ...`: each key at most once.
#[derive(Debug)]
pub struct Fields<'a> {
    line: &'a str,
    pairs: Vec<(&'a str, &'a str)>,
}

impl<'a> Fields<'a> {
    /// Splits `line`, which must start with `tag` and a space.
    ///
    /// # Errors
    /// Another tag, a field that is not `key=value`, or a key given twice.
    pub fn parse(line: &'a str, tag: &str) -> Result<Fields<'a>, String> {
        let rest = line
            .strip_prefix(tag)
            .and_then(|rest| rest.strip_prefix(' '))
            .ok_or_else(|| format!("not a {tag} line: {line:?}"))?;
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        for pair in rest.split_ascii_whitespace() {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("`{pair}` is not key=value in {line:?}"))?;
            if pairs.iter().any(|(k, _)| *k == key) {
                return Err(format!("`{key}` given twice in {line:?}"));
            }
            pairs.push((key, value));
        }
        Ok(Fields { line, pairs })
    }

    /// Refuses keys outside `known`.
    ///
    /// # Errors
    /// The first unknown key.
    pub fn only(self, known: &[&str]) -> Result<Self, String> {
        match self.pairs.iter().find(|(k, _)| !known.contains(k)) {
            Some((key, _)) => Err(format!("unknown field `{key}` in {:?}", self.line)),
            None => Ok(self),
        }
    }

    /// The text of `key`.
    ///
    /// # Errors
    /// When it is missing.
    pub fn text(&self, key: &str) -> Result<&'a str, String> {
        self.pairs
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
            .ok_or_else(|| format!("`{key}` missing in {:?}", self.line))
    }

    /// The whole number of `key`.
    ///
    /// # Errors
    /// When it is missing or not a whole number.
    pub fn number(&self, key: &str) -> Result<u64, String> {
        let value = self.text(key)?;
        value
            .parse()
            .map_err(|_| format!("`{key}={value}` is not a whole number in {:?}", self.line))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_checked() {
        let f = Fields::parse("RESULT a=1 b=x", "RESULT").unwrap();
        assert_eq!(f.number("a"), Ok(1));
        assert!(f.number("b").unwrap_err().contains("b=x"));
        assert!(f.text("c").unwrap_err().contains("`c` missing"));
        assert!(Fields::parse("COUNTS a=1", "RESULT").is_err());
        assert!(Fields::parse("RESULTS a=1", "RESULT").is_err());
        assert!(
            Fields::parse("RESULT a=1 a=2", "RESULT")
                .unwrap_err()
                .contains("twice")
        );
        assert!(Fields::parse("RESULT a", "RESULT").is_err());
        let f = Fields::parse("RESULT a=1 z=2", "RESULT").unwrap();
        assert!(f.only(&["a"]).unwrap_err().contains("`z`"));
    }
}

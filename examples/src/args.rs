//! `--name value` command-line options for the example programs, with typed values and
//! errors that name the option.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

/// A command-line option that could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgsError(String);

impl fmt::Display for ArgsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ArgsError {}

/// Parsed `--name value` options and `--flag` switches.
#[derive(Clone, Debug, Default)]
pub struct Args {
    values: HashMap<String, String>,
    flags: Vec<String>,
}

impl Args {
    /// Parses `args` (without the program name): each `--name` takes the next word as its
    /// value unless it is one of `flags` or the next word is another option.
    ///
    /// # Errors
    /// [`ArgsError`] for a word that is not an option, or an option given twice.
    pub fn parse<I: IntoIterator<Item = String>>(
        args: I,
        flags: &[&str],
    ) -> Result<Args, ArgsError> {
        let mut out = Args::default();
        let mut words = args.into_iter().peekable();
        while let Some(word) = words.next() {
            let Some(name) = word.strip_prefix("--") else {
                return Err(ArgsError(format!(
                    "unexpected argument {word:?}: options are --name value"
                )));
            };
            let repeated = out.values.contains_key(name) || out.flags.iter().any(|f| f == name);
            if repeated {
                return Err(ArgsError(format!("--{name} is given twice")));
            }
            let takes_value =
                !flags.contains(&name) && words.peek().is_some_and(|w| !w.starts_with("--"));
            match words.next_if(|_| takes_value) {
                Some(value) => out.values.insert(name.to_string(), value),
                None => {
                    out.flags.push(name.to_string());
                    None
                }
            };
        }
        Ok(out)
    }

    /// Parses the process's arguments (see [`Args::parse`]).
    ///
    /// # Errors
    /// As [`Args::parse`].
    pub fn from_env(flags: &[&str]) -> Result<Args, ArgsError> {
        Args::parse(std::env::args().skip(1), flags)
    }

    /// The value of `--name`, or `default` when it is absent.
    ///
    /// # Errors
    /// [`ArgsError`] when the value does not parse as a `T`, or `--name` was given
    /// without a value.
    pub fn get<T: FromStr>(&self, name: &str, default: T) -> Result<T, ArgsError>
    where
        T::Err: fmt::Display,
    {
        if self.flags.iter().any(|f| f == name) {
            return Err(ArgsError(format!("--{name} needs a value")));
        }
        match self.values.get(name) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|e| ArgsError(format!("--{name} {v:?}: {e}"))),
        }
    }

    /// Whether the switch `--name` was given.
    pub fn flag(&self, name: &str) -> bool {
        self.flags.iter().any(|f| f == name)
    }

    /// Fails on any option not in `known`, so a misspelt option is not silently ignored.
    ///
    /// # Errors
    /// [`ArgsError`] naming the unknown option and the known ones.
    pub fn only(&self, known: &[&str]) -> Result<(), ArgsError> {
        let given = self.values.keys().chain(&self.flags);
        match given.into_iter().find(|n| !known.contains(&n.as_str())) {
            None => Ok(()),
            Some(n) => Err(ArgsError(format!(
                "unknown option --{n}; the options are --{}",
                known.join(" --")
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(words: &[&str]) -> Result<Args, ArgsError> {
        Args::parse(words.iter().map(|w| w.to_string()), &["resume"])
    }

    #[test]
    fn values_flags_defaults_and_errors() {
        let a = parse(&["--steps", "20", "--resume", "--out", "runs/x"]).unwrap();
        assert_eq!(a.get("steps", 5000u64), Ok(20));
        assert_eq!(a.get("batch", 64usize), Ok(64));
        assert_eq!(a.get("out", String::new()).unwrap(), "runs/x");
        assert!(a.flag("resume"));
        assert!(a.only(&["steps", "out", "resume"]).is_ok());
        assert!(a.only(&["steps", "out"]).is_err());
        assert!(
            parse(&["--steps", "x"])
                .unwrap()
                .get("steps", 1u64)
                .is_err()
        );
        assert!(parse(&["--steps"]).unwrap().get("steps", 1u64).is_err());
        assert!(parse(&["steps"]).is_err());
        assert!(parse(&["--steps", "1", "--steps", "2"]).is_err());
    }
}

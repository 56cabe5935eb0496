//! Parsers of flag values (sizes, speeds, counts, profiles, addresses):
//! each a clap `value_parser` whose error says what was expected.

use super::*;

pub fn parse_size(s: &str) -> Result<(u16, u16), String> {
    let (w, h) = s
        .split_once('x')
        .ok_or_else(|| format!("expected COLSxROWS like 120x40, got {s:?}"))?;
    let parse = |v: &str| v.trim().parse::<u16>().ok().filter(|n| (10..=1000).contains(n));
    match (parse(w), parse(h)) {
        (Some(w), Some(h)) => Ok((w, h)),
        _ => Err(format!("expected COLSxROWS with 10 to 1000 each, got {s:?}")),
    }
}

pub fn parse_speed(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("{s:?} is not a number"))?;
    if (0.25..=64.0).contains(&v) {
        Ok(v)
    } else {
        Err("speed must be between 0.25 and 64".into())
    }
}

pub fn parse_positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("{s:?} is not a positive number")),
    }
}

/// `-j N`: 1 to 1024 files at once.
pub fn parse_jobs(s: &str) -> Result<usize, String> {
    s.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=1024).contains(n))
        .ok_or_else(|| format!("expected 1 to 1024 files at once, got {s:?}"))
}

/// `--rechunk N`: 1 to 1,000,000 chars.
pub fn parse_chunk(s: &str) -> Result<usize, String> {
    s.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=1_000_000).contains(n))
        .ok_or_else(|| format!("expected a delta size from 1 to 1000000 chars, got {s:?}"))
}

/// `--profile`: one of [`Profile::ALL`] by its name (the list `--help`,
/// completions and the man page show comes from the same names). An
/// unknown name is quoted cut, as `loopscope_core::setup` does: clap's own
/// message echoed a 50 MB argument whole.
pub fn profile_parser() -> ProfileParser {
    ProfileParser
}

#[derive(Clone)]
pub struct ProfileParser;

impl clap::builder::TypedValueParser for ProfileParser {
    type Value = Profile;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Profile, clap::Error> {
        let name = value.to_string_lossy();
        Profile::from_name(&name).ok_or_else(|| {
            let names: Vec<&str> = Profile::ALL.iter().map(|p| p.name()).collect();
            let flag = arg.map_or_else(|| "--profile".to_string(), ToString::to_string);
            let message = format!(
                "unknown profile {} for {flag} (known: {})\n",
                loopscope_core::detect::quote(&name, 60),
                names.join(", ")
            );
            clap::Error::raw(clap::error::ErrorKind::InvalidValue, message).with_cmd(cmd)
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            Profile::ALL
                .into_iter()
                .map(|p| clap::builder::PossibleValue::new(p.name())),
        ))
    }
}

/// A size in bytes: `4096`, `512K`, `100M`, `4G`, `1T` (a trailing `B`
/// or `iB` allowed; powers of 1024); at least 1 KiB.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_uppercase();
    let t = t.strip_suffix("IB").or_else(|| t.strip_suffix('B')).unwrap_or(&t);
    let (digits, shift) = match t.chars().last() {
        Some('K') => (&t[..t.len() - 1], 10),
        Some('M') => (&t[..t.len() - 1], 20),
        Some('G') => (&t[..t.len() - 1], 30),
        Some('T') => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    let n: u64 = digits
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 4G, 500M, 1048576)"))?;
    let bytes = n.checked_mul(1 << shift).ok_or_else(|| format!("{s:?} is too large"))?;
    if bytes < 1024 {
        return Err(format!("{s:?}: at least 1K"));
    }
    Ok(bytes)
}

/// `--listen`: an address and port (`127.0.0.1:8700`, `[::1]:8700`), or a port alone (on 127.0.0.1).
pub fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = s.trim().parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.trim()
        .parse()
        .map_err(|_| format!("expected ADDRESS:PORT like 127.0.0.1:8700, or a port, got {s:?}"))
}

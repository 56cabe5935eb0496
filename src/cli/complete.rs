//! What shells complete for flags whose values are names loopscope knows:
//! agents for `--agent` and `--latest`, detector ids for
//! `--detectors`. The value is taken as typed (`--latest` also takes a
//! folder, `--agent` a comma-separated list or `all`) and checked where it
//! is used, with a message that lists the names; the names only feed the
//! completion scripts.

use std::ffi::OsStr;

use clap::builder::{PossibleValue, TypedValueParser};

use loopscope::sessions::Agent;
use loopscope_core::detect::DETECTORS;

/// Any text, offering some names to completion.
#[derive(Clone, Copy)]
pub struct Offering(fn() -> Vec<&'static str>);

impl TypedValueParser for Offering {
    type Value = String;

    fn parse_ref(&self, cmd: &clap::Command, arg: Option<&clap::Arg>, value: &OsStr) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new((self.0)().into_iter().map(PossibleValue::new)))
    }
}

fn agents_or_all() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Agent::ALL.iter().map(|a| a.name()).collect();
    names.push("all");
    names
}

fn detector_ids() -> Vec<&'static str> {
    DETECTORS.iter().map(|d| d.id).collect()
}

/// `--agent` and `--latest`: agents, comma-separated, or `all` (or, for
/// `--latest`, a folder, typed).
pub fn agent_list() -> Offering {
    Offering(agents_or_all)
}

/// `--detectors`: detector ids, comma-separated.
pub fn detectors() -> Offering {
    Offering(detector_ids)
}

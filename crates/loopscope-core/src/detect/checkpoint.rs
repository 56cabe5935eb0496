//! Checkpoint scheduling for the reasoning detectors: they run only when the
//! reasoning buffer of the current request first reaches a checkpoint, and
//! a `request` (or `prompt`) starts them over.

use super::{Buffers, CheckpointRun, Detection, Detector, Kinds, Observation, Status};
use crate::event::{Channel, EventKind};
use crate::text::TextBuffer;

/// What one checkpoint detector does when it runs.
pub(crate) trait Analysis: Clone + Send + Sync + 'static {
    fn id(&self) -> &'static str;
    /// Whether it runs at the checkpoint with this 0-based position in the list.
    fn runs_at(&self, ordinal: usize) -> bool;
    /// Examines the buffer (length `n`) at `checkpoints[ordinal]`. A detection
    /// comes back without event, checkpoint and `at_char`; the scheduler adds them.
    fn analyze(&self, buf: &TextBuffer, checkpoints: &[usize], ordinal: usize, n: usize) -> Result<Detection, String>;
}

#[derive(Clone)]
pub(crate) struct CheckpointDetector<A> {
    analysis: A,
    checkpoints: Vec<usize>,
    runs: Vec<CheckpointRun>,
    fired: Option<(usize, String)>,
}

impl<A: Analysis> CheckpointDetector<A> {
    pub(crate) fn boxed(analysis: A, checkpoints: Vec<usize>) -> Box<dyn Detector> {
        Box::new(CheckpointDetector {
            analysis,
            checkpoints,
            runs: Vec::new(),
            fired: None,
        })
    }

    /// The checkpoints this detector runs at, with their list positions.
    fn own_checkpoints(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.checkpoints
            .iter()
            .copied()
            .enumerate()
            .filter(|&(ordinal, _)| self.analysis.runs_at(ordinal))
    }
}

impl<A: Analysis> Detector for CheckpointDetector<A> {
    fn id(&self) -> &'static str {
        self.analysis.id()
    }

    fn observe(&mut self, obs: &Observation<'_>, out: &mut Vec<Detection>) {
        match obs.event.kind {
            EventKind::Prompt { .. } | EventKind::Request { .. } => {
                self.runs.clear();
                self.fired = None;
            }
            EventKind::Reasoning { .. } => {
                let (before, n) = (obs.reasoning_before, obs.buffers.reasoning.len());
                let crossed: Vec<(usize, usize)> = self
                    .own_checkpoints()
                    .filter(|&(_, cp)| before < cp && cp <= n)
                    .collect();
                for (ordinal, checkpoint) in crossed {
                    if self.fired.is_some() {
                        break; // latched until the next request
                    }
                    let verdict = self
                        .analysis
                        .analyze(&obs.buffers.reasoning, &self.checkpoints, ordinal, n);
                    let fired = verdict.is_ok();
                    let summary = match verdict {
                        Ok(mut d) => {
                            d.event = obs.index;
                            d.checkpoint = Some(checkpoint);
                            d.at_char = Some(n);
                            d.channel = Channel::Reasoning;
                            let reason = d.reason.clone();
                            self.fired = Some((obs.index, reason.clone()));
                            out.push(d);
                            reason
                        }
                        Err(near_miss) => near_miss,
                    };
                    self.runs.push(CheckpointRun {
                        detector: self.analysis.id(),
                        checkpoint,
                        event: obs.index,
                        at_char: n,
                        fired,
                        summary,
                    });
                }
            }
            _ => {}
        }
    }

    fn status(&self, buffers: &Buffers) -> Status {
        if let Some((event, reason)) = &self.fired {
            return Status::Fired {
                event: *event,
                reason: reason.clone(),
            };
        }
        let len = buffers.reasoning.len();
        let next = self.own_checkpoints().map(|(_, cp)| cp).find(|&cp| cp > len);
        match self.runs.last() {
            Some(run) => Status::Clear {
                checkpoint: run.checkpoint,
                near_miss: run.summary.clone(),
                next,
            },
            None => Status::Idle {
                detail: match next {
                    Some(cp) => format!("runs at {cp} chars of reasoning ({len} so far)"),
                    None => "no checkpoint left in this request".to_string(),
                },
            },
        }
    }

    fn checkpoint_runs(&self) -> &[CheckpointRun] {
        &self.runs
    }

    fn clone_box(&self) -> Box<dyn Detector> {
        Box::new(self.clone())
    }

    fn kinds(&self) -> Kinds {
        Kinds::PROMPT.and(Kinds::REQUEST).and(Kinds::REASONING)
    }
}

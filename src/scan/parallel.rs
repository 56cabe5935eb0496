//! Several inputs scanned at once on every core: workers take inputs by
//! index, each file's output is kept until its turn, and a progress line
//! counts bytes done on a terminal.

use std::io::{self, Write};

use super::*;

/// The workers take inputs by index; the caller prints each file's output
/// as soon as every file before it is printed.
pub(super) fn run_parallel(
    inputs: &[Input],
    opts: &ScanOptions,
    columns: &print::Columns,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<Vec<(Outcome, Vec<Row>)>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    let next = AtomicUsize::new(0);
    let workers = opts
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, inputs.len().max(1));
    let progress = opts.progress.then(|| Progress::new(inputs));
    type Done = (usize, Vec<u8>, Vec<u8>, io::Result<(Outcome, Vec<Row>)>);
    let (tx, rx) = mpsc::channel::<Done>();
    let mut outcomes: Vec<(Outcome, Vec<Row>)> = vec![(Outcome::Clean, Vec::new()); inputs.len()];
    std::thread::scope(|scope| -> io::Result<()> {
        for _ in 0..workers {
            let tx = tx.clone();
            let next = &next;
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(input) = inputs.get(i) else { break };
                let (mut o, mut e) = (Vec::new(), Vec::new());
                let r = scan_input(input, opts, columns, &mut o, &mut e);
                if tx.send((i, o, e, r)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut waiting = std::collections::BTreeMap::new();
        let mut printed = 0;
        for (i, o, e, r) in rx {
            waiting.insert(i, (o, e, r));
            while let Some((o, e, r)) = waiting.remove(&printed) {
                let print = |out: &mut dyn Write, err: &mut dyn Write| -> io::Result<()> {
                    err.write_all(&e)?;
                    out.write_all(&o)?;
                    out.flush()
                };
                match &progress {
                    Some(bar) => bar.bar.suspend(|| print(out, err))?,
                    None => print(out, err)?,
                }
                outcomes[printed] = r?;
                if let Some(bar) = &progress {
                    let found = outcomes[printed].1.iter().map(|row| row.detectors.len()).sum();
                    bar.done(&inputs[printed], found);
                }
                printed += 1;
            }
        }
        Ok(())
    })?;
    Ok(outcomes)
}

/// `scan`'s progress bar: files and bytes done, detections so far, and
/// the time left at the rate so far.
struct Progress {
    bar: indicatif::ProgressBar,
    files: usize,
    done: std::cell::Cell<(usize, usize)>,
}

impl Progress {
    fn new(inputs: &[Input]) -> Progress {
        let bytes: u64 = inputs.iter().map(input_size).sum();
        let bar = indicatif::ProgressBar::with_draw_target(Some(bytes), indicatif::ProgressDrawTarget::stderr());
        let style =
            indicatif::ProgressStyle::with_template("{bar:30} {msg}  {binary_bytes}/{binary_total_bytes}  ETA {eta}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        bar.set_style(style);
        let p = Progress {
            bar,
            files: inputs.len(),
            done: std::cell::Cell::new((0, 0)),
        };
        p.bar.set_message(p.message());
        p
    }

    fn message(&self) -> String {
        let (files, found) = self.done.get();
        format!("{files}/{} files, {found} detections", self.files)
    }

    fn done(&self, input: &Input, found: usize) {
        let (files, total) = self.done.get();
        self.done.set((files + 1, total + found));
        self.bar.inc(input_size(input));
        self.bar.set_message(self.message());
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

fn input_size(input: &Input) -> u64 {
    match input {
        Input::Bytes { bytes, .. } => bytes.len() as u64,
        _ => input
            .path()
            .and_then(|p| std::fs::metadata(p).ok())
            .map_or(0, |m| if m.is_dir() { 0 } else { m.len() }),
    }
}

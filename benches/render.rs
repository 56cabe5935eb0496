//! The TUI's costs (`cargo bench --bench render`):
//! - one frame at 200×50 over a 10 MB buffer with 1000 highlights (target <= 5 ms)
//! - seeking the app to a far event of a 100 000-event stream, everything shown
//!   recomputed (target <= 100 ms)
//! - `loopscope screenshot`'s SVG writer over that 200×50 frame
//! - `/` over the whole 100 000-event stream (every request's text, calls, results)
//! - `:set` re-running a 100 000-event stream of 1 M chars, shown at its end
//!   (target: the screen updates within 100 ms)

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use loopscope::replay::feed::Feed;
use loopscope::tui::{ui, Action, App, ViewOptions};
use loopscope_core::detect::Span;
use loopscope_core::{Event, Profile, Setup};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

fn prose(bytes: usize) -> String {
    const WORDS: &[&str] = &[
        "the", "parser", "returns", "early", "on", "empty", "input", "思考", "cache", "🙂", "retry",
    ];
    let mut s = String::with_capacity(bytes);
    let mut i = 0usize;
    while s.len() < bytes {
        s.push_str(WORDS[(i * 7 + i / 3) % WORDS.len()]);
        s.push(if i % 13 == 12 { '\n' } else { ' ' });
        i += 1;
    }
    s
}

fn app(events: Vec<Event>, size: (u16, u16)) -> App {
    let now = Instant::now();
    let opts = ViewOptions {
        paused: true,
        ..ViewOptions::default()
    };
    let mut app = App::new("bench.jsonl", Setup::profile(Profile::Seed), &opts, now);
    app.update(Action::Resize(size.0, size.1), now);
    app.update(Action::Feed(Feed::Events(events)), now);
    app.update(Action::Feed(Feed::CaughtUp), now);
    app.update(Action::Feed(Feed::Ended), now);
    app.update(Action::Key(KeyEvent::new(KeyCode::Char('G'), KeyModifiers::NONE)), now);
    app
}

fn frame(c: &mut Criterion) {
    let text = prose(10 << 20);
    let mut events = vec![Event::prompt("bench"), Event::request()];
    let chars: Vec<char> = text.chars().collect();
    events.extend(
        chars
            .chunks(4096)
            .map(|c| Event::reasoning(&c.iter().collect::<String>())),
    );
    let mut app = app(events, (200, 50));
    // 1000 highlights over the visible rows and around them, all kinds.
    let len = app.tape.cursor().buffers().reasoning.len();
    let marks = [
        loopscope::tui::buffer_pane::Mark::CopyFirst,
        loopscope::tui::buffer_pane::Mark::CopyA,
        loopscope::tui::buffer_pane::Mark::CopyB,
        loopscope::tui::buffer_pane::Mark::ChunkExtent,
        loopscope::tui::buffer_pane::Mark::Search,
    ];
    app.buffer.highlights = (0..1000)
        .map(|i| {
            let start = len - 20_000 + i * 20;
            loopscope::tui::buffer_pane::Highlight {
                span: Span::new(start, start + 15),
                mark: marks[i % marks.len()],
            }
        })
        .collect();
    let mut terminal = Terminal::new(TestBackend::new(200, 50)).unwrap();
    c.bench_function("frame 200x50, 10 MB buffer, 1000 highlights", |b| {
        b.iter(|| {
            terminal.draw(|f| ui::render(f, black_box(&app))).unwrap();
        })
    });
    let buffer = terminal.backend().buffer().clone();
    c.bench_function("svg of a 200x50 frame", |b| {
        b.iter(|| loopscope::render::svg::to_svg(black_box(&buffer), "bench", loopscope::tui::theme::Canvas::Dark))
    });
}

/// 100 000 events: requests of reasoning and content with tool calls.
fn hundred_k_events() -> Vec<Event> {
    let text = prose(5 << 20);
    let chars: Vec<char> = text.chars().collect();
    let mut pieces = chars.chunks(25).map(|c| c.iter().collect::<String>());
    let mut events = vec![Event::prompt("bench")];
    let mut i = 0usize;
    while events.len() < 100_000 {
        if i.is_multiple_of(250) {
            events.push(Event::request());
            events.push(Event::tool_call(
                "read_file",
                serde_json::json!({ "path": format!("f{}", i % 9) }),
            ));
            events.push(Event::tool_result(true));
        }
        let p = pieces.next().unwrap();
        events.push(if i.is_multiple_of(5) {
            Event::content(&p)
        } else {
            Event::reasoning(&p)
        });
        i += 1;
    }
    events
}

fn seek(c: &mut Criterion) {
    let mut app = app(hundred_k_events(), (200, 50));
    let now = Instant::now();
    let targets = [99_999usize, 3, 50_000, 77_777, 12_345, 99_000, 45_678, 1];
    let mut k = 0;
    c.bench_function("app seek, 100k events, far jumps", |b| {
        b.iter(|| {
            k = (k + 1) % targets.len();
            app.jump_to(black_box(targets[k]), now);
        })
    });
}

fn search(c: &mut Criterion) {
    // `/` searches every event of the stream: 100 000 events, 5 MB of text.
    let app = app(hundred_k_events(), (200, 50));
    let mut search = loopscope::tui::search::Search::default();
    let re = loopscope::tui::search::smart_case("cache retry").unwrap();
    c.bench_function("search the whole stream, 100k events", |b| {
        b.iter(|| {
            search.set(Some(black_box(re.clone())), &app.tape);
            black_box(search.hits.len())
        })
    });
}

fn rerun(c: &mut Criterion) {
    // `:set` at the end of a 100,000-event stream of 1 M chars: everything
    // re-run at once, the timeline and the shown state rebuilt.
    let text = prose(1 << 20);
    let chars: Vec<char> = text.chars().collect();
    let mut events = vec![Event::prompt("bench"), Event::request()];
    let per = chars.len().div_ceil(99_000);
    for (i, piece) in chars.chunks(per).enumerate() {
        if i.is_multiple_of(1000) {
            events.push(Event::tool_call("read_file", serde_json::json!({ "path": "a" })));
            events.push(Event::tool_result(true));
        }
        events.push(Event::reasoning(&piece.iter().collect::<String>()));
    }
    let mut app = app(events, (200, 50));
    let now = Instant::now();
    let mut k = 0;
    c.bench_function("':set' re-run at the end of 100k events / 1 M chars", |b| {
        b.iter(|| {
            k += 1;
            let v = 6 + k % 2;
            app.run_command(black_box(&format!("set block-cycle.min_matches={v}")), now);
            assert!(!app.tape.pending());
        })
    });
}

criterion_group!(benches, frame, seek, search, rerun);
criterion_main!(benches);

//! `--otlp`'s cost per detection on the sending side: the spans and event
//! made for it, and a batch of 512 spans encoded as protobuf and as JSON
//! (what the exporter's thread does between two requests).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use loopscope::telemetry::otlp::{traces_body, Config, Item, Protocol, SessionInfo, SessionTrace};
use loopscope_core::detect::Detection;
use loopscope_core::event::{Channel, Event, EventKind, Ts};

fn detection() -> Detection {
    let mut d = Detection::new("tool-repeat", 42, Channel::Tools, None);
    d.period = Some(1);
    d.repeats = Some(5);
    d.threshold = Some(5);
    d.events = vec![6, 14, 24, 33, 42];
    d.repeated = Some(r#"read_file:{"path":"config/server.toml"}"#.into());
    d.reason = r#"read_file "{\"path\":\"config/server.toml\"}" called 5 times in a row with the same arguments (threshold 5), events 6..42"#.into();
    d
}

fn bench(c: &mut Criterion) {
    let d = detection();
    let mut event = Event::new(EventKind::Content { text: "x".into() });
    event.ts = Ts::from_unix_millis(1_767_225_600_000);
    let info = SessionInfo {
        name: "sample-logs/identical-tool-calls.jsonl".into(),
        id: "sample-logs/identical-tool-calls.jsonl".into(),
        agent: "claude-code".into(),
        format: "claude-code".into(),
        profile: "seed".into(),
    };
    let mut g = c.benchmark_group("otlp");
    g.throughput(Throughput::Elements(1));
    g.bench_function("detection_to_span_and_event", |b| {
        let mut trace = SessionTrace::new(info.clone(), true);
        b.iter(|| black_box(trace.detection(black_box(&d), &event, "seed")))
    });
    let mut trace = SessionTrace::new(info.clone(), true);
    let spans: Vec<_> = (0..512)
        .filter_map(|_| match trace.detection(&d, &event, "seed").remove(0) {
            Item::Span(s) => Some(s),
            Item::Log(_) => None,
        })
        .collect();
    let mut config = Config::resolve(Some("http://127.0.0.1:4318"), None, &|_| None)
        .unwrap()
        .unwrap();
    g.throughput(Throughput::Elements(512));
    for protocol in [Protocol::Protobuf, Protocol::Json] {
        config.protocol = protocol;
        let size = traces_body(&config, spans.clone()).len();
        eprintln!("a batch of 512 spans as {}: {size} bytes", protocol.name());
        g.bench_function(format!("batch_512_{}", protocol.name().replace('/', "_")), |b| {
            b.iter(|| black_box(traces_body(&config, spans.clone())))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

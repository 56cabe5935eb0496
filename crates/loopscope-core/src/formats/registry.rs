//! The one table of input formats. Each importer is listed once, here: its
//! `--format` name, what `--format auto` tells apart within it (the
//! [`Kind`]s), how each kind is built, sniffed and fuzzed, and the fixtures
//! it must be detected from. [`Format`], [`Kind`], their `ALL` lists, the
//! fuzz list ([`crate::fuzzing::decoders`]), the cargo-fuzz targets
//! (tests/fuzz_stable.rs writes and checks them) and the detection matrix
//! (tests/agents.rs) all come from it.
//!
//! A new importer is its file (`formats/NAME.rs`, declared in
//! `formats/mod.rs`) plus one row below.

use serde_json::Value;

use super::{aider, anthropic, atif, claude_code, claude_trace, cline, codex, copilot, crush, gemini, gemini_cli};
use super::{goose, messages, native, openai_chat, openai_responses, openclaw, opencode, openhands, otel, pi, rows};
use super::{swe_agent, vcr, Decoder};

/// One format of the table: what `--format` names.
#[derive(Debug)]
pub struct FormatEntry {
    /// The importer.
    pub format: Format,
    /// The name `--format` takes.
    pub name: &'static str,
    /// Its logs keep the deltas a model streamed ([`Format::has_deltas`]).
    pub has_deltas: bool,
    /// How the error for an unreadable input names it among those tried.
    pub tried: &'static str,
}

/// A JSON line (or document) test of the agents' formats, tried before the
/// older rules of `classify` (their shapes are more specific), lowest
/// `order` first: where two shapes overlap, the order decides.
#[derive(Clone, Copy)]
pub struct Sniff {
    /// Place among the other kinds' tests (lowest first).
    pub order: u16,
    /// Whether a JSON object is a record of this kind.
    pub test: fn(&Value) -> bool,
}

impl std::fmt::Debug for Sniff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sniff({})", self.order)
    }
}

/// What one kind of input is, beyond its importer and fuzz target.
#[derive(Clone, Copy, Debug)]
pub struct KindSpec {
    /// Its JSON line test, for kinds told apart by the table (see [`Sniff`]).
    pub sniff: Option<Sniff>,
    /// The `store` a row of loopscope's store reader names (`{"loopscope":
    /// "rows", "store": "goose"}`): rows of that store are this kind.
    pub store: Option<&'static str>,
    /// A whole trajectory in one JSON document: one such per line is a
    /// dataset ([`Kind::Rows`]).
    pub document: bool,
    /// One file can hold several streams (sub-agents), named `FILE#ID`.
    pub parts: bool,
    /// Holds other streams rather than events (a cassette, a compressed file).
    pub container: bool,
    /// Fixtures (paths from the workspace root: a file, a folder or a
    /// store) the detection matrix (tests/agents.rs) must read as this kind.
    pub examples: &'static [&'static str],
}

impl KindSpec {
    /// Nothing beyond the importer: fill a row's other fields from it.
    pub const PLAIN: KindSpec = KindSpec {
        sniff: None,
        store: None,
        document: false,
        parts: false,
        container: false,
        examples: &[],
    };
}

/// One kind of input of the table.
#[derive(Debug)]
pub struct KindEntry {
    /// The kind.
    pub kind: Kind,
    /// The importer it belongs to.
    pub format: Format,
    /// Builds its importer; `part` names a sub-agent's stream for kinds
    /// with [`KindSpec::parts`] (the others read the whole input).
    pub build: fn(Option<&str>) -> Box<dyn Decoder>,
    /// The cargo-fuzz target (`fuzz/fuzz_targets/NAME.rs`) that reads it.
    /// A `decode_*` target is generated from the row; others have bodies
    /// of their own in [`crate::fuzzing`].
    pub fuzz: &'static str,
    /// The rest.
    pub spec: KindSpec,
}

/// Declares [`Format`] and [`Kind`] and the tables, from one listing.
macro_rules! registry {
    ($(
        $(#[$fdoc:meta])*
        $format:ident $name:literal, deltas: $deltas:literal, tried: $tried:literal {
            $( $(#[$kdoc:meta])* $kind:ident: $build:expr, fuzz: $fuzz:literal, $spec:expr; )+
        }
    )+) => {
        /// The importers, by the name `--format` takes.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Format {
            $( $(#[$fdoc])* $format, )+
        }

        const FORMAT_COUNT: usize = [$(Format::$format),+].len();

        impl Format {
            /// Every importer, in listing order.
            pub const ALL: [Format; FORMAT_COUNT] = [$(Format::$format),+];
        }

        /// The formats, in listing order (`FORMATS[f as usize]` is `f`'s row).
        pub static FORMATS: [FormatEntry; FORMAT_COUNT] = [$(
            FormatEntry { format: Format::$format, name: $name, has_deltas: $deltas, tried: $tried },
        )+];

        /// What an input turned out to be.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Kind {
            $( $( $(#[$kdoc])* $kind, )+ )+
        }

        const KIND_COUNT: usize = [$( $(Kind::$kind,)+ )+].len();

        impl Kind {
            /// Every kind, in table order (a format's first is its usual reading).
            pub const ALL: [Kind; KIND_COUNT] = [$( $(Kind::$kind,)+ )+];
        }

        /// The kinds, in table order (`KINDS[k as usize]` is `k`'s row).
        pub static KINDS: [KindEntry; KIND_COUNT] = [$( $(
            KindEntry { kind: Kind::$kind, format: Format::$format, build: $build, fuzz: $fuzz, spec: $spec },
        )+ )+];
    };
}

/// A row's fields, for kinds with more than their importer.
const fn spec(sniff: Option<Sniff>, examples: &'static [&'static str]) -> KindSpec {
    KindSpec {
        sniff,
        examples,
        ..KindSpec::PLAIN
    }
}

/// A kind told apart by its JSON lines.
const fn sniffed(order: u16, test: fn(&Value) -> bool, examples: &'static [&'static str]) -> KindSpec {
    spec(Some(Sniff { order, test }), examples)
}

/// A kind sniffed by the older rules of `classify` (or by its file's start).
const fn examples(examples: &'static [&'static str]) -> KindSpec {
    spec(None, examples)
}

/// The rows of an agent's SQLite store (its importer reads what
/// `formats::source` reads out of the store).
const fn store(name: &'static str, examples: &'static [&'static str]) -> KindSpec {
    KindSpec {
        store: Some(name),
        examples,
        ..KindSpec::PLAIN
    }
}

registry! {
    /// loopscope's own JSONL.
    Native "native", deltas: true, tried: "native" {
        /// loopscope's own JSONL.
        Native: |_| Box::new(native::NativeDecoder::new()), fuzz: "decode_native",
            examples(&["sample-logs/demo.jsonl"]);
    }
    /// OpenAI Chat Completions streams.
    OpenaiChat "openai-chat", deltas: true, tried: "openai-chat (SSE, chunk JSONL, VCR cassettes)" {
        /// OpenAI Chat Completions SSE or chunks.
        OpenaiChat: |_| Box::new(openai_chat::decoder()), fuzz: "decode_openai_chat",
            examples(&[
                "tests/fixtures/formats/openai-chat.sse",
                "tests/fixtures/formats/openai-chat.chunks.jsonl",
                "tests/fixtures/formats/openai-chat-openrouter.sse",
            ]);
        /// A VCR cassette of recorded HTTP streams.
        Cassette: |_| Box::new(vcr::decoder(Format::OpenaiChat)), fuzz: "decode_cassette",
            KindSpec { container: true, ..examples(&["tests/fixtures/formats/openai-chat.cassette.yaml"]) };
    }
    /// OpenAI Responses streams.
    OpenaiResponses "openai-responses", deltas: true, tried: "openai-responses" {
        /// OpenAI Responses SSE or events.
        OpenaiResponses: |_| Box::new(openai_responses::decoder()), fuzz: "decode_openai_responses",
            examples(&["tests/fixtures/formats/openai-responses.sse"]);
    }
    /// Anthropic Messages streams.
    Anthropic "anthropic", deltas: true, tried: "anthropic" {
        /// Anthropic Messages SSE.
        Anthropic: |_| Box::new(anthropic::decoder()), fuzz: "decode_anthropic",
            examples(&["tests/fixtures/formats/anthropic.sse"]);
    }
    /// Gemini `streamGenerateContent` streams.
    Gemini "gemini", deltas: true, tried: "gemini (SSE, JSONL or JSON array)" {
        /// Gemini `streamGenerateContent` SSE or chunks.
        Gemini: |_| Box::new(gemini::decoder()), fuzz: "decode_gemini",
            examples(&[
                "tests/fixtures/formats/gemini.sse",
                "tests/fixtures/formats/gemini-vertex.chunks.jsonl",
            ]);
        /// Gemini's streamed JSON array (no `alt=sse`).
        GeminiArray: |_| Box::new(gemini::array_decoder()), fuzz: "decode_gemini_array",
            examples(&["tests/fixtures/formats/gemini-array.json"]);
    }
    /// Claude Code session files.
    ClaudeCode "claude-code", deltas: false, tried: "claude-code" {
        /// Claude Code session JSONL.
        ClaudeCode: |_| Box::new(claude_code::decoder()), fuzz: "decode_claude_code",
            examples(&[
                "tests/fixtures/formats/claude-code.jsonl",
                "tests/fixtures/formats/claude-code.stream.jsonl",
            ]);
    }
    /// qwen-code's session records (`~/.qwen/projects/<project>/chats/<session>.jsonl`):
    /// Claude Code's record shape with Gemini `parts`.
    QwenCode "qwen-code", deltas: false, tried: "qwen-code" {
        /// qwen-code session JSONL.
        QwenCode: |_| Box::new(claude_code::qwen_decoder()), fuzz: "decode_qwen_code",
            examples(&["tests/fixtures/formats/qwen-code-session.jsonl"]);
    }
    /// Codex rollouts.
    Codex "codex", deltas: false, tried: "codex (rollout, exec --json, .zst)" {
        /// Codex rollout JSONL (or `exec --json`).
        Codex: |_| Box::new(codex::decoder()), fuzz: "decode_codex",
            examples(&[
                "tests/fixtures/formats/rollout-2026-03-04T05-06-00-codex.jsonl",
                "tests/fixtures/formats/codex-exec.jsonl",
                "tests/fixtures/formats/codex-legacy.jsonl",
            ]);
        /// A zstd-compressed input.
        Zstd: |_| Box::new(codex::decoder()), fuzz: "zstd_input",
            KindSpec { container: true, ..KindSpec::PLAIN };
    }
    /// gemini-cli session files.
    GeminiCli "gemini-cli", deltas: false, tried: "gemini-cli (JSONL, legacy JSON, Content[])" {
        /// gemini-cli session JSONL.
        GeminiCliJsonl: |_| Box::new(gemini_cli::jsonl_decoder()), fuzz: "decode_gemini_cli_jsonl",
            examples(&["tests/fixtures/formats/session-2026-04-01T00-00-g1.jsonl"]);
        /// gemini-cli's legacy single JSON file.
        GeminiCliLegacy: |_| Box::new(gemini_cli::legacy_decoder()), fuzz: "decode_gemini_cli_legacy",
            examples(&["tests/fixtures/formats/session-legacy.json"]);
        /// A Gemini `Content[]` history.
        GeminiContents: |_| Box::new(gemini_cli::contents_decoder()), fuzz: "decode_gemini_contents",
            examples(&["tests/fixtures/formats/checkpoint-contents.json"]);
    }
    /// Cline and Roo Code task files.
    Cline "cline", deltas: false, tried: "cline (ui_messages, api_conversation_history)" {
        /// Cline/Roo `ui_messages.json`.
        ClineUi: |_| Box::new(cline::ui_decoder()), fuzz: "decode_cline_ui",
            examples(&["tests/fixtures/formats/cline-task"]);
        /// Cline/Roo `api_conversation_history.json`.
        ClineApi: |_| Box::new(cline::api_decoder()), fuzz: "decode_cline_api",
            examples(&["tests/fixtures/formats/cline-task/api_conversation_history.json"]);
    }
    /// A chat message list (OpenAI- or Anthropic-style), as datasets hold trajectories.
    Messages "messages", deltas: false, tried: "chat message lists (a JSON array, or a `messages` document)" {
        /// A chat message list: a JSON array of messages, or a document with `messages`.
        Messages: |_| Box::new(messages::decoder()), fuzz: "decode_messages",
            KindSpec { document: true, ..examples(&[
                "tests/fixtures/formats/messages-trajectory.json",
                "tests/fixtures/formats/swe-gym-row.json",
            ]) };
    }
    /// pi's session files (versions 1–3) and `pi --mode json` streams.
    Pi "pi", deltas: false, tried: "pi (session, --mode json)" {
        /// pi's session file.
        PiSession: |_| Box::new(pi::session_decoder()), fuzz: "decode_pi_session",
            sniffed(10, pi::is_session_record, &[
                "tests/fixtures/agents/pi/--home-dev-app--/2026-01-01T00-00-00-000Z_9f1c2d3e.jsonl",
                "tests/fixtures/agents/pi/session-v1.jsonl",
            ]);
        /// `pi --mode json`.
        PiStream: |_| Box::new(pi::stream_decoder()), fuzz: "decode_pi_stream",
            sniffed(10, pi::is_stream_record, &["tests/fixtures/agents/pi/mode-json.jsonl"]);
    }
    /// opencode and Kilo CLI: the SQLite store, the legacy `storage/` tree,
    /// `opencode export` and `opencode run --format json`.
    Opencode "opencode", deltas: false, tried: "opencode (SQLite, storage/, export, run --format json)" {
        /// opencode's store rows (and the legacy tree's files) and `run --format json` lines.
        OpencodeLines: |_| Box::new(opencode::lines_decoder()), fuzz: "decode_opencode_lines",
            KindSpec { store: Some("opencode"), ..sniffed(20, opencode::is_run_record, &[
                "tests/fixtures/agents/opencode/opencode.db",
                "tests/fixtures/agents/kilo/kilo.db",
                "tests/fixtures/agents/opencode/run.jsonl",
                "tests/fixtures/agents/opencode/storage",
            ]) };
        /// `opencode export`.
        OpencodeExport: |_| Box::new(opencode::export_decoder()), fuzz: "decode_opencode_export",
            KindSpec { document: true, ..sniffed(100, opencode::is_export, &["tests/fixtures/agents/opencode/export.json"]) };
    }
    /// GitHub Copilot CLI's session events.
    CopilotCli "copilot-cli", deltas: false, tried: "copilot-cli" {
        /// Copilot CLI's `events.jsonl`.
        CopilotEvents: |part| Box::new(copilot::decoder(part)), fuzz: "decode_copilot_events",
            KindSpec { parts: true, ..sniffed(30, copilot::is_event, &[
                "tests/fixtures/agents/copilot/session-state/7e2a9c10-3b4d-4e5f-8a9b-0c1d2e3f4a5b",
            ]) };
    }
    /// OpenHands SDK conversation folders and V0 trajectories.
    Openhands "openhands", deltas: false, tried: "openhands (conversation folder, V0 trajectory)" {
        /// OpenHands SDK events (a conversation folder's files, as lines).
        OpenhandsEvents: |_| Box::new(openhands::events_decoder()), fuzz: "decode_openhands_events",
            sniffed(40, openhands::is_sdk_event, &[
                "tests/fixtures/agents/openhands/conversations/4c1d2e3f4a5b4c6d8e9f0a1b2c3d4e5f",
            ]);
        /// An OpenHands V0 trajectory.
        OpenhandsV0: |_| Box::new(openhands::v0_decoder()), fuzz: "decode_openhands_v0",
            examples(&["tests/fixtures/agents/openhands/trajectory.json"]);
    }
    /// Goose's SQLite store.
    Goose "goose", deltas: false, tried: "goose (SQLite)" {
        /// Goose's store rows.
        GooseRows: |_| Box::new(goose::decoder()), fuzz: "decode_goose_rows",
            store("goose", &["tests/fixtures/agents/goose/sessions.db"]);
    }
    /// Crush's SQLite store.
    Crush "crush", deltas: false, tried: "crush (SQLite)" {
        /// Crush's store rows.
        CrushRows: |_| Box::new(crush::decoder()), fuzz: "decode_crush_rows",
            store("crush", &["tests/fixtures/agents/crush/.crush/crush.db"]);
    }
    /// OpenClaw's SQLite store (`openclaw-agent.sqlite`): pi's session
    /// entries with OpenClaw's own records.
    Openclaw "openclaw", deltas: false, tried: "openclaw (SQLite)" {
        /// OpenClaw's store rows (pi session entries).
        OpenclawRows: |_| Box::new(openclaw::decoder()), fuzz: "decode_openclaw_rows",
            store("openclaw", &["tests/fixtures/agents/openclaw/agents/main/agent/openclaw-agent.sqlite"]);
    }
    /// claude-trace's request/response pairs.
    ClaudeTrace "claude-trace", deltas: true, tried: "claude-trace" {
        /// claude-trace pairs.
        ClaudeTrace: |_| Box::new(claude_trace::decoder()), fuzz: "decode_claude_trace",
            sniffed(50, claude_trace::is_pair, &[
                "tests/fixtures/agents/claude-trace/.claude-trace/log-2026-01-01-00-00-00.jsonl",
            ]);
    }
    /// mini-swe-agent `.traj.json` and SWE-agent `.traj`.
    SweAgent "swe-agent", deltas: false, tried: "swe-agent (.traj.json, .traj)" {
        /// A mini-swe-agent trajectory.
        MiniSwe: |_| Box::new(swe_agent::mini_decoder()), fuzz: "decode_mini_swe",
            KindSpec { document: true, ..sniffed(80, swe_agent::is_named_mini, &[
                "tests/fixtures/agents/swe-agent/app__login-7/app__login-7.traj.json",
            ]) };
        /// A SWE-agent trajectory.
        SweAgent: |_| Box::new(swe_agent::swe_decoder()), fuzz: "decode_swe_agent",
            KindSpec { document: true, ..sniffed(90, swe_agent::is_swe, &["tests/fixtures/agents/swe-agent/app__login-7.traj"]) };
    }
    /// Harbor's Agent Trajectory Interchange Format.
    Atif "atif", deltas: false, tried: "atif" {
        /// An ATIF trajectory.
        Atif: |part| Box::new(atif::decoder(part)), fuzz: "decode_atif",
            KindSpec { document: true, parts: true, ..sniffed(70, atif::is_atif, &[
                "tests/fixtures/agents/atif/jobs/2026-01-01__00-00-00/app-login__Ab12Cd3/agent/trajectory.json",
            ]) };
    }
    /// aider's chat history (best effort).
    Aider "aider", deltas: false, tried: "aider (.aider.chat.history.md)" {
        /// aider's chat history.
        Aider: |_| Box::new(aider::decoder()), fuzz: "decode_aider",
            examples(&["tests/fixtures/agents/aider/.aider.chat.history.md"]);
    }
    /// OpenTelemetry GenAI traces and logs (OTLP/JSON lines).
    Otel "otel", deltas: false, tried: "otel (OTLP/JSON)" {
        /// OTLP/JSON traces and logs.
        Otel: |_| Box::new(otel::decoder()), fuzz: "decode_otel",
            sniffed(60, otel::is_export, &[
                "tests/fixtures/agents/otel/traces.jsonl",
                "tests/fixtures/agents/otel/traces-deprecated.jsonl",
                "tests/fixtures/agents/otel/logs.jsonl",
            ]);
    }
    /// A dataset of one trajectory per line (JSONL): each row a stream.
    Rows "rows", deltas: false, tried: "rows (one trajectory per JSONL line)" {
        /// A dataset: one whole trajectory per JSONL line.
        Rows: |part| Box::new(rows::decoder(part)), fuzz: "decode_rows",
            KindSpec { parts: true, ..examples(&["tests/fixtures/rows/dataset.jsonl"]) };
    }
    /// A Parquet dataset of trajectories: each row a stream.
    Parquet "parquet", deltas: false, tried: "parquet" {
        /// A Parquet dataset (read from its path, row group by row group).
        Parquet: |_| Box::new(rows::ParquetBytes), fuzz: "parquet_rows",
            examples(&["tests/fixtures/rows/dataset.parquet"]);
    }
}

impl Format {
    /// The table's row for this format.
    pub fn entry(self) -> &'static FormatEntry {
        &FORMATS[self as usize]
    }

    /// The usual reading of a format when detection could not refine it:
    /// its first kind in the table.
    pub fn default_kind(self) -> Kind {
        KINDS
            .iter()
            .find(|k| k.format == self)
            .map(|k| k.kind)
            .expect("every format has a kind (a unit test checks it)")
    }
}

impl Kind {
    /// The table's row for this kind.
    pub fn entry(self) -> &'static KindEntry {
        &KINDS[self as usize]
    }
}

/// The kinds told apart by a JSON line test, in the order they are tried.
pub(crate) fn sniffed_kinds() -> &'static [(Sniff, Kind)] {
    static ORDER: std::sync::OnceLock<Vec<(Sniff, Kind)>> = std::sync::OnceLock::new();
    ORDER.get_or_init(|| {
        let mut order: Vec<(Sniff, Kind)> = KINDS.iter().filter_map(|k| Some((k.spec.sniff?, k.kind))).collect();
        order.sort_by_key(|(s, _)| s.order);
        order
    })
}

/// Every format `classify` tries, as its error names them.
pub(crate) fn tried() -> String {
    let names: Vec<&str> = FORMATS.iter().map(|f| f.tried).collect();
    names.join(", ")
}

/// The names `--format` takes, as a sentence's list: `native, …, rows or parquet`.
pub fn names_listed() -> String {
    let names: Vec<&str> = FORMATS.iter().map(|f| f.name).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.concat(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_sit_at_their_index_and_every_format_has_a_kind() {
        for (i, f) in FORMATS.iter().enumerate() {
            assert_eq!(f.format as usize, i);
            assert_eq!(f.format.default_kind().entry().format, f.format);
        }
        for (i, k) in KINDS.iter().enumerate() {
            assert_eq!(k.kind as usize, i);
        }
        let mut names: Vec<&str> = FORMATS.iter().map(|f| f.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FORMATS.len(), "two formats share a name");
        let mut targets: Vec<&str> = KINDS.iter().map(|k| k.fuzz).collect();
        targets.sort_unstable();
        targets.dedup();
        assert_eq!(targets.len(), KINDS.len(), "two kinds share a fuzz target");
    }

    #[test]
    fn sniffs_are_tried_in_their_order() {
        let order: Vec<u16> = sniffed_kinds().iter().map(|(s, _)| s.order).collect();
        assert!(order.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(sniffed_kinds()[0].1, Kind::PiSession);
        assert_eq!(sniffed_kinds().last().map(|(_, k)| *k), Some(Kind::OpencodeExport));
    }
}

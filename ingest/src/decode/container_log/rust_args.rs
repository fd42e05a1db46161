//! Rules that read a Rust server's dump of its command-line arguments at start-up (Hugging
//! Face TGI's and TEI's launchers log `Args { model_id: "…", quantize: None, … }`, with
//! `{:?}` on one line in older versions and `{:#?}` one field per line in newer ones) into
//! one `config_param` event per field, as the trainers' dumps in `config_lines` are read.
//! A serving rollout to another configuration is told by these where no SDK says it.

use super::config_lines;
use super::framework_lines::{Finding, source};

/// What opens the dump: the struct's name and its brace (clap's `Args`).
const OPENER: &str = "Args {";

/// The source a dump is told by, from the logging target on its line.
fn source_of(l: &str) -> &'static str {
    if l.contains("text_generation_launcher") {
        source::TGI
    } else if l.contains("text_embeddings") {
        source::TEI
    } else {
        source::APP
    }
}

use config_lines::{closes, opens};

/// One `name: value` field (its trailing comma gone), if `field` is one.
fn field(source: &'static str, field: &str) -> Option<Finding> {
    let (name, value) = field.trim().split_once(": ")?;
    config_lines::is_name(name).then(|| config_lines::param(source, name, value))
}

/// The fields of a dump kept on one line: `Args { a: 1, b: Some("x, y"), c: [] }`, split
/// at the commas outside quotes and nested values.
pub fn in_one_line(l: &str, out: &mut Vec<Finding>) -> bool {
    let Some(at) = l.find(OPENER) else {
        return false;
    };
    if !(at == 0 || l[..at].ends_with(' ')) {
        return false;
    }
    let body = &l[at + OPENER.len()..];
    let Some(body) = body.trim_end().strip_suffix('}') else {
        return false;
    };
    let source = source_of(&l[..at]);
    let before = out.len();
    for f in config_lines::fields(body) {
        out.extend(field(source, f));
    }
    out.len() > before
}

/// A dump written one field per line (`{:#?}`), followed line by line after its opening
/// line. A nested value (`quantize: Some(` … `Awq,` … `),`) is joined back into one
/// (`Some(Awq)`).
#[derive(Debug)]
pub struct OpenArgs {
    source: &'static str,
    /// The field whose nested value is being read: its name, the value so far, and how
    /// deep the reading is.
    nested: Option<(String, String, usize)>,
}

/// What one line did to an open dump.
#[derive(Debug, PartialEq)]
pub enum Step {
    /// The line was a field: its parameter.
    Param(Finding),
    /// The line was part of a nested value.
    Inside,
    /// The line closed the dump.
    Closed,
    /// The line is not the dump's (it was cut short): read it as any line.
    Outside,
}

impl OpenArgs {
    /// The dump `l` opens, if it opens one whose fields follow on lines of their own.
    pub fn opened(l: &str) -> Option<OpenArgs> {
        let l = l.trim_end();
        let at = l.strip_suffix(OPENER)?;
        // The struct's name stands alone (`INFO text_generation_launcher: Args {`).
        if !(at.is_empty() || at.ends_with(' ')) {
            return None;
        }
        Some(OpenArgs {
            source: source_of(at),
            nested: None,
        })
    }

    /// Reads the next line of the dump.
    pub fn feed(&mut self, l: &str) -> Step {
        let t = l.trim();
        if let Some((name, value, depth)) = self.nested.as_mut() {
            let piece = t.strip_suffix(',').unwrap_or(t);
            let closing = piece.chars().next().is_some_and(closes);
            let opening = piece.chars().last().is_some_and(opens);
            let joined = value.chars().last().is_some_and(opens) || closing;
            if !joined {
                value.push_str(", ");
            }
            value.push_str(piece);
            if closing {
                *depth -= 1;
            } else if opening {
                *depth += 1;
            }
            if *depth == 0 {
                let p = config_lines::param(self.source, name, value);
                self.nested = None;
                return Step::Param(p);
            }
            return Step::Inside;
        }
        if t == "}" {
            return Step::Closed;
        }
        let body = t.strip_suffix(',').unwrap_or(t);
        let Some((name, value)) = body.split_once(": ") else {
            return Step::Outside;
        };
        if !config_lines::is_name(name) {
            return Step::Outside;
        }
        if value.chars().last().is_some_and(opens) && !value.ends_with("{}") {
            self.nested = Some((name.to_string(), value.to_string(), 1));
            return Step::Inside;
        }
        Step::Param(config_lines::param(self.source, name, value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(f: &Finding) -> (String, String, &'static str) {
        match f {
            Finding::Event(e) => {
                assert_eq!(e.kind, config_lines::CONFIG_PARAM);
                let get = |k| e.get(k).unwrap_or_default().to_string();
                (get("param"), get("value"), e.source)
            }
            other => panic!("not an event: {other:?}"),
        }
    }

    fn p(name: &str, value: &str) -> (String, String, &'static str) {
        (name.to_string(), value.to_string(), source::TGI)
    }

    /// TGI 1.x's `{:?}` form, as TGI's own issue reports quote it.
    #[test]
    fn a_dump_on_one_line() {
        let l = r#"2024-02-29T03:25:43.199673Z  INFO text_generation_launcher: Args { model_id: "/data/Qwen1.5-72B-Chat-AWQ", revision: None, num_shard: Some(2), quantize: Some(Awq), hostname: "da76de2c69f1", cors_allow_origin: [], note: "a, b", env: false }"#;
        let mut out = Vec::new();
        assert!(in_one_line(l, &mut out));
        let got: Vec<_> = out.iter().map(named).collect();
        assert_eq!(
            got,
            [
                p("model_id", "\"/data/Qwen1.5-72B-Chat-AWQ\""),
                p("revision", "None"),
                p("num_shard", "Some(2)"),
                p("quantize", "Some(Awq)"),
                p("hostname", "\"da76de2c69f1\""),
                p("cors_allow_origin", "[]"),
                p("note", "\"a, b\""),
                p("env", "false"),
            ]
        );
        assert!(!in_one_line("INFO router: Args { model_id", &mut out));
    }

    /// TGI 2.x's `{:#?}` form: one field per line, nested values over several.
    #[test]
    fn a_dump_over_many_lines() {
        let head = "2024-12-10T16:33:13.791677Z  INFO text_generation_launcher: Args {";
        let mut open = OpenArgs::opened(head).expect("opens");
        let lines = [
            "    model_id: \"meta-llama/Llama-3.1-8B-Instruct\",",
            "    quantize: Some(",
            "        Awq,",
            "    ),",
            "    max_input_tokens: Some(",
            "        4096,",
            "    ),",
            "    cors_allow_origin: [],",
            "    lora_adapters: Some(",
            "        [",
            "            \"a\",",
            "            \"b\",",
            "        ],",
            "    ),",
            "    env: false,",
        ];
        let mut got = Vec::new();
        for l in lines {
            match open.feed(l) {
                Step::Param(f) => got.push(named(&f)),
                Step::Inside => {}
                other => panic!("{l}: {other:?}"),
            }
        }
        assert_eq!(
            got,
            [
                p("model_id", "\"meta-llama/Llama-3.1-8B-Instruct\""),
                p("quantize", "Some(Awq)"),
                p("max_input_tokens", "Some(4096)"),
                p("cors_allow_origin", "[]"),
                p("lora_adapters", "Some([\"a\", \"b\"])"),
                p("env", "false"),
            ]
        );
        assert_eq!(open.feed("}"), Step::Closed);
        // A line that is not a field ends a dump cut short.
        let mut open = OpenArgs::opened(head).expect("opens");
        assert_eq!(
            open.feed("2024-12-10T16:33:14Z  INFO text_generation_launcher: Starting download"),
            Step::Outside
        );
        // Not an opening: a word ending in `Args {`, or the one-line form.
        assert!(OpenArgs::opened("struct MyArgs {").is_none());
        assert!(OpenArgs::opened("INFO x: Args { a: 1 }").is_none());
    }
}

//! Rules that read a trainer's dump of its own configuration at start-up into one
//! `config_param` event per parameter (attrs `param`, `value`): DeepSpeed's
//! `DeepSpeedEngine configuration:` block (`[config.py:NNN:print]   name ...... value`),
//! MaxText's `Config param name: value` lines, and Hugging Face's `TrainingArguments`
//! dump (`Training/evaluation parameters TrainingArguments(` then `name=value,` one per
//! line up to `)`), whether the logging framework kept its lines together in one message
//! or wrote them as lines of their own (then the decoder follows the block, see
//! [`hf_args_opened`] and [`hf_arg`]). Without an SDK, these are what tells one run's
//! configuration from the previous one's (`framework.config_change`).

use whyslow_schemas::Severity;

use super::framework_lines::{EventFinding, Finding, source};

/// The event kind of one configuration parameter a trainer logged.
pub const CONFIG_PARAM: &str = "config_param";

/// What opens Hugging Face's `TrainingArguments` dump.
const HF_ARGS: &str = "TrainingArguments(";

/// Values longer than this are cut (a parameter's value is evidence, not a payload).
const MAX_VALUE: usize = 512;

pub(super) fn param(source: &'static str, name: &str, value: &str) -> Finding {
    let value = value.trim();
    let value = &value[..value.floor_char_boundary(MAX_VALUE)];
    Finding::Event(
        EventFinding::new(CONFIG_PARAM, Severity::Info, source)
            .attr("param", name)
            .attr("value", value),
    )
}

/// The message of a `config_param` event: `name=value`.
pub fn message(e: &EventFinding) -> String {
    let get = |k| e.get(k).unwrap_or_default();
    format!("{}={}", get("param"), get("value"))
}

/// A parameter name: a Python identifier (dotted for nested keys).
pub(super) fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// DeepSpeed's `[config.py:958:print]   amp_enabled .................. False` (the name
/// indented by two spaces; dots pad short names, two spaces follow long ones). A value
/// that opens a multi-line JSON block (`{`) is left out.
fn deepspeed(l: &str, out: &mut Vec<Finding>) -> bool {
    let Some(at) = l.find("[config.py:") else {
        return false;
    };
    let Some(rest) = l[at..]
        .find(":print]")
        .map(|i| &l[at + i + ":print]".len()..])
    else {
        return false;
    };
    if !rest.starts_with("   ") {
        return false; // the block's header, `DeepSpeedEngine configuration:`
    }
    let rest = rest.trim_start();
    let (name, value) = rest.split_once(' ').unwrap_or((rest, ""));
    let value = value.trim_start().trim_start_matches('.').trim();
    if !is_name(name) || value.is_empty() || value == "{" {
        return false;
    }
    out.push(param(source::DEEPSPEED, name, value));
    true
}

/// MaxText's `Config param per_device_batch_size: 12.0`.
fn maxtext(l: &str, out: &mut Vec<Finding>) -> bool {
    let Some(rest) = l
        .find("Config param ")
        .map(|i| &l[i + "Config param ".len()..])
    else {
        return false;
    };
    let Some((name, value)) = rest.split_once(':') else {
        return false;
    };
    if !is_name(name) {
        return false;
    }
    out.push(param(source::MAXTEXT, name, value));
    true
}

/// One `name=value,` line of Hugging Face's `TrainingArguments` dump, if `l` is one.
pub fn hf_arg(l: &str) -> Option<Finding> {
    let l = l.trim();
    let body = l.strip_suffix(',').unwrap_or(l);
    let (name, value) = body.split_once('=')?;
    is_name(name).then(|| param(source::HUGGINGFACE, name, value))
}

/// Whether `l` opens a `TrainingArguments` dump whose parameters follow on lines of
/// their own.
pub fn hf_args_opened(l: &str) -> bool {
    l.trim_end().ends_with(HF_ARGS)
}

/// Whether `l` closes a `TrainingArguments` dump.
pub fn hf_args_closed(l: &str) -> bool {
    l.trim() == ")"
}

/// A `TrainingArguments` dump kept in one message (its lines joined by newlines, as a
/// JSON or other structured log record keeps a multi-line message).
fn hf_in_one_message(l: &str, out: &mut Vec<Finding>) -> bool {
    let Some(rest) = l.find(HF_ARGS).map(|i| &l[i + HF_ARGS.len()..]) else {
        return false;
    };
    if !rest.starts_with('\n') && !rest.starts_with("\r\n") {
        return false;
    }
    let before = out.len();
    for line in rest.lines().skip(1) {
        if hf_args_closed(line) {
            break;
        }
        out.extend(hf_arg(line));
    }
    out.len() > before
}

/// Whether `c` opens a nested value in a dumped structure (`Some(`, `[`, `{`).
pub(super) fn opens(c: char) -> bool {
    matches!(c, '(' | '[' | '{')
}

/// Whether `c` closes one.
pub(super) fn closes(c: char) -> bool {
    matches!(c, ')' | ']' | '}')
}

/// The fields of a dumped structure's body (`a: 1, b: Some("x, y"), c: []`, `a=1,
/// b='x, y'`), split at the commas outside quotes and nested values.
pub(super) fn fields(body: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut quote, mut escaped, mut from) = (0usize, None, false, 0);
    for (i, c) in body.char_indices() {
        if let Some(q) = quote {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                c if c == q => quote = None,
                _ => {}
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            c if opens(c) => depth += 1,
            c if closes(c) => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&body[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    out.push(&body[from..]);
    out
}

/// A Python server's arguments as it logs them at start-up: the `argparse.Namespace`
/// repr (vLLM's `api_server.py:586] args: Namespace(model='…', max_num_seqs=48, …)`)
/// or the dict of the ones that differ from the defaults (later vLLM's `non-default
/// args: {'model': '…', 'max_num_seqs': 48}`). A serving rollout to another configuration
/// is told by these where no SDK says it.
fn python_args(l: &str, out: &mut Vec<Finding>) -> bool {
    let source = if l.contains("vllm") || l.contains("api_server.py") || l.contains("cli_args.py") {
        source::VLLM
    } else {
        source::APP
    };
    let before = out.len();
    if let Some(body) =
        after_first(l, "args: Namespace(").and_then(|b| b.trim_end().strip_suffix(')'))
    {
        for f in fields(body) {
            if let Some((name, value)) = f.trim().split_once('=')
                && is_name(name)
            {
                out.push(param(source, name, value));
            }
        }
    } else if let Some(body) =
        after_first(l, "non-default args: {").and_then(|b| b.trim_end().strip_suffix('}'))
    {
        for f in fields(body) {
            if let Some((name, value)) = f.trim().split_once(": ")
                && let Some(name) = name.strip_prefix('\'').and_then(|n| n.strip_suffix('\''))
                && is_name(name)
            {
                out.push(param(source, name, value));
            }
        }
    }
    out.len() > before
}

/// What follows the first `pat` in `l`.
fn after_first<'a>(l: &'a str, pat: &str) -> Option<&'a str> {
    l.find(pat).map(|i| &l[i + pat.len()..])
}

/// Reads one line of a configuration dump into `out`; returns whether it was one.
pub fn config_dump(l: &str, out: &mut Vec<Finding>) -> bool {
    deepspeed(l, out)
        || maxtext(l, out)
        || hf_in_one_message(l, out)
        || super::rust_args::in_one_line(l, out)
        || python_args(l, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(l: &str) -> Vec<(String, String, &'static str)> {
        let mut out = Vec::new();
        config_dump(l, &mut out);
        out.into_iter()
            .map(|f| match f {
                Finding::Event(e) => {
                    assert_eq!(e.kind, CONFIG_PARAM);
                    let get = |k| e.get(k).unwrap_or_default().to_string();
                    (get("param"), get("value"), e.source)
                }
                other => panic!("not an event: {other:?}"),
            })
            .collect()
    }

    fn p(name: &str, value: &str, source: &'static str) -> (String, String, &'static str) {
        (name.to_string(), value.to_string(), source)
    }

    /// Every line of the real DeepSpeed log (`fixtures/samples/training-logs`): its
    /// engine configuration block gives its parameters, and no other line gives any.
    #[test]
    fn the_deepspeed_sample_gives_its_engine_configuration() {
        let text = include_str!(
            "../../../../fixtures/samples/training-logs/kubeflow-trainer-deepspeed-mpi-t5-8ranks.log"
        );
        let found: Vec<_> = text.lines().flat_map(params).collect();
        assert!(found.len() >= 60, "{}", found.len());
        assert!(found.iter().all(|f| f.2 == source::DEEPSPEED));
        assert!(found.contains(&p("amp_enabled", "False", source::DEEPSPEED)));
        assert!(found.contains(&p("dataloader_drop_last", "False", source::DEEPSPEED)));
        // Multi-line JSON values are left out, not read as `{`.
        assert!(!found.iter().any(|f| f.1 == "{"));
        assert!(
            !found
                .iter()
                .any(|f| f.0 == "activation_checkpointing_config")
        );
        let names: std::collections::BTreeSet<_> = found.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(names.len(), found.len(), "one line per parameter");
    }

    #[test]
    fn maxtext_and_hugging_face_dumps() {
        assert_eq!(
            params("I1029 12:00:01.123 Config param remat_policy: full"),
            [p("remat_policy", "full", source::MAXTEXT)]
        );
        assert_eq!(
            params("Config param data_sharding: (('data', 'fsdp'),)"),
            [p("data_sharding", "(('data', 'fsdp'),)", source::MAXTEXT)]
        );
        let one = "Training/evaluation parameters TrainingArguments(\n_n_gpu=1,\n\
                   gradient_checkpointing=True,\nlearning_rate=2e-05,\n)";
        assert_eq!(
            params(one),
            [
                p("_n_gpu", "1", source::HUGGINGFACE),
                p("gradient_checkpointing", "True", source::HUGGINGFACE),
                p("learning_rate", "2e-05", source::HUGGINGFACE),
            ]
        );
        // Lines of their own: the decoder follows the block.
        assert!(hf_args_opened(
            "[INFO|run_clm.py:250] 2026-11-29 09:00:01,000 >> Training/evaluation parameters TrainingArguments("
        ));
        assert_eq!(
            hf_arg("per_device_train_batch_size=8,"),
            Some(param(
                source::HUGGINGFACE,
                "per_device_train_batch_size",
                "8"
            ))
        );
        assert!(hf_args_closed(")"));
        // Not configuration: prose, a log line's own `key=value` talk.
        for l in [
            "Config param",
            "[config.py:954:print] DeepSpeedEngine configuration:",
            "[config.py:944:print_user_config]   json = {",
            "loss=0.5, step=10",
        ] {
            assert!(params(l).is_empty(), "{l}");
        }
        assert_eq!(hf_arg("this is not = a parameter"), None);
    }

    /// vLLM's two start-up dumps of its arguments: V0's `Namespace` repr and the later
    /// dict of non-default arguments; values keep their quotes, nested values whole.
    #[test]
    fn a_serving_engines_arguments() {
        let v0 = "INFO 12-14 13:08:06 api_server.py:586] args: Namespace(subparser='serve', \
                  host=None, port=8000, allowed_origins=['*', 'a,b'], model='/models/Llama-3.1-70B', \
                  tensor_parallel_size=4, max_num_seqs=48, served_model_name=['llama'])";
        assert_eq!(
            params(v0),
            [
                p("subparser", "'serve'", source::VLLM),
                p("host", "None", source::VLLM),
                p("port", "8000", source::VLLM),
                p("allowed_origins", "['*', 'a,b']", source::VLLM),
                p("model", "'/models/Llama-3.1-70B'", source::VLLM),
                p("tensor_parallel_size", "4", source::VLLM),
                p("max_num_seqs", "48", source::VLLM),
                p("served_model_name", "['llama']", source::VLLM),
            ]
        );
        let v1 = "INFO 06-10 09:00:01 [cli_args.py:325] non-default args: {'model': \
                  'Qwen/Qwen3-8B', 'max_num_seqs': 64, 'compilation_config': {'level': 3}}";
        assert_eq!(
            params(v1),
            [
                p("model", "'Qwen/Qwen3-8B'", source::VLLM),
                p("max_num_seqs", "64", source::VLLM),
                p("compilation_config", "{'level': 3}", source::VLLM),
            ]
        );
        // An application's own `Namespace` dump is read too, as the application's.
        assert_eq!(
            params("args: Namespace(lr=0.1)"),
            [p("lr", "0.1", source::APP)]
        );
        assert!(params("args: Namespace(cut short").is_empty());
    }
}

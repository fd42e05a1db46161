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

fn param(source: &'static str, name: &str, value: &str) -> Finding {
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
fn is_name(s: &str) -> bool {
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

/// Reads one line of a configuration dump into `out`; returns whether it was one.
pub fn config_dump(l: &str, out: &mut Vec<Finding>) -> bool {
    deepspeed(l, out) || maxtext(l, out) || hf_in_one_message(l, out)
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
}

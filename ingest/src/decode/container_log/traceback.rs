//! A Python traceback spread over many log lines, followed line by line until its final
//! exception line (`Type: message`), chained tracebacks included, so that it becomes one
//! event with the exception's type.

use super::framework_lines::{EventFinding, exception_event};

/// The first line of every Python traceback.
pub const HEADER: &str = "Traceback (most recent call last):";

const CHAIN_MARKERS: [&str; 2] = [
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
];

/// What a line did to an open traceback.
#[derive(Debug, PartialEq)]
pub enum Feed {
    /// The line belongs to the traceback.
    Consumed,
    /// The traceback ended before this line; the line is the caller's to read.
    Ended(Option<EventFinding>),
}

/// An open traceback. `T` is whatever the caller dates lines with.
#[derive(Debug)]
pub struct Traceback<T> {
    frames: u32,
    /// The last exception line seen (`type`, `message`) and the time of its line.
    exception: Option<(String, String, T)>,
    after_exception: bool,
}

/// `torch.OutOfMemoryError: CUDA out of memory…` → (`torch.OutOfMemoryError`, `CUDA …`);
/// `KeyboardInterrupt` → (`KeyboardInterrupt`, ``). `None` if the line is not one.
pub fn exception_line(l: &str) -> Option<(&str, &str)> {
    let (name, message) = match l.split_once(':') {
        Some((n, m)) if m.is_empty() || m.starts_with(' ') => (n, m.trim()),
        Some(_) => return None,
        None => (l.trim_end(), ""),
    };
    let ok = !name.is_empty()
        && name.len() <= 200
        && name
            .bytes()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.');
    ok.then_some((name, message))
}

/// Whether `name` reads as an exception type by Python's naming (`RuntimeError`,
/// `torch.OutOfMemoryError`, `KeyboardInterrupt`, `SystemExit`): a frameless line after a
/// traceback's header is taken as its exception only then.
fn names_an_exception(name: &str) -> bool {
    let last = name.rsplit('.').next().unwrap_or(name);
    ["Error", "Exception", "Interrupt", "Exit"]
        .iter()
        .any(|suffix| last.len() > suffix.len() && last.ends_with(suffix))
}

impl<T: Copy> Traceback<T> {
    /// A traceback whose header line was just seen.
    pub fn new() -> Self {
        Traceback {
            frames: 0,
            exception: None,
            after_exception: false,
        }
    }

    /// Reads the next line of the same stream, dated `time`.
    pub fn feed(&mut self, line: &str, time: T) -> Feed {
        let trimmed = line.trim_end();
        if trimmed == HEADER || CHAIN_MARKERS.contains(&trimmed) {
            self.after_exception = false;
            return Feed::Consumed;
        }
        if trimmed.is_empty() {
            return Feed::Consumed;
        }
        if self.after_exception {
            return Feed::Ended(self.take_event());
        }
        if line.starts_with([' ', '\t']) {
            self.frames += 1;
            return Feed::Consumed;
        }
        match exception_line(trimmed) {
            // A traceback cut to its exception line (a log shipper's or a wrapper's
            // summary) still tells the exception, where the line names one by its type.
            Some((name, message)) if self.frames > 0 || names_an_exception(name) => {
                self.exception = Some((name.to_string(), message.to_string(), time));
                self.after_exception = true;
                Feed::Consumed
            }
            _ => Feed::Ended(self.take_event()),
        }
    }

    /// The event for the traceback so far (at the end of the input), if it reached an
    /// exception line.
    pub fn take_event(&mut self) -> Option<EventFinding> {
        self.exception.as_ref().map(|(t, m, _)| {
            let mut e = exception_event(t, m);
            e.attrs.push(("frames", self.frames.to_string()));
            e
        })
    }

    /// Whether the traceback reached its exception line and nothing has followed it: it
    /// is whole unless a chained traceback (`During handling of …`) comes next.
    pub fn is_complete(&self) -> bool {
        self.after_exception && self.exception.is_some()
    }

    /// The time of the exception line, if one was read.
    pub fn exception_time(&self) -> Option<T> {
        self.exception.as_ref().map(|e| e.2)
    }

    /// The exception line as written (`Type: message`), for the event's message.
    pub fn exception_text(&self) -> Option<String> {
        self.exception.as_ref().map(|(t, m, _)| {
            if m.is_empty() {
                t.clone()
            } else {
                format!("{t}: {m}")
            }
        })
    }
}

impl<T: Copy> Default for Traceback<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chained_traceback_ends_at_the_last_exception() {
        let lines = [
            "  File \"train.py\", line 10, in <module>",
            "    main()",
            "KeyError: 'x'",
            "",
            "During handling of the above exception, another exception occurred:",
            "",
            "Traceback (most recent call last):",
            "  File \"train.py\", line 12, in <module>",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79 GiB",
        ];
        let mut tb = Traceback::new();
        for (i, l) in lines.iter().enumerate() {
            assert_eq!(tb.feed(l, i), Feed::Consumed, "line {i}");
            assert_eq!(tb.is_complete(), i == 2 || i == 3 || i == 8, "line {i}");
        }
        let Feed::Ended(Some(e)) = tb.feed("step 3 done", 99) else {
            panic!("not ended")
        };
        assert_eq!(e.kind, "cuda_oom");
        assert_eq!(tb.exception_time(), Some(8));
    }

    #[test]
    fn a_traceback_cut_to_its_exception_line_still_tells_it() {
        let mut tb = Traceback::new();
        assert_eq!(tb.feed(HEADER, 0), Feed::Consumed);
        assert_eq!(
            tb.feed("RuntimeError: CUDA error: unspecified launch failure", 1),
            Feed::Consumed
        );
        let Feed::Ended(Some(e)) = tb.feed("E1129 09:50:00.900000000 1 api.py:869] failed", 2)
        else {
            panic!("not ended")
        };
        assert_eq!(
            (e.kind, e.reason.as_deref()),
            ("exception", Some("RuntimeError"))
        );
        // Not a type by its name: no exception, whatever its colon.
        let mut tb: Traceback<u8> = Traceback::new();
        tb.feed(HEADER, 0);
        assert_eq!(tb.feed("Note: retrying", 1), Feed::Ended(None));
        assert!(!names_an_exception("Error"));
    }

    #[test]
    fn a_header_with_no_frames_is_no_traceback() {
        let mut tb: Traceback<u8> = Traceback::new();
        assert_eq!(tb.feed("Epoch 1 done", 0), Feed::Ended(None));
        assert_eq!(
            exception_line("torch.distributed.DistBackendError: NCCL error"),
            Some(("torch.distributed.DistBackendError", "NCCL error"))
        );
        assert_eq!(exception_line("http://x"), None);
        assert_eq!(exception_line("two words: x"), None);
    }
}

//! The ingest summary: per format and in total, every record and every row accounted
//! for, with the two identities that must hold printed beside the numbers.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use whyslow_schemas::Table;

use crate::decode::{Counts, Format};

/// Row counts of the three stored tables.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableRows {
    pub events: u64,
    pub metrics: u64,
    pub dead_letters: u64,
}

impl TableRows {
    /// Adds `n` rows of `table` (derived tables are not counted here).
    pub fn add(&mut self, table: Table, n: u64) {
        match table {
            Table::Events => self.events += n,
            Table::Metrics => self.metrics += n,
            Table::DeadLetters => self.dead_letters += n,
            Table::Slowdowns | Table::Causes | Table::Incidents => {}
        }
    }

    /// All rows.
    pub fn total(&self) -> u64 {
        self.events + self.metrics + self.dead_letters
    }

    fn merge(&mut self, o: &TableRows) {
        self.events += o.events;
        self.metrics += o.metrics;
        self.dead_letters += o.dead_letters;
    }
}

/// What happened to the inputs of one format.
#[derive(Debug, Clone, Default)]
pub struct FormatSummary {
    /// Inputs (files, stdin) read with this format.
    pub inputs: u64,
    /// Records read, and what became of them (the decoders' tallies).
    pub counts: Counts,
    /// Rows handed to the store, per table.
    pub handed: TableRows,
    /// Rows the store wrote (new), per table.
    pub written: TableRows,
    /// Rows the store already held (or that repeated within the run), per table.
    pub duplicates: TableRows,
}

impl FormatSummary {
    fn merge(&mut self, o: &FormatSummary) {
        self.inputs += o.inputs;
        self.counts.add(&o.counts);
        self.handed.merge(&o.handed);
        self.written.merge(&o.written);
        self.duplicates.merge(&o.duplicates);
    }

    /// Checks `records = produced + skipped + rejected` and
    /// `rows handed = written + duplicates` (per table).
    pub fn check(&self) -> Result<(), String> {
        let c = &self.counts;
        if !c.balances() {
            return Err(format!(
                "records {} != produced {} + skipped {} + rejected {}",
                c.records, c.produced, c.skipped, c.rejected
            ));
        }
        let (h, w, d) = (&self.handed, &self.written, &self.duplicates);
        for (name, h, w, d) in [
            ("events", h.events, w.events, d.events),
            ("metrics", h.metrics, w.metrics, d.metrics),
            (
                "dead_letters",
                h.dead_letters,
                w.dead_letters,
                d.dead_letters,
            ),
        ] {
            if h != w + d {
                return Err(format!("{name} rows {h} != written {w} + duplicates {d}"));
            }
        }
        Ok(())
    }
}

/// The outcome of `whyslow ingest`.
#[derive(Debug, Clone, Default)]
pub struct IngestSummary {
    /// Per format read.
    pub formats: BTreeMap<Format, FormatSummary>,
    /// Inputs that could not be listed, opened or read: one sentence each.
    pub failures: Vec<String>,
    /// Bytes read from the inputs (compressed size for gzip).
    pub bytes_read: u64,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl IngestSummary {
    /// All formats together.
    pub fn total(&self) -> FormatSummary {
        let mut t = FormatSummary::default();
        for f in self.formats.values() {
            t.merge(f);
        }
        t
    }

    /// Checks both identities for every format and the total.
    pub fn check(&self) -> Result<(), String> {
        for (format, f) in &self.formats {
            f.check().map_err(|e| format!("{format}: {e}"))?;
        }
        self.total().check().map_err(|e| format!("total: {e}"))
    }

    /// The summary as printed by `whyslow ingest`: a table per format, then the identities.
    pub fn render(&self) -> String {
        let t = self.total();
        let secs = self.elapsed.as_secs_f64();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "ingested {} input{} ({:.1} MB) in {:.2} s: {:.0} records/s",
            t.inputs,
            if t.inputs == 1 { "" } else { "s" },
            self.bytes_read as f64 / 1e6,
            secs,
            if secs > 0.0 {
                t.counts.records as f64 / secs
            } else {
                0.0
            }
        );
        let header = [
            "format",
            "records",
            "events",
            "metrics",
            "duplicates",
            "skipped",
            "rejected",
        ];
        let mut rows: Vec<[String; 7]> = vec![header.map(String::from)];
        let line = |name: &str, f: &FormatSummary| {
            [
                name.to_string(),
                f.counts.records.to_string(),
                f.written.events.to_string(),
                f.written.metrics.to_string(),
                (f.duplicates.events + f.duplicates.metrics).to_string(),
                f.counts.skipped.to_string(),
                f.counts.rejected.to_string(),
            ]
        };
        for (format, f) in &self.formats {
            rows.push(line(format.name(), f));
        }
        if self.formats.len() != 1 {
            rows.push(line("total", &t));
        }
        let widths: Vec<usize> = (0..7)
            .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
            .collect();
        for r in &rows {
            let mut l = format!("{:<w$}", r[0], w = widths[0]);
            for (cell, w) in r.iter().zip(&widths).skip(1) {
                let _ = write!(l, "  {cell:>w$}");
            }
            let _ = writeln!(s, "{}", l.trim_end());
        }
        let c = &t.counts;
        let _ = writeln!(
            s,
            "records: {} read = {} produced + {} skipped + {} rejected to dead_letters",
            c.records, c.produced, c.skipped, c.rejected
        );
        let (h, w, d) = (&t.handed, &t.written, &t.duplicates);
        let _ = writeln!(
            s,
            "rows: {} = {} written ({} events, {} metrics, {} dead letters) + {} duplicates skipped",
            h.total(),
            w.total(),
            w.events,
            w.metrics,
            w.dead_letters,
            d.total()
        );
        if let Err(e) = self.check() {
            let _ = writeln!(s, "accounting error: {e}");
        }
        if !self.failures.is_empty() {
            let _ = writeln!(
                s,
                "{} input(s) could not be read (see stderr)",
                self.failures.len()
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_are_checked_and_printed() {
        let mut s = IngestSummary::default();
        let f = s.formats.entry(Format::Envelope).or_default();
        f.inputs = 2;
        f.counts = Counts {
            records: 10,
            produced: 7,
            skipped: 1,
            rejected: 2,
            events: 3,
            metrics: 4,
        };
        f.handed = TableRows {
            events: 3,
            metrics: 4,
            dead_letters: 2,
        };
        f.written = TableRows {
            events: 1,
            metrics: 4,
            dead_letters: 2,
        };
        f.duplicates = TableRows {
            events: 2,
            metrics: 0,
            dead_letters: 0,
        };
        assert_eq!(s.check(), Ok(()));
        let text = s.render();
        assert!(
            text.contains("records: 10 read = 7 produced + 1 skipped + 2 rejected"),
            "{text}"
        );
        assert!(
            text.contains(
                "rows: 9 = 7 written (1 events, 4 metrics, 2 dead letters) + 2 duplicates"
            ),
            "{text}"
        );
        assert!(
            text.contains("envelope       10       1        4           2        1         2"),
            "{text}"
        );

        s.formats.get_mut(&Format::Envelope).unwrap().written.events = 2;
        assert!(
            s.check()
                .unwrap_err()
                .contains("events rows 3 != written 2 + duplicates 2")
        );
        assert!(s.render().contains("accounting error"));
        s.formats.get_mut(&Format::Envelope).unwrap().counts.skipped = 0;
        assert!(s.check().unwrap_err().contains("records 10 != produced 7"));
    }
}

//! `whyslow replay` as a library call: retries `dead_letters` with today's decoders, then
//! rebuilds the derived tables (`slowdowns`, `causes`) from the raw log with today's
//! detectors and rules, and says what changed.
//!
//! Order matters: dead letters first, since rows they recover can change the analysis.
//! The derived tables are rewritten only when their rows differ from the rebuilt ones, so
//! a replay with nothing to do writes nothing (a second replay is a no-op).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use arrow::array::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::prelude::SessionContext;
use whyslow_ingest::redecode::{RedecodeError, RedecodeOptions, RedecodeSummary, redecode_store};

use crate::AnalyzeError;
use crate::analyze::{Analysis, Selection, analyze};
use crate::columns::Columns;
use crate::output::{causes_batch, persist, slowdowns_batch};
use crate::report::markdown::human_seconds;
use crate::sql::{self, SqlFile};
use crate::symptoms::DetectorConfig;

/// What `whyslow replay` was asked to do.
#[derive(Debug, Clone)]
pub struct ReplayRequest {
    /// The store directory.
    pub store: PathBuf,
    /// Retry `dead_letters`.
    pub dead_letters: bool,
    /// Rebuild `slowdowns` and `causes`.
    pub derived: bool,
    /// How to retry dead letters (a format to try instead, ingest-time hints).
    pub redecode: RedecodeOptions,
}

impl ReplayRequest {
    /// Everything: dead letters with their own formats, then the derived tables.
    pub fn new(store: impl Into<PathBuf>) -> Self {
        ReplayRequest {
            store: store.into(),
            dead_letters: true,
            derived: true,
            redecode: RedecodeOptions::default(),
        }
    }
}

/// Why a replay failed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// There is no store to replay.
    #[error("no store at {0} (run whyslow ingest first)")]
    NoStore(PathBuf),
    /// Retrying the dead letters failed (nothing of it was committed).
    #[error("retrying dead letters: {0}")]
    Redecode(#[from] RedecodeError),
    /// Reading the derived tables, analyzing or writing the result failed.
    #[error(transparent)]
    Analyze(#[from] AnalyzeError),
}

/// One slowdown as the derived tables hold it, reduced to what a change is measured on.
#[derive(Debug, Clone, PartialEq)]
pub struct SlowdownState {
    pub slowdown_id: String,
    /// `stall`, `regression`, ….
    pub kind: String,
    pub namespace: Option<String>,
    pub workload: Option<String>,
    pub lost_seconds: f64,
    /// Its cause ids in rank order; the first is the verdict.
    pub causes: Vec<String>,
}

impl SlowdownState {
    /// The rank-1 cause.
    pub fn verdict(&self) -> Option<&str> {
        self.causes.first().map(String::as_str)
    }

    fn label(&self) -> String {
        format!(
            "{} of {}/{}",
            self.kind,
            self.namespace.as_deref().unwrap_or("-"),
            self.workload.as_deref().unwrap_or("-")
        )
    }
}

/// How one slowdown (by `slowdown_id`) differs between the old and rebuilt tables.
#[derive(Debug, Clone, PartialEq)]
pub struct SlowdownChange {
    /// As stored before the replay (`None`: new).
    pub before: Option<SlowdownState>,
    /// As rebuilt (`None`: gone).
    pub after: Option<SlowdownState>,
}

/// Lost-time differences below this many seconds are rounding, not a change.
const LOST_EPSILON: f64 = 1e-6;

impl SlowdownChange {
    fn empty() -> Self {
        SlowdownChange {
            before: None,
            after: None,
        }
    }

    /// A slowdown the old tables did not have.
    pub fn added(&self) -> bool {
        self.before.is_none()
    }

    /// A slowdown the rebuilt tables no longer have.
    pub fn removed(&self) -> bool {
        self.after.is_none()
    }

    /// Same slowdown, another first cause.
    pub fn verdict_changed(&self) -> bool {
        matches!((&self.before, &self.after), (Some(b), Some(a)) if b.verdict() != a.verdict())
    }

    /// Same slowdown, another lost time.
    pub fn lost_changed(&self) -> bool {
        matches!((&self.before, &self.after),
            (Some(b), Some(a)) if (b.lost_seconds - a.lost_seconds).abs() > LOST_EPSILON)
    }

    /// Same slowdown and verdict, other candidate causes or another order of them.
    pub fn ranking_changed(&self) -> bool {
        matches!((&self.before, &self.after),
            (Some(b), Some(a)) if b.verdict() == a.verdict() && b.causes != a.causes)
    }

    fn id(&self) -> &str {
        match (&self.after, &self.before) {
            (Some(s), _) | (None, Some(s)) => &s.slowdown_id,
            (None, None) => "",
        }
    }
}

/// What rebuilding the derived tables changed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DerivedSummary {
    pub slowdowns_before: usize,
    pub slowdowns_after: usize,
    /// `causes` rows.
    pub causes_before: usize,
    pub causes_after: usize,
    /// Every slowdown that was added, removed or changed, by `slowdown_id`.
    pub changes: Vec<SlowdownChange>,
    /// Whether the tables were rewritten (their rows differed in any column).
    pub rewritten: bool,
}

impl DerivedSummary {
    fn count(&self, f: impl Fn(&SlowdownChange) -> bool) -> usize {
        self.changes.iter().filter(|c| f(c)).count()
    }

    /// Slowdowns added.
    pub fn added(&self) -> usize {
        self.count(SlowdownChange::added)
    }

    /// Slowdowns removed.
    pub fn removed(&self) -> usize {
        self.count(SlowdownChange::removed)
    }

    /// Slowdowns whose verdict changed.
    pub fn verdicts_changed(&self) -> usize {
        self.count(SlowdownChange::verdict_changed)
    }

    /// Slowdowns whose lost time changed.
    pub fn lost_changed(&self) -> usize {
        self.count(SlowdownChange::lost_changed)
    }
}

/// What a replay did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplaySummary {
    /// The dead-letter retry, if asked for.
    pub dead_letters: Option<RedecodeSummary>,
    /// The rebuild of the derived tables, if asked for.
    pub derived: Option<DerivedSummary>,
}

/// Runs `whyslow replay`.
pub async fn replay(req: &ReplayRequest) -> Result<ReplaySummary, ReplayError> {
    // A location that is no directory (a URL) is refused by the store when opened.
    if whyslow_store::local_root(&req.store).is_ok_and(|root| !root.exists()) {
        return Err(ReplayError::NoStore(req.store.clone()));
    }
    let mut summary = ReplaySummary::default();
    if req.dead_letters {
        summary.dead_letters = Some(redecode_store(&req.store, &req.redecode)?);
    }
    if req.derived {
        summary.derived = Some(rebuild(&req.store).await?);
    }
    Ok(summary)
}

/// Rebuilds `slowdowns` and `causes` from the log and replaces them when they differ.
pub async fn rebuild(store: &std::path::Path) -> Result<DerivedSummary, ReplayError> {
    let ctx = session(store).await?;
    let analysis = analyze(&ctx, &Selection::default(), &DetectorConfig::default()).await?;
    Ok(save_derived(&ctx, store, &analysis).await?)
}

/// The one rule by which the derived tables are written (`replay`, `report --persist`):
/// `analysis` (of the whole store) replaces `slowdowns` and `causes` in one writer turn,
/// only when its rows differ from the stored ones; says what changed. `ctx` is a session
/// over the store, for the stored rows.
pub async fn save_derived(
    ctx: &SessionContext,
    store: &std::path::Path,
    analysis: &Analysis,
) -> Result<DerivedSummary, AnalyzeError> {
    let old_slowdowns = sql::collect(ctx, OLD_SLOWDOWNS, &[]).await?;
    let old_causes = sql::collect(ctx, OLD_CAUSES, &[]).await?;
    let new_slowdowns = vec![slowdowns_batch(analysis)?];
    let new_causes = vec![causes_batch(analysis)?];

    let before = states(&old_slowdowns, &old_causes, OLD_SLOWDOWNS.path)?;
    let after = states(&new_slowdowns, &new_causes, "(rebuilt slowdowns)")?;
    let mut summary = DerivedSummary {
        slowdowns_before: before.len(),
        slowdowns_after: after.len(),
        causes_before: rows(&old_causes),
        causes_after: rows(&new_causes),
        changes: compare(before, after),
        rewritten: false,
    };
    let same = rendered(&old_slowdowns)? == rendered(&new_slowdowns)?
        && rendered(&old_causes)? == rendered(&new_causes)?;
    if !same {
        // Waits while a stream worker commits; both tables in one writer turn.
        persist(store, analysis)?;
        summary.rewritten = true;
    }
    Ok(summary)
}

/// The stored derived rows, every contract column in schema order.
const OLD_SLOWDOWNS: SqlFile =
    SqlFile::inline("(replay: stored slowdowns)", "SELECT * FROM slowdowns");
const OLD_CAUSES: SqlFile = SqlFile::inline("(replay: stored causes)", "SELECT * FROM causes");

fn rows(batches: &[RecordBatch]) -> usize {
    batches.iter().map(RecordBatch::num_rows).sum()
}

/// Every row as text, sorted: equal exactly when the tables hold the same rows, whatever
/// physical types (Utf8 or Utf8View) a reader chose.
pub fn rendered(batches: &[RecordBatch]) -> Result<Vec<String>, AnalyzeError> {
    let options = FormatOptions::default();
    let mut out = Vec::with_capacity(rows(batches));
    for b in batches {
        let formatters = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|source| AnalyzeError::Arrow {
                what: "derived rows",
                source,
            })?;
        for i in 0..b.num_rows() {
            let mut row = String::new();
            for f in &formatters {
                // Writing into a String cannot fail.
                let _ = write!(row, "{}\u{1f}", f.value(i));
            }
            out.push(row);
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// The slowdowns of `slowdowns` with their ranked cause ids from `causes`, by id.
pub fn states(
    slowdowns: &[RecordBatch],
    causes: &[RecordBatch],
    file: &'static str,
) -> Result<Vec<SlowdownState>, AnalyzeError> {
    let mut ranked: BTreeMap<String, Vec<(i64, String)>> = BTreeMap::new();
    for b in causes {
        let c = Columns::new(b, file);
        let ids = c.strings("slowdown_id")?;
        let rank = c.ints("rank")?;
        let cause = c.strings("cause")?;
        for ((id, rank), cause) in ids.into_iter().zip(rank).zip(cause) {
            if let (Some(id), Some(cause)) = (id, cause) {
                ranked
                    .entry(id)
                    .or_default()
                    .push((rank.unwrap_or(i64::MAX), cause));
            }
        }
    }
    let mut out = Vec::new();
    for b in slowdowns {
        let c = Columns::new(b, file);
        let ids = c.strings("slowdown_id")?;
        let kind = c.strings("kind")?;
        let namespace = c.strings("namespace")?;
        let workload = c.strings("workload")?;
        let lost = c.floats("lost_seconds")?;
        for i in 0..b.num_rows() {
            let Some(id) = ids[i].clone() else { continue };
            let mut causes = ranked.get(&id).cloned().unwrap_or_default();
            causes.sort();
            out.push(SlowdownState {
                kind: kind[i].clone().unwrap_or_default(),
                namespace: namespace[i].clone(),
                workload: workload[i].clone(),
                lost_seconds: lost[i].unwrap_or(0.0),
                causes: causes.into_iter().map(|(_, c)| c).collect(),
                slowdown_id: id,
            });
        }
    }
    out.sort_by(|a, b| a.slowdown_id.cmp(&b.slowdown_id));
    Ok(out)
}

/// The slowdowns added, removed or changed between `before` and `after`, by id.
pub fn compare(before: Vec<SlowdownState>, after: Vec<SlowdownState>) -> Vec<SlowdownChange> {
    let mut by_id: BTreeMap<String, SlowdownChange> = BTreeMap::new();
    for s in before {
        let id = s.slowdown_id.clone();
        by_id.entry(id).or_insert_with(SlowdownChange::empty).before = Some(s);
    }
    for s in after {
        let id = s.slowdown_id.clone();
        by_id.entry(id).or_insert_with(SlowdownChange::empty).after = Some(s);
    }
    by_id
        .into_values()
        .filter(|c| {
            c.added()
                || c.removed()
                || c.verdict_changed()
                || c.lost_changed()
                || c.ranking_changed()
        })
        .collect()
}

/// The human summary `whyslow replay` prints: one line per changed slowdown, then totals.
pub fn render(s: &ReplaySummary) -> String {
    let mut out = String::new();
    if let Some(d) = &s.dead_letters {
        out.push_str(&dead_letters_line(d));
        out.push('\n');
    }
    if let Some(d) = &s.derived {
        for c in &d.changes {
            out.push_str(&change_line(c));
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "slowdowns: {} (was {}): {} added, {} removed, {} verdicts changed, {} lost times changed; causes rows: {} (was {}); {}",
            d.slowdowns_after,
            d.slowdowns_before,
            d.added(),
            d.removed(),
            d.verdicts_changed(),
            d.lost_changed(),
            d.causes_after,
            d.causes_before,
            if d.rewritten {
                "slowdowns and causes rewritten"
            } else {
                "unchanged, nothing written"
            }
        );
    }
    out
}

fn dead_letters_line(d: &RedecodeSummary) -> String {
    let mut line = format!(
        "dead letters: {} retried: {} moved ({} events, {} metrics written",
        d.letters, d.moved, d.events, d.metrics
    );
    if d.duplicates > 0 {
        let _ = write!(line, ", {} already stored", d.duplicates);
    }
    let _ = write!(
        line,
        "), {} skipped by today's decoders, {} still failing ({} with a new reason)",
        d.skipped, d.still_failing, d.reasons_updated
    );
    if d.partial > 0 {
        let _ = write!(line, ", {} kept whole (rows and rejections)", d.partial);
    }
    if d.unread > 0 {
        let _ = write!(
            line,
            ", {} kept (the retry format reads nothing in them)",
            d.unread
        );
    }
    if d.not_retried > 0 {
        let _ = write!(line, ", {} not retried", d.not_retried);
    }
    line.push_str(if d.version.is_some() {
        "; committed"
    } else {
        "; nothing written"
    });
    line
}

fn change_line(c: &SlowdownChange) -> String {
    let verdict = |s: &SlowdownState| s.verdict().unwrap_or("no cause").to_string();
    match (&c.before, &c.after) {
        (None, Some(a)) => format!(
            "+ slowdown {} ({}): added, verdict {}, {} lost",
            c.id(),
            a.label(),
            verdict(a),
            human_seconds(a.lost_seconds)
        ),
        (Some(b), None) => format!(
            "- slowdown {} ({}): removed (was verdict {}, {} lost)",
            c.id(),
            b.label(),
            verdict(b),
            human_seconds(b.lost_seconds)
        ),
        (Some(b), Some(a)) => {
            let mut what = Vec::new();
            if c.verdict_changed() {
                what.push(format!("verdict {} -> {}", verdict(b), verdict(a)));
            }
            if c.lost_changed() {
                what.push(format!(
                    "lost {} -> {}",
                    human_seconds(b.lost_seconds),
                    human_seconds(a.lost_seconds)
                ));
            }
            if c.ranking_changed() {
                what.push(format!(
                    "candidate causes [{}] -> [{}]",
                    b.causes.join(", "),
                    a.causes.join(", ")
                ));
            }
            format!("~ slowdown {} ({}): {}", c.id(), a.label(), what.join("; "))
        }
        (None, None) => String::new(),
    }
}

/// A session over the store at `store`.
async fn session(store: &std::path::Path) -> Result<SessionContext, AnalyzeError> {
    whyslow_queries::open_session(store)
        .await
        .map_err(|e| AnalyzeError::store(store, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slowdown(id: &str, lost: f64, causes: &[&str]) -> SlowdownState {
        SlowdownState {
            slowdown_id: id.into(),
            kind: "stall".into(),
            namespace: Some("llm".into()),
            workload: Some("finetune".into()),
            lost_seconds: lost,
            causes: causes.iter().map(|c| c.to_string()).collect(),
        }
    }

    #[test]
    fn changes_by_slowdown_id() {
        let p = "orchestrator.preemption";
        let g = "infrastructure.gpu_failure";
        let before = vec![
            slowdown("a", 100.0, &[p, g]),
            slowdown("b", 50.0, &[g]),
            slowdown("c", 10.0, &[p]),
            slowdown("d", 10.0, &[p, g]),
            slowdown("e", 7.0, &[p]),
        ];
        let after = vec![
            slowdown("a", 100.0, &[g, p]),
            slowdown("b", 65.5, &[g]),
            slowdown("d", 10.0 + 1e-9, &[p]),
            slowdown("e", 7.0, &[p]),
            slowdown("f", 30.0, &[]),
        ];
        let changes = compare(before, after);
        let ids: Vec<&str> = changes.iter().map(SlowdownChange::id).collect();
        assert_eq!(ids, ["a", "b", "c", "d", "f"]);
        let d = DerivedSummary {
            changes,
            ..DerivedSummary::default()
        };
        assert_eq!(
            (
                d.added(),
                d.removed(),
                d.verdicts_changed(),
                d.lost_changed()
            ),
            (1, 1, 1, 1)
        );
        assert!(d.changes[3].ranking_changed() && !d.changes[3].lost_changed());
        let text = render(&ReplaySummary {
            dead_letters: None,
            derived: Some(d),
        });
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 6, "{text}");
        assert!(lines[0].contains("verdict orchestrator.preemption -> infrastructure.gpu_failure"));
        assert!(lines[1].contains("lost 50.0s -> 1m 06s"), "{}", lines[1]);
        assert!(lines[2].starts_with("- slowdown c (stall of llm/finetune): removed"));
        assert!(lines[4].starts_with("+ slowdown f") && lines[4].contains("verdict no cause"));
        assert!(lines[5].contains("1 added, 1 removed, 1 verdicts changed, 1 lost times changed"));
    }

    #[test]
    fn dead_letter_totals() {
        let s = RedecodeSummary {
            letters: 5,
            moved: 2,
            still_failing: 3,
            reasons_updated: 1,
            events: 4,
            metrics: 1,
            version: Some(9),
            ..RedecodeSummary::default()
        };
        let text = render(&ReplaySummary {
            dead_letters: Some(s),
            derived: None,
        });
        assert_eq!(
            text,
            "dead letters: 5 retried: 2 moved (4 events, 1 metrics written), 0 skipped by today's decoders, 3 still failing (1 with a new reason); committed\n"
        );
    }
}

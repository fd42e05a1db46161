//! Incidents across successive analyses: matches each analysis's slowdowns to the
//! incidents already known and says which opened, changed, ended or vanished, with a
//! revision number per incident so consumers can keep the latest.

use crate::report::Slowdown;

/// Why a revision was published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// First seen (or seen again after a retraction).
    Opened,
    /// The verdict, the causes, the extent or the lost time changed.
    Revised,
    /// It was ongoing and now has an end.
    Ended,
    /// A later analysis of the same window no longer finds it (new evidence explained
    /// it away, e.g. an announced pause).
    Retracted,
}

impl Status {
    /// The id consumers see.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Opened => "opened",
            Status::Revised => "revised",
            Status::Ended => "ended",
            Status::Retracted => "retracted",
        }
    }
}

/// One slowdown of an analysis, with its extent in nanoseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Sighting {
    pub slowdown: Slowdown,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// One published state of an incident.
#[derive(Debug, Clone, PartialEq)]
pub struct Revision {
    /// Stable for the incident's life: the slowdown id it was first seen with.
    pub incident_id: String,
    /// 1 for the first publication, then +1 for each.
    pub revision: i64,
    pub status: Status,
    /// Whether the verdict (the first cause) differs from the previous revision's.
    pub verdict_changed: bool,
    pub slowdown: Slowdown,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// The latest published revision of an incident, to resume from.
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    pub incident_id: String,
    pub revision: i64,
    pub retracted: bool,
    pub sighting: Sighting,
}

#[derive(Debug, Clone)]
struct Incident {
    id: String,
    revision: i64,
    /// What the latest analysis says.
    latest: Sighting,
    /// What was last published.
    published: Slowdown,
    retracted: bool,
}

/// Growth of an ongoing incident's lost time that is worth a progress revision.
const ONGOING_GROWTH: f64 = 0.25;

/// The incidents of the analyzed window, in memory; those that fall out of the window
/// are final and forgotten, so memory is bounded by the window, not by the log.
#[derive(Debug, Default)]
pub struct Tracker {
    incidents: Vec<Incident>,
}

fn verdict(s: &Slowdown) -> Option<&str> {
    s.causes.first().map(|c| c.cause.as_str())
}

fn cause_ids(s: &Slowdown) -> Vec<&str> {
    s.causes.iter().map(|c| c.cause.as_str()).collect()
}

fn same_subject(a: &Slowdown, b: &Slowdown) -> bool {
    (&a.namespace, &a.workload, &a.run_id, &a.kind)
        == (&b.namespace, &b.workload, &b.run_id, &b.kind)
}

/// Whether `now` differs from what was `published` enough to publish a revision.
fn material(published: &Slowdown, now: &Slowdown) -> bool {
    if published.slowdown_id != now.slowdown_id
        || published.ongoing != now.ongoing
        || published.start != now.start
        || cause_ids(published) != cause_ids(now)
        || published.nodes != now.nodes
    {
        return true;
    }
    if now.ongoing {
        // An ongoing incident grows with every batch: publish progress in steps.
        now.lost_seconds > published.lost_seconds * (1.0 + ONGOING_GROWTH) + 1.0
    } else {
        published.end != now.end || (published.lost_seconds - now.lost_seconds).abs() > 0.05
    }
}

impl Tracker {
    /// An empty tracker.
    pub fn new() -> Self {
        Tracker::default()
    }

    /// A tracker that carries on from incidents already published (their latest
    /// revisions, e.g. read back from the `incidents` table after a restart), so that
    /// revision numbers continue and nothing unchanged is published again.
    pub fn resume(published: Vec<Published>) -> Self {
        let incidents = published
            .into_iter()
            .map(|p| Incident {
                id: p.incident_id,
                revision: p.revision,
                published: p.sighting.slowdown.clone(),
                latest: p.sighting,
                retracted: p.retracted,
            })
            .collect();
        Tracker { incidents }
    }

    /// Takes the slowdowns of an analysis of `[window_from_ns, …]` and returns the
    /// revisions to publish. `truncated` says the window starts after the first data (the
    /// analysis sees only the end of older incidents): incidents that began before the
    /// window are then final, and slowdowns found at the window's very start are the
    /// cut-off tails of older ones, not new incidents.
    pub fn observe(
        &mut self,
        sightings: Vec<Sighting>,
        window_from_ns: i64,
        truncated: bool,
    ) -> Vec<Revision> {
        let mut matched = vec![false; self.incidents.len()];
        let mut assignment: Vec<Option<usize>> = vec![None; sightings.len()];
        // First the same slowdown id, then the same subject with an overlapping extent
        // (a detector may move a start as evidence accumulates).
        for (si, s) in sightings.iter().enumerate() {
            if let Some(ii) = (0..self.incidents.len()).find(|&ii| {
                !matched[ii]
                    && self.incidents[ii].latest.slowdown.slowdown_id == s.slowdown.slowdown_id
            }) {
                matched[ii] = true;
                assignment[si] = Some(ii);
            }
        }
        for (si, s) in sightings.iter().enumerate() {
            if assignment[si].is_some() {
                continue;
            }
            let best = (0..self.incidents.len())
                .filter(|&ii| {
                    let i = &self.incidents[ii];
                    !matched[ii]
                        && same_subject(&i.latest.slowdown, &s.slowdown)
                        && i.latest.start_ns <= s.end_ns
                        && s.start_ns <= i.latest.end_ns
                })
                .min_by_key(|&ii| (self.incidents[ii].latest.start_ns - s.start_ns).abs());
            if let Some(ii) = best {
                matched[ii] = true;
                assignment[si] = Some(ii);
            }
        }

        let mut out = Vec::new();
        let mut fresh = Vec::new();
        for (s, a) in sightings.into_iter().zip(assignment) {
            match a {
                Some(ii) => {
                    let inc = &mut self.incidents[ii];
                    if truncated && inc.latest.start_ns < window_from_ns {
                        continue; // older than the window: final
                    }
                    let reopened = inc.retracted;
                    inc.latest = s;
                    if reopened || material(&inc.published, &inc.latest.slowdown) {
                        let status = if reopened {
                            Status::Opened
                        } else if inc.published.ongoing && !inc.latest.slowdown.ongoing {
                            Status::Ended
                        } else {
                            Status::Revised
                        };
                        out.push(publish(inc, status));
                        inc.retracted = false;
                    }
                }
                None => {
                    let cut_tail = truncated && s.start_ns <= window_from_ns;
                    if !cut_tail {
                        fresh.push(s);
                    }
                }
            }
        }
        // What the analysis no longer finds inside its window is retracted; what lies
        // before the window is final and forgotten.
        let mut keep = Vec::with_capacity(self.incidents.len());
        for (ii, mut inc) in std::mem::take(&mut self.incidents).into_iter().enumerate() {
            let inside = inc.latest.end_ns >= window_from_ns
                && !(truncated && inc.latest.start_ns < window_from_ns);
            if matched[ii] || (inside && inc.retracted) {
                keep.push(inc);
            } else if inside {
                out.push(publish(&mut inc, Status::Retracted));
                inc.retracted = true;
                keep.push(inc);
            }
        }
        self.incidents = keep;
        for s in fresh {
            let mut inc = Incident {
                id: s.slowdown.slowdown_id.clone(),
                revision: 0,
                published: s.slowdown.clone(),
                latest: s,
                retracted: false,
            };
            out.push(publish(&mut inc, Status::Opened));
            self.incidents.push(inc);
        }
        out
    }

    /// Publishes whatever the latest analysis says that was not published yet (small
    /// changes of ongoing incidents), so that the last revision of every incident is
    /// exactly the latest analysis. Called when the stream stops.
    pub fn settle(&mut self) -> Vec<Revision> {
        let mut out = Vec::new();
        for inc in &mut self.incidents {
            if !inc.retracted && inc.published != inc.latest.slowdown {
                let status = if inc.published.ongoing && !inc.latest.slowdown.ongoing {
                    Status::Ended
                } else {
                    Status::Revised
                };
                out.push(publish(inc, status));
            }
        }
        out
    }

    /// The incidents that stand (not retracted), with their latest state.
    pub fn standing(&self) -> impl Iterator<Item = (&str, &Slowdown)> {
        self.incidents
            .iter()
            .filter(|i| !i.retracted)
            .map(|i| (i.id.as_str(), &i.latest.slowdown))
    }
}

fn publish(inc: &mut Incident, status: Status) -> Revision {
    let verdict_changed = inc.revision == 0
        || status == Status::Retracted
        || verdict(&inc.published) != verdict(&inc.latest.slowdown);
    inc.revision += 1;
    inc.published = inc.latest.slowdown.clone();
    Revision {
        incident_id: inc.id.clone(),
        revision: inc.revision,
        status,
        verdict_changed,
        slowdown: inc.latest.slowdown.clone(),
        start_ns: inc.latest.start_ns,
        end_ns: inc.latest.end_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slowdown(id: &str, kind: &str, cause: &str, ongoing: bool, lost: f64) -> Slowdown {
        let end = if ongoing {
            "2026-11-29T10:05:00Z"
        } else {
            "2026-11-29T10:10:00Z"
        };
        Slowdown {
            slowdown_id: id.into(),
            ongoing,
            ..Slowdown::for_test(kind, cause, "2026-11-29T10:00:00Z", end, lost)
        }
    }

    fn sight(s: Slowdown, start: i64, end: i64) -> Sighting {
        Sighting {
            slowdown: s,
            start_ns: start,
            end_ns: end,
        }
    }

    #[test]
    fn an_incident_opens_grows_changes_verdict_and_ends() {
        let mut t = Tracker::new();
        let r = t.observe(
            vec![sight(
                slowdown("a", "stall", "unknown", true, 60.0),
                100,
                200,
            )],
            0,
            false,
        );
        assert_eq!(r.len(), 1);
        assert_eq!(
            (r[0].status, r[0].revision, r[0].verdict_changed),
            (Status::Opened, 1, true)
        );
        // A little more lost time while ongoing: nothing to say.
        let r = t.observe(
            vec![sight(
                slowdown("a", "stall", "unknown", true, 65.0),
                100,
                210,
            )],
            0,
            false,
        );
        assert!(r.is_empty(), "{r:?}");
        // New evidence names the cause.
        let r = t.observe(
            vec![sight(
                slowdown("a", "stall", "orchestrator.preemption", true, 70.0),
                100,
                220,
            )],
            0,
            false,
        );
        assert_eq!(
            (r[0].status, r[0].revision, r[0].verdict_changed),
            (Status::Revised, 2, true)
        );
        // Much more lost time: a progress revision, same verdict.
        let r = t.observe(
            vec![sight(
                slowdown("a", "stall", "orchestrator.preemption", true, 200.0),
                100,
                400,
            )],
            0,
            false,
        );
        assert_eq!(
            (r[0].status, r[0].revision, r[0].verdict_changed),
            (Status::Revised, 3, false)
        );
        // It ends.
        let r = t.observe(
            vec![sight(
                slowdown("a", "stall", "orchestrator.preemption", false, 300.0),
                100,
                500,
            )],
            0,
            false,
        );
        assert_eq!((r[0].status, r[0].revision), (Status::Ended, 4));
        assert_eq!(t.standing().count(), 1);
    }

    #[test]
    fn a_moved_start_is_the_same_incident() {
        let mut t = Tracker::new();
        t.observe(
            vec![sight(
                slowdown("a", "regression", "unknown", true, 60.0),
                100,
                200,
            )],
            0,
            false,
        );
        let r = t.observe(
            vec![sight(
                slowdown("b", "regression", "unknown", true, 60.0),
                120,
                220,
            )],
            0,
            false,
        );
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].incident_id.as_str(), r[0].revision), ("a", 2));
        assert_eq!(r[0].slowdown.slowdown_id, "b");
    }

    #[test]
    fn what_vanishes_is_retracted_and_may_reopen() {
        let mut t = Tracker::new();
        t.observe(
            vec![sight(
                slowdown("a", "stall", "unknown", true, 60.0),
                100,
                200,
            )],
            0,
            false,
        );
        let r = t.observe(vec![], 0, false);
        assert_eq!((r[0].status, r[0].revision), (Status::Retracted, 2));
        assert_eq!(t.standing().count(), 0);
        assert!(t.observe(vec![], 0, false).is_empty(), "retracted once");
        let r = t.observe(
            vec![sight(
                slowdown("a", "stall", "unknown", true, 60.0),
                100,
                200,
            )],
            0,
            false,
        );
        assert_eq!((r[0].status, r[0].revision), (Status::Opened, 3));
    }

    #[test]
    fn incidents_before_a_sliding_window_are_final_and_cut_tails_are_not_new() {
        let mut t = Tracker::new();
        t.observe(
            vec![sight(
                slowdown("a", "stall", "unknown", false, 60.0),
                100,
                200,
            )],
            0,
            false,
        );
        // The window now starts at 150: the analysis sees a cut piece of "a" starting at
        // the window's start, with another id; it is neither new nor a revision.
        let r = t.observe(
            vec![sight(
                slowdown("c", "stall", "unknown", false, 10.0),
                150,
                200,
            )],
            150,
            true,
        );
        assert!(r.is_empty(), "{r:?}");
        // Past its end the incident is forgotten without a retraction.
        let r = t.observe(vec![], 300, true);
        assert!(r.is_empty(), "{r:?}");
        assert_eq!(t.standing().count(), 0);
    }

    #[test]
    fn a_resumed_tracker_continues_the_revisions() {
        let mut t = Tracker::new();
        t.observe(
            vec![sight(
                slowdown("a", "stall", "unknown", false, 60.0),
                100,
                200,
            )],
            0,
            false,
        );
        let r = t.observe(
            vec![sight(
                slowdown("a", "stall", "orchestrator.preemption", false, 60.0),
                100,
                200,
            )],
            0,
            false,
        );
        let last = r[0].clone();
        let mut resumed = Tracker::resume(vec![Published {
            incident_id: last.incident_id.clone(),
            revision: last.revision,
            retracted: false,
            sighting: sight(last.slowdown.clone(), last.start_ns, last.end_ns),
        }]);
        // The same analysis after a restart: nothing to say.
        let same = sight(
            slowdown("a", "stall", "orchestrator.preemption", false, 60.0),
            100,
            200,
        );
        assert!(resumed.observe(vec![same], 0, false).is_empty());
        // A change continues from revision 2.
        let r = resumed.observe(
            vec![sight(
                slowdown("a", "stall", "orchestrator.preemption", false, 90.0),
                100,
                230,
            )],
            0,
            false,
        );
        assert_eq!((r[0].incident_id.as_str(), r[0].revision), ("a", 3));
    }

    #[test]
    fn settle_publishes_the_last_small_changes() {
        let mut t = Tracker::new();
        t.observe(
            vec![sight(
                slowdown("a", "stall", "unknown", true, 60.0),
                100,
                200,
            )],
            0,
            false,
        );
        t.observe(
            vec![sight(
                slowdown("a", "stall", "unknown", true, 61.0),
                100,
                201,
            )],
            0,
            false,
        );
        let r = t.settle();
        assert_eq!((r[0].revision, r[0].slowdown.lost_seconds), (2, 61.0));
        assert!(t.settle().is_empty());
    }
}

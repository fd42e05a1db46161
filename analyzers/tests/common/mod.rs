//! Small hand-made event logs for the pipeline tests: rows appended with the schemas'
//! builders into in-memory `events` and `metrics` tables.

#![allow(dead_code)]

use std::sync::Arc;

use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use whyslow_schemas::builders::{EventRow, MetricRow, Scope};
use whyslow_schemas::{EventsBuilder, Layer, MetricsBuilder, Severity, Table};

pub const S: i64 = 1_000_000_000;
/// 2026-11-29T09:00:00Z.
pub const T0: i64 = 1_795_942_800 * S;

/// A log under construction.
pub struct Log {
    pub events: EventsBuilder,
    pub metrics: MetricsBuilder,
    n: usize,
}

/// Where and to whom, owned.
#[derive(Clone, Default)]
pub struct At {
    pub node: Option<String>,
    pub device: Option<String>,
    pub namespace: Option<String>,
    pub workload: Option<String>,
    pub pod: Option<String>,
    pub run_id: Option<String>,
}

impl At {
    pub fn workload(ns: &str, w: &str) -> At {
        At {
            namespace: Some(ns.into()),
            workload: Some(w.into()),
            ..At::default()
        }
    }
    pub fn node(n: &str) -> At {
        At {
            node: Some(n.into()),
            ..At::default()
        }
    }
    pub fn pod(mut self, p: &str) -> At {
        self.pod = Some(p.into());
        self
    }
    pub fn on(mut self, n: &str) -> At {
        self.node = Some(n.into());
        self
    }
    pub fn gpu(mut self, d: &str) -> At {
        self.device = Some(d.into());
        self
    }
    pub fn run(mut self, r: &str) -> At {
        self.run_id = Some(r.into());
        self
    }
    fn scope(&self) -> Scope<'_> {
        Scope {
            cluster: None,
            node: self.node.as_deref(),
            device: self.device.as_deref(),
            namespace: self.namespace.as_deref(),
            workload: self.workload.as_deref(),
            pod: self.pod.as_deref(),
            run_id: self.run_id.as_deref(),
        }
    }
}

impl Default for Log {
    fn default() -> Self {
        Log {
            events: EventsBuilder::new(0),
            metrics: MetricsBuilder::new(0),
            n: 0,
        }
    }
}

impl Log {
    /// An event at `t` seconds after T0.
    #[allow(clippy::too_many_arguments)]
    pub fn event(
        &mut self,
        t: f64,
        layer: Layer,
        kind: &str,
        at: &At,
        reason: Option<&str>,
        message: Option<&str>,
        attrs: &[(&str, &str)],
    ) -> String {
        self.n += 1;
        let id = format!("ev-{:04}-{kind}", self.n);
        let row = EventRow {
            time_ns: T0 + (t * 1e9) as i64,
            event_id: &id,
            layer,
            source: "test",
            kind,
            severity: Severity::Info,
            scope: at.scope(),
            reason,
            message,
        };
        self.events.append(&row, attrs.iter().copied());
        id
    }

    /// A metric sample at `t` seconds after T0.
    #[allow(clippy::too_many_arguments)]
    pub fn metric(
        &mut self,
        t: f64,
        layer: Layer,
        metric: &str,
        value: f64,
        at: &At,
        rank: Option<i32>,
        step: Option<i64>,
    ) {
        let row = MetricRow {
            time_ns: T0 + (t * 1e9) as i64,
            layer,
            source: "test",
            metric,
            value,
            scope: at.scope(),
            rank,
            step,
        };
        self.metrics
            .append(&row, std::iter::empty::<(&str, &str)>());
    }

    /// A session as `whyslow_queries` opens one, with `events` and `metrics` holding the
    /// log, and its views.
    pub async fn session(mut self) -> SessionContext {
        let ctx = SessionContext::new_with_config(whyslow_queries::session_config());
        let e = self.events.finish();
        let m = self.metrics.finish();
        ctx.register_table(
            "events",
            Arc::new(MemTable::try_new(Table::Events.schema(), vec![vec![e]]).unwrap()),
        )
        .unwrap();
        ctx.register_table(
            "metrics",
            Arc::new(MemTable::try_new(Table::Metrics.schema(), vec![vec![m]]).unwrap()),
        )
        .unwrap();
        // The other stored tables, empty: the views read them too.
        for t in Table::ALL {
            if ![Table::Events, Table::Metrics].contains(&t) {
                let empty = MemTable::try_new(t.schema(), vec![vec![]]).unwrap();
                ctx.register_table(t.name(), Arc::new(empty)).unwrap();
            }
        }
        whyslow_queries::register_views(&ctx).await.unwrap();
        ctx
    }
}

/// A training job's steps: every `step_s` seconds from `from` to `to` (seconds after
/// T0), starting at `first_step`, on `ranks` ranks; returns the last step.
pub fn train(
    log: &mut Log,
    at: &At,
    ranks: i32,
    from: f64,
    to: f64,
    step_s: f64,
    first_step: i64,
) -> i64 {
    let mut t = from;
    let mut step = first_step;
    while t < to {
        for r in 0..ranks {
            let mut a = at.clone();
            a.node = Some(format!("node-{}", r / 2));
            a.device = Some(format!("{}", r % 2));
            let jitter = 0.01 * (((step * 7 + r as i64 * 3) % 5) as f64 - 2.0);
            log.metric(
                t,
                Layer::Framework,
                "step_time_seconds",
                step_s + jitter,
                &a,
                Some(r),
                Some(step),
            );
            log.metric(
                t,
                Layer::Framework,
                "compute_seconds",
                step_s * 0.8 + jitter,
                &a,
                Some(r),
                Some(step),
            );
        }
        t += step_s;
        step += 1;
    }
    step - 1
}

-- timeline: every event with a one-line summary, for reading what happened in order.
-- Columns: time, layer, source, kind, severity, node, device, namespace, workload, pod,
-- summary (reason and message, or the kind when the source gave neither), event_id.
-- Filters on time, node, workload reach the events table (segments outside the time
-- range are skipped). A view has no order of its own: add ORDER BY time, event_id.
CREATE VIEW timeline AS
SELECT
    time,
    layer,
    source,
    kind,
    severity,
    node,
    device,
    namespace,
    workload,
    pod,
    CASE
        WHEN reason IS NOT NULL AND message IS NOT NULL THEN reason || ': ' || message
        ELSE coalesce(reason, message, kind)
    END AS summary,
    event_id
FROM events;

-- Pod placement intervals: which pod ran on which node for which workload, from its
-- `scheduled` event (or an inventory's Pod placed on a node: `pod_placed`, where the
-- scheduler's events have expired) until the next mark of that pod (killed, evicted,
-- preempted, deleted, or placed again). `until` is NULL while the pod still runs.
CREATE OR REPLACE VIEW pod_placements AS
WITH marks AS (
  SELECT namespace, workload, pod, node, time, kind, event_id
  FROM events
  WHERE pod IS NOT NULL
    AND kind IN ('scheduled', 'pod_placed', 'killing', 'evicted', 'preempted', 'deleted', 'pod_deleted', 'terminated')
),
seq AS (
  SELECT namespace, workload, pod, node, time, kind, event_id,
    LEAD(time) OVER (PARTITION BY namespace, pod ORDER BY time, kind, event_id) AS next_time,
    LEAD(kind) OVER (PARTITION BY namespace, pod ORDER BY time, kind, event_id) AS next_kind
  FROM marks
)
SELECT namespace, workload, pod, node, time AS since, next_time AS until, next_kind AS ended_by,
  event_id
FROM seq
WHERE kind IN ('scheduled', 'pod_placed') AND node IS NOT NULL
  -- The same placement told by the scheduler and the inventory is one.
  AND NOT coalesce(next_kind IN ('scheduled', 'pod_placed') AND next_kind <> kind
                   AND next_time <= time + INTERVAL '1 minute', false);

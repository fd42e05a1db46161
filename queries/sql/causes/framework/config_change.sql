-- framework.config_change: the run in progress at the onset (or started within the 10
-- minutes a pace regression's onset may be early by) started with a configuration
-- (run_started attrs) that sets a key differently from the previous run of the same
-- workload (keys added or changed; a removed key alone is not seen); the
-- summary lists the changed keys.
WITH runs AS (
  SELECT namespace, workload, run_id, time, event_id, attrs,
    LAG(event_id) OVER (PARTITION BY namespace, workload ORDER BY time, event_id) AS prev_id
  FROM events
  WHERE kind = 'run_started' AND workload IS NOT NULL
),
current_run AS (
  SELECT s.slowdown_id, r.event_id, r.prev_id, r.time,
    row_number() OVER (PARTITION BY s.slowdown_id ORDER BY r.time DESC, r.event_id DESC) AS latest
  FROM symptoms s
  JOIN runs r ON r.workload = s.workload AND (r.namespace IS NOT DISTINCT FROM s.namespace)
    AND r.time <= s.start + INTERVAL '10 minutes' AND r.prev_id IS NOT NULL
),
kv AS (
  SELECT event_id, unnest(map_keys(attrs)) AS k, unnest(map_values(attrs)) AS v
  FROM runs
),
changed AS (
  SELECT c.slowdown_id, c.event_id, c.prev_id, c.time, a.k,
    b.v AS before, a.v AS after
  FROM current_run c
  JOIN kv a ON a.event_id = c.event_id
  LEFT JOIN kv b ON b.event_id = c.prev_id AND b.k = a.k
  WHERE c.latest = 1 AND (a.v IS DISTINCT FROM b.v)
)
SELECT slowdown_id, 'framework.config_change' AS cause, 'workload' AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  make_array(min(event_id), min(prev_id)) AS evidence,
  concat('Run configuration changed against the previous run: ',
    string_agg(concat(k, ' ', coalesce(before, '∅'), '→', coalesce(after, '∅')), ', ' ORDER BY k))
    AS summary
FROM changed
WHERE slowdown_id IS NOT NULL
GROUP BY slowdown_id;

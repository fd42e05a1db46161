-- framework.config_change: the run in progress at the onset (or started within the 10
-- minutes a pace regression's onset may be early by) started with a configuration
-- (run_started attrs) that sets a key differently from the previous run of the same
-- workload (keys added or changed; a removed key alone is not seen); the
-- summary lists the changed keys. Where the previous run's start is not in the store
-- (it began before the data) but that run was reporting in the hour before, the new run
-- replaced it at the onset: a changed run without its old configuration to compare is
-- weaker evidence (strength 0.6), and any cause with evidence of its own outranks it.
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
replaced AS (
  SELECT s.slowdown_id, r.event_id, r.time, r.run_id, min(m.run_id) AS prev_run
  FROM symptoms s
  JOIN runs r ON r.workload = s.workload AND (r.namespace IS NOT DISTINCT FROM s.namespace)
    AND r.prev_id IS NULL
    AND r.time >= s.start - INTERVAL '30 minutes' AND r.time <= s.start + INTERVAL '10 minutes'
  JOIN metrics m ON m.workload = s.workload AND (m.namespace IS NOT DISTINCT FROM s.namespace)
    AND m.run_id IS NOT NULL AND m.run_id <> r.run_id
    AND m.time < r.time AND m.time >= r.time - INTERVAL '1 hour'
  WHERE s.kind IN ('regression', 'throughput_drop')
  GROUP BY s.slowdown_id, r.event_id, r.time, r.run_id
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
  make_array(min(event_id), min(prev_id)) AS evidence, 1.0 AS strength,
  concat('Run configuration changed against the previous run: ',
    string_agg(concat(k, ' ', coalesce(before, '∅'), '→', coalesce(after, '∅')), ', ' ORDER BY k))
    AS summary
FROM changed
WHERE slowdown_id IS NOT NULL
GROUP BY slowdown_id
UNION ALL
SELECT slowdown_id, 'framework.config_change' AS cause, 'workload' AS scope,
  CAST(NULL AS VARCHAR) AS node, CAST(NULL AS VARCHAR) AS device, min(time) AS time,
  make_array(min(event_id)) AS evidence, 0.6 AS strength,
  concat('Run ', min(run_id), ' replaced run ', min(prev_run),
    ' at the onset; the earlier run''s configuration is not in the store to compare') AS summary
FROM replaced
WHERE slowdown_id NOT IN (SELECT slowdown_id FROM changed)
GROUP BY slowdown_id;

-- The first and last time of data per workload inside the window (events and metrics),
-- and the last time of any data at all: the horizon of ongoing symptoms.
SELECT namespace, workload, min(t0) AS first_time, max(t1) AS last_time
FROM (
  SELECT namespace, workload, min(time) AS t0, max(time) AS t1 FROM events
  WHERE time >= $from AND time <= $to GROUP BY namespace, workload
  UNION ALL
  SELECT namespace, workload, min(time) AS t0, max(time) AS t1 FROM metrics
  WHERE time >= $from AND time <= $to GROUP BY namespace, workload
) x
GROUP BY namespace, workload
ORDER BY namespace, workload;

-- Run progress: the steps each rank reported over time, with the previous step of the
-- same rank; `restarted` marks a step counter that went back (a restore).
CREATE OR REPLACE VIEW run_progress AS
WITH p AS (
  SELECT namespace, workload, run_id, rank, time, step
  FROM metrics
  WHERE step IS NOT NULL AND metric = 'step_time_seconds'
)
SELECT namespace, workload, run_id, rank, time, step,
  LAG(step) OVER (PARTITION BY namespace, workload, run_id, rank ORDER BY time) AS prev_step,
  coalesce(step < LAG(step) OVER (PARTITION BY namespace, workload, run_id, rank ORDER BY time),
           false) AS restarted
FROM p;

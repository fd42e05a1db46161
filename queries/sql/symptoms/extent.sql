-- The first and last time of data per workload inside the window (events and metrics,
-- a serving engine's scrapes counted for the workload `serving_samples` gives them),
-- the last time of data that says the workload is still there (anything but the
-- announcements of its end: run_finished, Kueue Finished, Job Completed, a Job's Complete
-- condition, a Slurm job cancelled, deletions; not slurmctld's `done`, logged at a
-- requeue too),
-- and the last warning or error about it: a run whose progress stops with neither after
-- it has finished, not stalled. The metrics' part reads `series_extents`, which the
-- analysis registers (`symptoms/series_extents.sql` over the same window).
SELECT namespace, workload, min(t0) AS first_time, max(t1) AS last_time,
  max(alive) AS last_alive_time, max(warned) AS last_warning_time
FROM (
  SELECT namespace, workload, min(time) AS t0, max(time) AS t1,
    max(CASE WHEN kind NOT IN ('run_finished', 'finished', 'completed', 'deleted', 'succeeded',
                               'job_completed', 'job_cancelled')
             THEN time END) AS alive,
    max(CASE WHEN severity IN ('warning', 'error', 'critical') THEN time END) AS warned
  FROM events
  WHERE time >= $from AND time <= $to GROUP BY namespace, workload
  UNION ALL
  SELECT namespace, workload, min(since) AS t0, max(until) AS t1, max(until) AS alive,
    max(CASE WHEN false THEN until END) AS warned
  FROM series_extents
  GROUP BY namespace, workload
  UNION ALL
  SELECT namespace, workload, min(time) AS t0, max(time) AS t1, max(time) AS alive,
    max(CASE WHEN false THEN time END) AS warned
  FROM serving_samples
  WHERE time >= $from AND time <= $to AND workload IS NOT NULL GROUP BY namespace, workload
) x
GROUP BY namespace, workload
ORDER BY namespace, workload;

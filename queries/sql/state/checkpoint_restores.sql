-- Checkpoint restores per run: when, to which step, and how long the restore took.
CREATE OR REPLACE VIEW checkpoint_restores AS
SELECT namespace, workload, run_id, pod, node, time,
  TRY_CAST(coalesce(attrs['step'], CAST(NULL AS VARCHAR)) AS BIGINT) AS step,
  TRY_CAST(attrs['seconds'] AS DOUBLE) AS seconds,
  event_id
FROM events
WHERE kind = 'checkpoint_restored';

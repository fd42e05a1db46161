-- When each workload made progress: the times of its framework samples that carry a step
-- (or a trainer's fractional epoch), evaluations aside, once per time however many ranks,
-- runs and metrics report it. What `state/checkpoint_ops.sql` reads to tell when a
-- restored workload trained again, and how often it logs progress.
CREATE OR REPLACE VIEW workload_progress AS
SELECT DISTINCT namespace, workload, epoch_ns(time) AS t
FROM metrics
WHERE layer = 'framework' AND workload IS NOT NULL
  AND (step IS NOT NULL OR metric = 'epoch') AND metric NOT LIKE 'eval%';

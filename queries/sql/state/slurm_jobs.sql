-- Slurm jobs by name: each job id with the name sacct gives it (its JobName column).
-- slurmctld and a job's output file name a job by its id only; users name it by its
-- name. The report names a Slurm workload by its job name and its run by the job id.
-- Step rows (`482113.batch`, named `batch`) are not the job's name; a job id given two
-- names is left out.
CREATE OR REPLACE VIEW slurm_jobs AS
SELECT workload AS job_id, min(attrs['job_name']) AS job_name
FROM events
WHERE source = 'slurm' AND namespace IS NULL AND workload IS NOT NULL
  AND attrs['job_name'] IS NOT NULL AND attrs['job_name'] <> '' AND attrs['step'] IS NULL
GROUP BY workload
HAVING count(DISTINCT attrs['job_name']) = 1;

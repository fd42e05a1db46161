-- Workloads that are parts of another: a JobSet's child Jobs (`<jobset>-<replicated
-- job>-<index>`). Its pods are named after their Job, so records told by the pod (the
-- scheduler's and kubelet's events, container logs) name the child Job, while the SDK
-- and Kueue name the JobSet; the analysis reads a member's placements and events as the
-- JobSet's too. Known from the Job object (its owner, in the inventory's `config` and
-- `job_started`) or from the JobSet controller's "Created job X". A Slurm job told by
-- its id (slurmctld, its output file) is a member of the job told by its name (sacct's
-- JobName, `slurm_jobs`), as its SDK and users name it.
CREATE OR REPLACE VIEW workload_members AS
SELECT DISTINCT namespace, member, workload
FROM (
  SELECT namespace, workload AS member, attrs['owner_name'] AS workload
  FROM events
  WHERE kind IN ('config', 'job_started') AND attrs['owner_kind'] = 'JobSet'
    AND attrs['workload_kind'] = 'Job'
  UNION ALL
  SELECT namespace, attrs['child_name'] AS member, workload
  FROM events
  WHERE kind = 'created' AND attrs['workload_kind'] = 'JobSet'
    AND lower(attrs['child_kind']) = 'job'
  UNION ALL
  SELECT CAST(NULL AS VARCHAR) AS namespace, job_id AS member, job_name AS workload
  FROM slurm_jobs
) m
WHERE member IS NOT NULL AND workload IS NOT NULL AND member <> workload;

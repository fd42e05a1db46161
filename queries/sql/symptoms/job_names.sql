-- Slurm jobs' names (`slurm_jobs`), for the analysis to name its Slurm workloads by them.
SELECT job_id, job_name FROM slurm_jobs ORDER BY job_id;

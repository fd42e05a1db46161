-- Profiles captured (`profile_captured` events: XProf, PyTorch profiler and Nsight
-- traces, from the envelope or a profiler's log line) that may overlap a slowdown of the
-- window: the workload they belong to, when the capture ended (`time`), how long it ran
-- (`duration_seconds`, NULL when absent, negative, not a number or over a week) and
-- where it can be opened (`url`, blank ones left out). A capture ending after $to can
-- still overlap through its duration, so captures up to a week after $to are read; the
-- analyzer matches them to each slowdown's interval (`analyze/profiles.rs`).
WITH captured AS (
  SELECT namespace, workload, run_id, time, trim(attrs['url']) AS url,
    TRY_CAST(attrs['duration_seconds'] AS DOUBLE) AS seconds
  FROM events
  WHERE kind = 'profile_captured' AND workload IS NOT NULL
    AND time >= $from AND time <= $to + INTERVAL '7 days'
)
SELECT namespace, workload, run_id, time,
  CASE WHEN seconds >= 0 AND seconds <= 604800 THEN seconds END AS duration_seconds,
  url
FROM captured
WHERE url IS NOT NULL AND url <> ''
ORDER BY namespace, workload, time, url, run_id;

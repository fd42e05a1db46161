-- How many serving samples a part of `metrics` holds: the rows `state/serving_samples.sql`
-- reads (the scraped latency, rate and engine series, and the raw request samples it
-- bins by the minute), counted. The live analyzer asks it of each segment once and keeps
-- the answer (`analyze/segment_rows.rs`): where no segment around the analysis' window
-- holds one, the window's serving samples are none, and the view's six scans of
-- `metrics` (each pruned to nothing by the metric names' bloom filters, ~0.1 s an
-- analysis on a 1000-node fleet of training jobs) are not run. The names are the view's
-- (`sql.rs` checks that every name the view reads is here), in lists of at most 20, so
-- that pages and row groups are pruned by them.
SELECT count(*) AS samples FROM (
  SELECT metric FROM metrics
  WHERE metric IN ('ttft_seconds_p50', 'ttft_seconds_p95', 'ttft_seconds_p99',
                   'ttft_seconds_observations',
                   'inter_token_seconds_p50', 'inter_token_seconds_p95',
                   'inter_token_seconds_p99', 'inter_token_seconds_observations',
                   'time_per_output_token_seconds_p50', 'time_per_output_token_seconds_p95',
                   'time_per_output_token_seconds_p99',
                   'time_per_output_token_seconds_observations')
  UNION ALL
  SELECT metric FROM metrics
  WHERE metric IN ('request_seconds_p50', 'request_seconds_p95', 'request_seconds_p99',
                   'request_seconds_observations',
                   'requests_per_second', 'requests_succeeded_per_second',
                   'prompt_tokens_per_second', 'generation_tokens_per_second',
                   'requests_waiting', 'requests_running', 'kv_cache_usage',
                   'preemptions_per_second', 'request_seconds', 'time_per_output_token_seconds')
) s;

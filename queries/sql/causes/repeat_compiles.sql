-- Compilations that are recompiles: a framework that logs every compilation (JAX with
-- `jax_log_compiles`: "Finished XLA compilation of jit(f) in N sec") logs the first
-- compile of each function in each process too, which is normal start-up work. Every
-- compile event after the first of its function in the same pod is a recompile.
CREATE OR REPLACE VIEW repeat_compiles AS
SELECT event_id, namespace, workload, time
FROM (
  SELECT event_id, namespace, workload, time,
    row_number() OVER (PARTITION BY namespace, pod, coalesce(attrs['function'], '')
                       ORDER BY time, event_id) AS nth
  FROM events
  WHERE kind = 'compile'
) c
WHERE nth > 1;

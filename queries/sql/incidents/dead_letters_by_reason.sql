-- dead_letters_by_reason: what could not be decoded, grouped by format and reason?
-- No parameters.
-- The reason is the error's text up to its first ':' (the specifics after it vary per
-- record). Per group: records, first and last ingest time, one example source (file:line
-- or topic/partition/offset) and one full error text. Retry with `whyslow replay`.
SELECT
    format,
    split_part(error, ':', 1) AS reason,
    count(*) AS records,
    min(ingest_time) AS first_ingested,
    max(ingest_time) AS last_ingested,
    min(source_ref) AS example_source,
    min(error) AS example_error
FROM dead_letters
GROUP BY format, split_part(error, ':', 1)
ORDER BY records DESC, format, reason;

-- incidents_latest: the latest revision of every incident the live analyzers published
-- (the `incidents` table keeps every revision). `WHERE status <> 'retracted'` leaves the
-- incidents that stand; their `json` is the report contract's slowdown object.
CREATE VIEW incidents_latest AS
SELECT published_at, incident_id, revision, status, slowdown_id, namespace, workload,
       run_id, kind, cause, confidence, lost_seconds, start, "end", ongoing,
       evidence_arrived_at, json
FROM (
    SELECT *, row_number() OVER (PARTITION BY incident_id ORDER BY revision DESC) AS newest
    FROM incidents
) AS revisions
WHERE newest = 1

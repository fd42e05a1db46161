-- xid_events: NVIDIA Xid errors reported by the driver, one row per report.
-- xid is the code as text (attrs['xid'], else the event's reason, which decoders set to
-- the code); node and device say which GPU; message is the driver's line verbatim.
CREATE VIEW xid_events AS
SELECT
    time,
    cluster,
    node,
    device,
    coalesce(attrs['xid'], reason) AS xid,
    severity,
    source,
    message,
    event_id
FROM events
WHERE kind = 'xid';

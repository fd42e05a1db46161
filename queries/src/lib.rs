//! SQL over the event log: the DataFusion session, views and named queries.

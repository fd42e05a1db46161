//! Sources, decoders and the append-only Parquet event log.

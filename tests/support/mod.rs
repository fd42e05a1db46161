//! Shared test support: a real Kafka-compatible broker.

pub mod broker;

//! Shared test support: a real Kafka-compatible broker.

// Each test binary uses a different part of it.
#![allow(dead_code)]

pub mod broker;

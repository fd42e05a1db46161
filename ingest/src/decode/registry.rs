//! The decoder of every format: the one place a format becomes a decoder, for every
//! driver (files, Kafka, dead-letter retries) and for the formats that hand records on to
//! others (`auto`, `otlp`).

use crate::decode::auto::AutoDecoder;
use crate::decode::container_log::ContainerLogDecoder;
use crate::decode::envelope::EnvelopeDecoder;
use crate::decode::k8s::K8sDecoder;
use crate::decode::kmsg::KmsgDecoder;
use crate::decode::otlp::OtlpDecoder;
use crate::decode::prometheus::PrometheusDecoder;
use crate::decode::slurm::SlurmDecoder;
use crate::decode::{Decoder, Format};

/// A fresh decoder of `format`.
pub fn decoder_for(format: Format) -> Box<dyn Decoder> {
    match format {
        // Detected from content, per file and per record; the formats it finds are read
        // by the decoders below.
        Format::Auto => Box::new(AutoDecoder::new(|f| match f {
            Format::Auto => None,
            f => Some(decoder_for(f)),
        })),
        Format::Envelope => Box::new(EnvelopeDecoder::new()),
        Format::K8s => Box::new(K8sDecoder::new()),
        Format::Prometheus => Box::new(PrometheusDecoder::new()),
        Format::Kmsg => Box::new(KmsgDecoder::new()),
        Format::ContainerLog => Box::new(ContainerLogDecoder::new()),
        Format::Slurm => Box::new(SlurmDecoder::new()),
        // The formats its log records carry are read by the decoders above.
        Format::Otlp => Box::new(OtlpDecoder::new(|f| match f {
            Format::Auto | Format::Otlp => None,
            f => Some(decoder_for(f)),
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_has_its_own_decoder() {
        for f in Format::ALL {
            assert_eq!(decoder_for(f).format(), f);
        }
    }
}

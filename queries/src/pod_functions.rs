//! `pod_owner(pod)`: the workload a pod's name says owns it, by Kubernetes' naming rules
//! (`<deployment>-<pod-template-hash>-<suffix>`, `<job>-<suffix>`, `<statefulset>-<ordinal>`,
//! `<job>-worker-<n>`), the same rule the container-log decoder uses
//! ([`whyslow_schemas::kubernetes::owner_from_pod_name`]); NULL when the name
//! follows none of them.

use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, StringArray};
use arrow::compute::kernels::cast::cast;
use arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::scalar::ScalarValue;
use whyslow_schemas::kubernetes::owner_from_pod_name;

/// The function's definition.
#[derive(Debug, PartialEq, Eq, Hash)]
struct PodOwner {
    signature: Signature,
}

/// Registers `pod_owner` on `ctx`.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(PodOwner {
        signature: Signature::uniform(
            1,
            vec![DataType::Utf8, DataType::Utf8View, DataType::LargeUtf8],
            Volatility::Immutable,
        ),
    }));
}

impl ScalarUDFImpl for PodOwner {
    fn name(&self) -> &str {
        "pod_owner"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let Some(arg) = args.args.first() else {
            return Ok(ColumnarValue::Scalar(ScalarValue::Utf8(None)));
        };
        let pods = arg.to_array(args.number_rows)?;
        let pods = cast(&pods, &DataType::Utf8)?;
        let owners: StringArray = pods
            .as_string::<i32>()
            .iter()
            .map(|p| p.and_then(owner_from_pod_name).map(|o| o.workload))
            .collect();
        Ok(ColumnarValue::Array(Arc::new(owners) as ArrayRef))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn owners_follow_the_kubernetes_naming_rules() {
        let ctx = SessionContext::new();
        register(&ctx);
        let sql = "SELECT p, pod_owner(p) AS owner FROM (VALUES \
                   ('vllm-llama3-8b-chat-2z889gtqzt-424vv'), ('tgi-gemma-7d9f8b6c5d-x2x9k'), \
                   ('finetune-0'), ('pretrain-worker-3'), ('eval-job-x7k2p'), ('plainname'), \
                   (NULL)) v(p)";
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let got = arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
            .to_string();
        let want = "\
+--------------------------------------+---------------------+
| p                                    | owner               |
+--------------------------------------+---------------------+
| vllm-llama3-8b-chat-2z889gtqzt-424vv | vllm-llama3-8b-chat |
| tgi-gemma-7d9f8b6c5d-x2x9k           | tgi-gemma           |
| finetune-0                           | finetune            |
| pretrain-worker-3                    | pretrain            |
| eval-job-x7k2p                       | eval-job            |
| plainname                            |                     |
|                                      |                     |
+--------------------------------------+---------------------+";
        assert_eq!(got, want);
    }
}

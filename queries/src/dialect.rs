//! The SQL dialect of whyslow: DataFusion's generic dialect without trailing commas in
//! select lists, so that a contract column named after a keyword (`cluster`, as in
//! `CLUSTER BY`) can follow a comma (`SELECT node, cluster FROM events`).

use std::any::TypeId;

use datafusion::sql::sqlparser::dialect::{Dialect, GenericDialect};

/// [`GenericDialect`] in every respect but `supports_projection_trailing_commas`.
#[derive(Debug, Default, Clone, Copy)]
pub struct WhyslowDialect;

const GENERIC: GenericDialect = GenericDialect {};

macro_rules! as_generic {
    ($($name:ident),* $(,)?) => {
        $(fn $name(&self) -> bool { GENERIC.$name() })*
    };
}

impl Dialect for WhyslowDialect {
    /// The parser's dialect-specific branches take the generic dialect's path.
    fn dialect(&self) -> TypeId {
        TypeId::of::<GenericDialect>()
    }

    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        GENERIC.is_delimited_identifier_start(ch)
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        GENERIC.is_identifier_start(ch)
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        GENERIC.is_identifier_part(ch)
    }

    fn supports_projection_trailing_commas(&self) -> bool {
        false
    }

    as_generic!(
        supports_unicode_string_literal,
        supports_partition_by_after_order_by,
        supports_array_join_syntax,
        supports_group_by_expr,
        supports_group_by_with_modifier,
        supports_left_associative_joins_without_parens,
        supports_connect_by,
        supports_match_recognize,
        supports_pipe_operator,
        supports_start_transaction_modifier,
        supports_window_function_null_treatment_arg,
        supports_dictionary_syntax,
        supports_window_clause_named_window_reference,
        supports_parenthesized_set_variables,
        supports_select_wildcard_except,
        support_map_literal_syntax,
        allow_extract_custom,
        allow_extract_single_quotes,
        supports_extract_comma_syntax,
        supports_create_view_comment_syntax,
        supports_parens_around_table_factor,
        supports_values_as_table_factor,
        supports_create_index_with_clause,
        supports_explain_with_utility_options,
        supports_limit_comma,
        supports_update_order_by,
        supports_from_first_select,
        supports_asc_desc_in_column_definition,
        supports_try_convert,
        supports_bitwise_shift_operators,
        supports_comment_on,
        supports_load_extension,
        supports_named_fn_args_with_assignment_operator,
        supports_struct_literal,
        supports_empty_projections,
        supports_nested_comments,
        supports_multiline_comment_hints,
        supports_user_host_grantee,
        supports_string_escape_constant,
        supports_array_typedef_with_brackets,
        supports_match_against,
        supports_set_names,
        supports_comma_separated_set_assignments,
        supports_filter_during_aggregation,
        supports_select_wildcard_exclude,
        supports_data_type_signed_suffix,
        supports_interval_options,
        supports_quote_delimited_string,
        supports_select_wildcard_replace,
        supports_select_wildcard_ilike,
        supports_select_wildcard_rename,
        supports_optimize_table,
        supports_install,
        supports_detach,
        supports_prewhere,
        supports_with_fill,
        supports_limit_by,
        supports_interpolate,
        supports_settings,
        supports_select_format,
        supports_comment_optimizer_hint,
        supports_constraint_keyword_without_name,
        supports_key_column_option,
        supports_comma_separated_trim,
        supports_cte_without_as,
        supports_select_item_multi_column_alias,
        supports_xml_expressions
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::parser::DFParserBuilder;

    #[test]
    fn a_keyword_column_may_follow_a_comma() {
        let sql = "SELECT time, cluster, node FROM events WHERE node = $node";
        let parsed = DFParserBuilder::new(sql)
            .with_dialect(&WhyslowDialect)
            .build()
            .unwrap()
            .parse_statements();
        assert_eq!(parsed.unwrap().len(), 1);
        let generic = DFParserBuilder::new(sql)
            .with_dialect(&GENERIC)
            .build()
            .unwrap()
            .parse_statements();
        assert!(
            generic.is_err(),
            "the generic dialect reads `, cluster` as a trailing comma"
        );
    }
}

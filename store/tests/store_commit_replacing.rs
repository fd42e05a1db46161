//! `StoreWriter::commit_replacing`: appended rows (deduplicated against the store) and a
//! table's replacement published together, one Delta commit per table (appends before
//! the replacement), on real Parquet files.

mod store_common;

use store_common::*;
use whyslow_schemas::Table;
use whyslow_store::{Store, StoreWriter};

#[test]
fn appends_and_a_replacement_land_in_one_commit_per_table() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let mut w = StoreWriter::open(&root).unwrap();
    w.append(Table::Events, events(0..100, 1_000_000_000, BASE_NS))
        .unwrap();
    w.append(Table::DeadLetters, dead_letters(0..10, BASE_NS))
        .unwrap();
    w.commit(&[]).unwrap();
    let version = Store::open(&root).unwrap().version();

    // Half of the appended events are already stored; dead letters become 0..5 plus the
    // two buffered for the replaced table.
    w.append(Table::Events, events(50..150, 1_000_000_000, BASE_NS))
        .unwrap();
    w.append(Table::DeadLetters, dead_letters(20..22, BASE_NS))
        .unwrap();
    let stats = w
        .commit_replacing(vec![(
            Table::DeadLetters,
            vec![dead_letters(0..5, BASE_NS)],
        )])
        .unwrap();
    // Two tables touched: two Delta commits, each raising the store version by one.
    assert_eq!(stats.version, Some(version + 2));
    assert_eq!(stats.tables[&Table::Events].written, 50);
    assert_eq!(stats.tables[&Table::Events].duplicates, 50);
    assert_eq!(stats.tables[&Table::DeadLetters].written, 7);

    let store = Store::open(&root).unwrap();
    assert_eq!(store.version(), version + 2, "one commit per table");
    let replaced =
        std::fs::read_to_string(root.join("dead_letters/_delta_log/00000000000000000002.json"))
            .unwrap();
    assert!(replaced.contains("\"Overwrite\""), "{replaced}");
    assert_eq!(
        rows(&read_table(&store, Table::Events)),
        rows(&[events(0..150, 1_000_000_000, BASE_NS)])
    );
    let want = [dead_letters(0..5, BASE_NS), dead_letters(20..22, BASE_NS)];
    assert_eq!(rows(&read_table(&store, Table::DeadLetters)), rows(&want));

    // Nothing buffered and nothing to replace: no commit.
    let stats = w.commit_replacing(Vec::new()).unwrap();
    assert_eq!(stats.version, None);
    // Replacing with nothing empties the table, in one commit of that table.
    let stats = w
        .commit_replacing(vec![(Table::DeadLetters, Vec::new())])
        .unwrap();
    assert_eq!(stats.version, Some(version + 3));
    drop(w);
    let store = Store::open(&root).unwrap();
    assert_eq!(store.rows(Table::DeadLetters), 0);
    assert_eq!(store.rows(Table::Events), 150);
}

#[test]
fn a_replacement_of_the_wrong_shape_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let mut w = StoreWriter::open(&root).unwrap();
    w.append(Table::DeadLetters, dead_letters(0..3, BASE_NS))
        .unwrap();
    w.commit(&[]).unwrap();
    let version = Store::open(&root).unwrap().version();
    w.append(Table::Events, events(0..10, 1_000_000_000, BASE_NS))
        .unwrap();
    let err = w
        .commit_replacing(vec![(Table::DeadLetters, vec![events(0..1, 1, BASE_NS)])])
        .unwrap_err();
    assert!(err.to_string().contains("dead_letters"), "{err}");
    drop(w);
    let store = Store::open(&root).unwrap();
    assert_eq!(store.version(), version);
    assert_eq!(store.rows(Table::DeadLetters), 3);
    assert_eq!(store.rows(Table::Events), 0);
}

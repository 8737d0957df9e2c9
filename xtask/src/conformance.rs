//! `cargo xtask conformance`: zk-proto against ZooKeeper's own jute classes.
//!
//! `java/Conformance.java` serializes every record a client sends or receives, with varied
//! values, using the Java classes from Debian's `zookeeper-jute.jar` and `zookeeper.jar`. For
//! each case it prints the record's name, a label, the binary bytes, and the same record
//! walked field by field through a text `OutputArchive`. Here each case is decoded with
//! zk-proto, walked through [`TextVisitor`] (the same rendering), compared field by field, and
//! re-encoded and compared byte for byte. The transaction log's records are checked the same
//! way, and whole log records (`TxnLogEntry`: header, body by type, digest, as
//! `Util.marshallTxnEntry` writes them) are decoded with `zk_proto::txnlog::TxnEntry::decode`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::Command;

use zk_proto::records::*;
use zk_proto::txnlog::{
    CheckVersionTxn, CloseSessionTxn, CreateContainerTxn, CreateSessionTxn, CreateTtlTxn,
    CreateTxn, CreateTxnV0, DeleteTxn, ErrorTxn, FileHeader, MultiTxn, SetAclTxn, SetDataTxn,
    SetMaxChildrenTxn, Txn, TxnDigest, TxnEntry, TxnHeader,
};
use zk_proto::{
    Decode, Encode, MultiHeader, MultiRequest, MultiResponse, ReplyHeader, RequestHeader, Visit,
    Visitor, WatcherEvent,
};

use crate::deps::{self, Need};
use crate::java;

type Checker = fn(&[u8]) -> Result<(String, Vec<u8>), String>;

fn check<T: Decode + Encode + Visit>(bytes: &[u8]) -> Result<(String, Vec<u8>), String> {
    let value = T::decode_exact(bytes, "case").map_err(|e| format!("decode: {e}"))?;
    let bytes = value.to_bytes().map_err(|e| format!("encode: {e}"))?;
    Ok((render(&value), bytes.to_vec()))
}

/// A transaction log record's bytes (header, body by type, digest), as
/// `Util.marshallTxnEntry` writes them: decoded with [`TxnEntry::decode`].
fn check_txn_entry(bytes: &[u8]) -> Result<(String, Vec<u8>), String> {
    let value = TxnEntry::decode(bytes).map_err(|e| format!("decode: {e}"))?;
    let bytes = value.to_bytes().map_err(|e| format!("encode: {e}"))?;
    Ok((render(&value), bytes.to_vec()))
}

/// Every record type the Java side covers, by its Java name.
pub const RECORDS: &[(&str, Checker)] = &[
    ("Id", check::<Id>),
    ("ACL", check::<Acl>),
    ("Stat", check::<Stat>),
    ("ClientInfo", check::<ClientInfo>),
    ("ConnectRequest", check::<ConnectRequest>),
    ("ConnectResponse", check::<ConnectResponse>),
    ("SetWatches", check::<SetWatches>),
    ("SetWatches2", check::<SetWatches2>),
    ("RequestHeader", check::<RequestHeader>),
    ("MultiHeader", check::<MultiHeader>),
    ("AuthPacket", check::<AuthPacket>),
    ("ReplyHeader", check::<ReplyHeader>),
    ("GetDataRequest", check::<GetDataRequest>),
    ("SetDataRequest", check::<SetDataRequest>),
    ("ReconfigRequest", check::<ReconfigRequest>),
    ("SetDataResponse", check::<SetDataResponse>),
    ("GetSASLRequest", check::<GetSaslRequest>),
    ("SetSASLRequest", check::<SetSaslRequest>),
    ("SetSASLResponse", check::<SetSaslResponse>),
    ("CreateRequest", check::<CreateRequest>),
    ("CreateTTLRequest", check::<CreateTtlRequest>),
    ("DeleteRequest", check::<DeleteRequest>),
    ("GetChildrenRequest", check::<GetChildrenRequest>),
    (
        "GetAllChildrenNumberRequest",
        check::<GetAllChildrenNumberRequest>,
    ),
    ("GetChildren2Request", check::<GetChildren2Request>),
    ("CheckVersionRequest", check::<CheckVersionRequest>),
    ("SyncRequest", check::<SyncRequest>),
    ("SyncResponse", check::<SyncResponse>),
    ("GetACLRequest", check::<GetAclRequest>),
    ("SetACLRequest", check::<SetAclRequest>),
    ("SetACLResponse", check::<SetAclResponse>),
    ("AddWatchRequest", check::<AddWatchRequest>),
    ("WatcherEvent", check::<WatcherEvent>),
    ("ErrorResponse", check::<ErrorResponse>),
    ("CreateResponse", check::<CreateResponse>),
    ("Create2Response", check::<Create2Response>),
    ("ExistsRequest", check::<ExistsRequest>),
    ("ExistsResponse", check::<ExistsResponse>),
    ("GetDataResponse", check::<GetDataResponse>),
    ("GetChildrenResponse", check::<GetChildrenResponse>),
    (
        "GetAllChildrenNumberResponse",
        check::<GetAllChildrenNumberResponse>,
    ),
    ("GetChildren2Response", check::<GetChildren2Response>),
    ("GetACLResponse", check::<GetAclResponse>),
    ("CheckWatchesRequest", check::<CheckWatchesRequest>),
    ("RemoveWatchesRequest", check::<RemoveWatchesRequest>),
    ("GetEphemeralsRequest", check::<GetEphemeralsRequest>),
    ("GetEphemeralsResponse", check::<GetEphemeralsResponse>),
    ("WhoAmIResponse", check::<WhoAmIResponse>),
    ("MultiRequest", check::<MultiRequest>),
    ("MultiResponse", check::<MultiResponse>),
    ("FileHeader", check::<FileHeader>),
    ("TxnHeader", check::<TxnHeader>),
    ("TxnDigest", check::<TxnDigest>),
    ("CreateTxnV0", check::<CreateTxnV0>),
    ("CreateTxn", check::<CreateTxn>),
    ("CreateTTLTxn", check::<CreateTtlTxn>),
    ("CreateContainerTxn", check::<CreateContainerTxn>),
    ("DeleteTxn", check::<DeleteTxn>),
    ("SetDataTxn", check::<SetDataTxn>),
    ("CheckVersionTxn", check::<CheckVersionTxn>),
    ("SetACLTxn", check::<SetAclTxn>),
    ("SetMaxChildrenTxn", check::<SetMaxChildrenTxn>),
    ("CreateSessionTxn", check::<CreateSessionTxn>),
    ("CloseSessionTxn", check::<CloseSessionTxn>),
    ("ErrorTxn", check::<ErrorTxn>),
    ("Txn", check::<Txn>),
    ("MultiTxn", check::<MultiTxn>),
    ("TxnLogEntry", check_txn_entry),
];

/// Renders a record as `Conformance.java`'s `TextArchive` does: `tag=value;` for scalars
/// (strings as `s<hex of UTF-8>`, buffers as `b<hex>` or `null`), `tag{...};` for records,
/// `tag[...];` for vectors, whose elements have no tag.
pub fn render(value: &impl Visit) -> String {
    let mut v = TextVisitor::default();
    value.visit("", &mut v);
    v.out
}

/// The [`Visitor`] behind [`render`].
#[derive(Default)]
pub struct TextVisitor {
    out: String,
    /// For each open container: is it a vector?
    in_vector: Vec<bool>,
}

impl TextVisitor {
    fn tag<'t>(&self, tag: &'t str) -> &'t str {
        if self.in_vector.last() == Some(&true) {
            ""
        } else {
            tag
        }
    }

    fn scalar(&mut self, tag: &str, value: std::fmt::Arguments<'_>) {
        let tag = self.tag(tag);
        let _ = write!(self.out, "{tag}={value};");
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

impl Visitor for TextVisitor {
    fn int(&mut self, tag: &str, value: i32) {
        self.scalar(tag, format_args!("{value}"));
    }
    fn long(&mut self, tag: &str, value: i64) {
        self.scalar(tag, format_args!("{value}"));
    }
    fn bool(&mut self, tag: &str, value: bool) {
        self.scalar(tag, format_args!("{value}"));
    }
    fn string(&mut self, tag: &str, value: &str) {
        self.scalar(tag, format_args!("s{}", hex(value.as_bytes())));
    }
    fn buffer(&mut self, tag: &str, value: Option<&[u8]>) {
        match value {
            Some(b) => self.scalar(tag, format_args!("b{}", hex(b))),
            None => self.scalar(tag, format_args!("null")),
        }
    }
    fn start_record(&mut self, tag: &str) {
        let tag = self.tag(tag);
        let _ = write!(self.out, "{tag}{{");
        self.in_vector.push(false);
    }
    fn end_record(&mut self) {
        self.in_vector.pop();
        self.out.push_str("};");
    }
    fn start_vector(&mut self, tag: &str) {
        let tag = self.tag(tag);
        let _ = write!(self.out, "{tag}[");
        self.in_vector.push(true);
    }
    fn end_vector(&mut self) {
        self.in_vector.pop();
        self.out.push_str("];");
    }
}

fn unhex(s: &str) -> Result<Vec<u8>, String> {
    if s.len() % 2 != 0 {
        return Err("odd hex length".into());
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            s.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad hex at {i}"))
        })
        .collect()
}

/// Where two renderings first differ, as `expected … / got …` around the first differing
/// field.
fn first_difference(expected: &str, got: &str) -> String {
    let e: Vec<&str> = expected.split_inclusive(';').collect();
    let g: Vec<&str> = got.split_inclusive(';').collect();
    let i = e.iter().zip(&g).take_while(|(a, b)| a == b).count();
    let cut = |s: Option<&&str>| s.map_or("<end>".to_owned(), |s| s.chars().take(120).collect());
    format!(
        "field {i}: expected {} got {}",
        cut(e.get(i)),
        cut(g.get(i))
    )
}

/// The outcome of checking every case of one record type.
#[derive(Debug, Default)]
pub struct RecordResult {
    /// Cases checked.
    pub cases: usize,
    /// One message per failed case.
    pub failures: Vec<String>,
}

/// Checks the lines `Conformance.java` printed. Every name in [`RECORDS`] must be covered, and
/// every name in the input must be known.
pub fn check_cases(tsv: &str) -> BTreeMap<String, RecordResult> {
    let mut results: BTreeMap<String, RecordResult> = RECORDS
        .iter()
        .map(|(name, _)| ((*name).to_owned(), RecordResult::default()))
        .collect();
    for (n, line) in tsv.lines().enumerate().filter(|(_, l)| !l.is_empty()) {
        let mut cols = line.splitn(4, '\t');
        let (Some(name), Some(label), Some(hex), Some(text)) =
            (cols.next(), cols.next(), cols.next(), cols.next())
        else {
            results
                .entry("<malformed>".into())
                .or_default()
                .failures
                .push(format!("line {}", n + 1));
            continue;
        };
        let entry = results.entry(name.to_owned()).or_default();
        entry.cases += 1;
        let Some((_, checker)) = RECORDS.iter().find(|(known, _)| *known == name) else {
            entry
                .failures
                .push(format!("{label}: no Rust record of this name"));
            continue;
        };
        let outcome = unhex(hex).and_then(|bytes| {
            let (rendered, reencoded) = checker(&bytes)?;
            if rendered != text {
                return Err(format!(
                    "fields differ: {}",
                    first_difference(text, &rendered)
                ));
            }
            if reencoded != bytes {
                return Err(format!(
                    "re-encoded bytes differ ({} vs {} bytes)",
                    reencoded.len(),
                    bytes.len()
                ));
            }
            Ok(())
        });
        if let Err(e) = outcome {
            entry.failures.push(format!("{label}: {e}"));
        }
    }
    for result in results.values_mut() {
        if result.cases == 0 {
            result.failures.push("no case from the Java side".into());
        }
    }
    results
}

/// Compiles and runs `Conformance.java`, returning what it printed.
pub fn java_cases() -> Result<String, Box<dyn std::error::Error>> {
    deps::ensure(&[Need::Java, Need::ZooKeeper])?;
    let classpath = java::jars(&["zookeeper-jute", "zookeeper", "slf4j-api", "slf4j-nop"]);
    let classes = java::compile(
        "conformance",
        &[java::java_dir().join("Conformance.java")],
        &classpath,
    )?;
    let output = Command::new("java")
        .arg("-cp")
        .arg(format!("{}:{classpath}", classes.display()))
        .arg("Conformance")
        .output()?;
    if !output.status.success() {
        return Err(format!(
            "Conformance.java failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    Ok(String::from_utf8(output.stdout)?)
}

/// What one conformance run checked: record types, each with all its cases.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    /// Record types whose every case matched.
    pub passed: usize,
    /// Record types with at least one failed case (or none at all), by their Java name.
    pub failed: Vec<String>,
}

impl Checked {
    /// Counts [`check_cases`]'s results.
    pub fn of(results: &BTreeMap<String, RecordResult>) -> Checked {
        let mut checked = Checked::default();
        for (name, result) in results {
            if result.failures.is_empty() {
                checked.passed += 1;
            } else {
                checked.failed.push(name.clone());
            }
        }
        checked
    }

    /// Record types checked, passed or failed.
    pub fn records(&self) -> usize {
        self.passed + self.failed.len()
    }
}

/// Runs `Conformance.java`, checks its cases, prints one line per record type and
/// `conformance: N passed, N failed`, and returns those counts. A record type that fails is
/// counted, not an error.
///
/// # Errors
/// The Java side could not be built or run, so nothing was checked.
pub fn check_all() -> Result<Checked, Box<dyn std::error::Error>> {
    let results = check_cases(&java_cases()?);
    for (name, result) in &results {
        if result.failures.is_empty() {
            println!("ok    {name:<30} {} cases", result.cases);
        } else {
            println!(
                "FAIL  {name:<30} {} of {} cases",
                result.failures.len(),
                result.cases
            );
            for f in &result.failures {
                println!("        {f}");
            }
        }
    }
    let checked = Checked::of(&results);
    println!(
        "conformance: {} passed, {} failed",
        checked.passed,
        checked.failed.len()
    );
    Ok(checked)
}

/// `cargo xtask conformance`: [`check_all`], failing if any record type failed.
pub fn run() -> Result<(), Box<dyn std::error::Error>> {
    let checked = check_all()?;
    if !checked.failed.is_empty() {
        return Err(format!(
            "{} record types do not match the Java jute classes: {}",
            checked.failed.len(),
            checked.failed.join(", ")
        )
        .into());
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn renders_like_the_java_text_archive() {
        let acl = Acl {
            perms: Perms::ALL,
            id: Id::new("world", "anyone"),
        };
        assert_eq!(
            render(&acl),
            "{perms=31;id{scheme=s776f726c64;id=s616e796f6e65;};};"
        );
        let kids = GetChildrenResponse {
            children: vec!["a".into(), "b".into()],
        };
        assert_eq!(render(&kids), "{children[=s61;=s62;];};");
        let data = GetDataResponse {
            data: None,
            stat: Stat::default(),
        };
        assert!(render(&data).starts_with("{data=null;stat{czxid=0;"));
    }

    #[test]
    fn counts_record_types_not_cases() {
        let result = |cases, failures: &[&str]| RecordResult {
            cases,
            failures: failures.iter().map(|f| (*f).to_owned()).collect(),
        };
        let results = BTreeMap::from([
            ("Id".to_owned(), result(3, &[])),
            ("Stat".to_owned(), result(5, &[])),
            (
                "ACL".to_owned(),
                result(4, &["a: decode: short", "b: decode: short"]),
            ),
        ]);
        let checked = Checked::of(&results);
        assert_eq!(
            checked,
            Checked {
                passed: 2,
                failed: vec!["ACL".to_owned()]
            }
        );
        assert_eq!(checked.records(), 3);
    }

    #[test]
    fn reports_mismatches_and_missing_records() {
        let tsv = "Id\tok\t00000001610000000162\t{scheme=s61;id=s62;};\n\
                   Id\tbad-text\t00000001610000000162\t{scheme=s61;id=s63;};\n\
                   Id\ttrailing\t0000000161000000016200\t{scheme=s61;id=s62;};\n\
                   Nope\tx\t00\t{};\n";
        let results = check_cases(tsv);
        let id = &results["Id"];
        assert_eq!(id.cases, 3);
        assert_eq!(id.failures.len(), 2, "{:?}", id.failures);
        assert!(
            id.failures[0].contains("expected id=s63;"),
            "{}",
            id.failures[0]
        );
        assert!(id.failures[1].contains("trailing"), "{}", id.failures[1]);
        assert_eq!(results["Nope"].failures.len(), 1);
        assert_eq!(results["Stat"].failures, ["no case from the Java side"]);
        // Every known record type but Id lacks cases here, so only the unknown one is extra.
        let checked = Checked::of(&results);
        assert_eq!(checked.passed, 0);
        assert_eq!(checked.records(), RECORDS.len() + 1);
        assert!(checked.failed.contains(&"Nope".to_owned()));
    }
}

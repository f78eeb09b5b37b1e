//! `OperateOnTypes`: which item types an export or import moves, RavenDB's `[Flags] DatabaseItemType`
//! written as a comma-separated list of names.

/// A set of item types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemTypes(u32);

/// One item type, with RavenDB's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum ItemType {
    Documents,
    RevisionDocuments,
    Indexes,
    Identities,
    Tombstones,
    LegacyAttachments,
    Conflicts,
    CompareExchange,
    LegacyDocumentDeletions,
    LegacyAttachmentDeletions,
    DatabaseRecord,
    Unknown,
    Counters,
    Attachments,
    CounterGroups,
    Subscriptions,
    CompareExchangeTombstones,
    TimeSeries,
    ReplicationHubCertificates,
    TimeSeriesDeletedRanges,
}

const ALL: &[(ItemType, &str)] = &[
    (ItemType::Documents, "Documents"),
    (ItemType::RevisionDocuments, "RevisionDocuments"),
    (ItemType::Indexes, "Indexes"),
    (ItemType::Identities, "Identities"),
    (ItemType::Tombstones, "Tombstones"),
    (ItemType::LegacyAttachments, "LegacyAttachments"),
    (ItemType::Conflicts, "Conflicts"),
    (ItemType::CompareExchange, "CompareExchange"),
    (ItemType::LegacyDocumentDeletions, "LegacyDocumentDeletions"),
    (ItemType::LegacyAttachmentDeletions, "LegacyAttachmentDeletions"),
    (ItemType::DatabaseRecord, "DatabaseRecord"),
    (ItemType::Unknown, "Unknown"),
    (ItemType::Counters, "Counters"),
    (ItemType::Attachments, "Attachments"),
    (ItemType::CounterGroups, "CounterGroups"),
    (ItemType::Subscriptions, "Subscriptions"),
    (ItemType::CompareExchangeTombstones, "CompareExchangeTombstones"),
    (ItemType::TimeSeries, "TimeSeries"),
    (ItemType::ReplicationHubCertificates, "ReplicationHubCertificates"),
    (ItemType::TimeSeriesDeletedRanges, "TimeSeriesDeletedRanges"),
];

impl ItemType {
    fn bit(self) -> u32 {
        1 << (self as u32)
    }

    /// RavenDB's name of the type.
    pub fn name(self) -> &'static str {
        ALL.iter().find(|(t, _)| *t == self).map(|(_, n)| *n).unwrap_or("Unknown")
    }
}

impl ItemTypes {
    /// No type.
    pub const NONE: ItemTypes = ItemTypes(0);

    /// The clients' default (`DatabaseSmugglerOptions.DefaultOperateOnTypes`).
    pub fn default_types() -> ItemTypes {
        use ItemType::*;
        ItemTypes::of(&[
            Indexes,
            Documents,
            RevisionDocuments,
            Conflicts,
            DatabaseRecord,
            ReplicationHubCertificates,
            Identities,
            CompareExchange,
            Attachments,
            CounterGroups,
            Subscriptions,
            TimeSeries,
            TimeSeriesDeletedRanges,
        ])
    }

    /// The set of these types.
    pub fn of(types: &[ItemType]) -> ItemTypes {
        ItemTypes(types.iter().fold(0, |bits, t| bits | t.bit()))
    }

    /// Whether `t` is in the set. `Counters` (the name before 5.0) and `CounterGroups` mean the same.
    pub fn contains(self, t: ItemType) -> bool {
        let alias = match t {
            ItemType::Counters => ItemType::CounterGroups.bit(),
            ItemType::CounterGroups => ItemType::Counters.bit(),
            _ => 0,
        };
        self.0 & (t.bit() | alias) != 0
    }

    /// The set with `t` added.
    pub fn with(self, t: ItemType) -> ItemTypes {
        ItemTypes(self.0 | t.bit())
    }

    /// The set without `t`.
    pub fn without(self, t: ItemType) -> ItemTypes {
        ItemTypes(self.0 & !t.bit())
    }

    /// Parses `"Documents, Indexes"` (C#) or `"Documents,Indexes"` (Node); `None` or empty is no type; an
    /// unknown name is an error naming it.
    pub fn parse(text: &str) -> Result<ItemTypes, String> {
        let mut set = ItemTypes::NONE;
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if part.eq_ignore_ascii_case("None") {
                continue;
            }
            let (t, _) = ALL
                .iter()
                .find(|(_, name)| name.eq_ignore_ascii_case(part))
                .ok_or_else(|| format!("'{part}' is not a DatabaseItemType"))?;
            set = set.with(*t);
        }
        Ok(set)
    }

    /// The names, comma and space separated, as RavenDB writes flags (`None` for the empty set).
    pub fn render(self) -> String {
        let names: Vec<&str> = ALL.iter().filter(|(t, _)| self.0 & t.bit() != 0).map(|(_, n)| *n).collect();
        if names.is_empty() {
            "None".to_owned()
        } else {
            names.join(", ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_client_spellings_and_refuses_unknown_names() {
        let set = ItemTypes::parse("Documents, Indexes").unwrap();
        assert_eq!(set, ItemTypes::parse("documents,Indexes").unwrap());
        assert!(set.contains(ItemType::Documents) && set.contains(ItemType::Indexes));
        assert!(!set.contains(ItemType::Identities));
        assert_eq!(ItemTypes::parse("None").unwrap(), ItemTypes::NONE);
        assert!(ItemTypes::parse("Documents, Bogus").unwrap_err().contains("Bogus"));
        assert_eq!(set.render(), "Documents, Indexes");
    }

    #[test]
    fn counters_and_counter_groups_are_one_type() {
        assert!(ItemTypes::of(&[ItemType::Counters]).contains(ItemType::CounterGroups));
        assert!(ItemTypes::default_types().contains(ItemType::Counters));
    }
}

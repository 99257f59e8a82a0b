/// What start-up does with the segment journal it finds beside the database, decided from what
/// the two record of each other (etcd's rule for its write-ahead log: only a torn end may be cut;
/// anything else stops the start and names what is wrong).
///
/// - A journal whose records are whole is used: its revisions after the database's are replayed.
/// - A torn end — a last record cut short or damaged, with no whole record after it — is what a
///   crash in the middle of an append leaves; that record was never acknowledged. It is cut, and
///   the bytes cut off are kept in a file beside the journal.
/// - Zeros where pages never reached the disk (a whole zeroed sector, or zeros from the damage to
///   the end of its sector) followed by whole records, in a journal started in an earlier boot of the
///   machine and not synced at each append, are what a power cut leaves when the disk wrote the
///   file's pages out of order: everything from the hole on was appended after the last sync
///   (a sync covers the whole file), so cutting there keeps the promise of `--durability normal`.
/// - Anything else — a damaged record followed by whole ones, a journal that ends, whole or
///   not, before the records the database's change log keeps in it (``SealedJournals``), a
///   missing journal the database names, a journal of another database or an older one, a database that went back behind its
///   journal — stops the start with a message that names the file, the offset and the
///   revisions, and the command that shows and, when asked, drops what is in the way
///   (`syncd recover`).
package enum JournalRecovery {
    /// What to do.
    package enum Plan: Sendable {
        /// There is no journal and the database names none: start a new one.
        case create
        /// Use the journal as it is.
        case use(JournalScan)
        /// Cut the journal at the damage (a torn end), keeping the bytes cut off, then use it.
        case cutTornEnd(JournalScan, JournalScan.Damage)
        /// Cut the journal at the hole a power cut left, keeping the bytes cut off, then use it:
        /// the records after it were appended less than a sync interval before the cut.
        case cutAfterPowerCut(JournalScan, JournalScan.Damage)
        /// The journal's records are all in the database already (a move finished there, but the
        /// journal was not yet replaced): start a new one.
        case replace
        /// Do not start.
        case refuse(Problem)
    }

    /// Why start-up stops, and what `syncd recover --drop` would do about it.
    package struct Problem: Sendable, CustomStringConvertible {
        /// What is wrong, for a person, naming the files.
        package var message: String
        /// What dropping would lose, for a person.
        package var loss: String
        /// What `syncd recover --drop` does.
        package var remedy: Remedy

        package var description: String { message }
    }

    /// Where the records a database's change log keeps in one journal end (``SealedJournals``).
    package struct NamedRecords: Sendable {
        /// The offset after the last byte a row names.
        package var end: Int
        /// The revisions of those rows.
        package var revisions: ClosedRange<UInt64>
    }

    /// How `syncd recover --drop` gets past a ``Problem``.
    package enum Remedy: Sendable, Equatable {
        /// Cut the journal at this offset (the bytes cut off are kept beside it).
        case cut(at: Int)
        /// Move the journal aside (when there is one) and start a new one after the database's
        /// last revision.
        case startNewJournal
    }

    /// The plan for `contents`, found at `journal` beside the database at `database`, which holds
    /// revisions up to `databaseRevision` and records `link`.
    ///
    /// - Parameters:
    ///   - bootID: This boot of the machine (``JournalHeader/currentBootID``).
    ///   - named: Where the records the database's change log keeps in this journal end (the
    ///     rows that name its salt), and their revisions; nil when none.
    package static func plan(
        for contents: SegmentJournal.Contents, journal: String, database: String, link: JournalLink, databaseRevision: UInt64,
        bootID: UInt128, named: NamedRecords? = nil
    ) -> Plan {
        let recover = "`syncd recover --database \(database)` shows what starting without it would lose, and drops it with --drop"
        func refuse(_ message: String, loss: String, remedy: Remedy = .startNewJournal) -> Plan {
            .refuse(Problem(message: "\(message); \(recover)", loss: loss, remedy: remedy))
        }
        let unknownLoss = "the writes acknowledged after revision \(databaseRevision) that the journal held, if any"
        switch contents {
        case .missing:
            guard link.isLinked else { return .create }
            return refuse(
                """
                the segment journal \(journal) is missing: the database names one, which held every write acknowledged after \
                revision \(databaseRevision), the database's last; put it back (the database, its -wal, its -segments and every \
                -segments.* file are copied together, or a copy made with `syncctl backup`)
                """,
                loss: unknownLoss)
        case .notAJournal(let bytes):
            return refuse(
                "\(journal) (\(bytes) bytes) is not a syncd segment journal", loss: "nothing of the database; the file is moved aside")
        case .damagedHeader(let bytes):
            if !link.isLinked && bytes == 0 { return .create }
            return refuse("the header of the segment journal \(journal) (\(bytes) bytes) is damaged", loss: unknownLoss)
        case .journal(let scan):
            let header = scan.header
            if header.version == 2, header.databaseID != link.databaseID {
                let isNew = !link.isLinked && databaseRevision == 0
                return refuse(
                    """
                    the segment journal \(journal) belongs to another database (id \(header.databaseID), continuing after revision \
                    \(header.baseRevision)); this one is id \(link.databaseID) at revision \(databaseRevision)\
                    \(isNew ? ", and new: if the database's files were lost or removed, put them back" : "")
                    """,
                    loss: "nothing of this database; the other one's journal is moved aside")
            }
            if link.isLinked, header.version == 1 || header.salt != link.salt {
                if header.version == 2, header.salt == link.previousSalt {
                    // What it holds was moved into the database; only its replacement is missing.
                    if let last = scan.segments.last?.last, last > databaseRevision {
                        return refuse(
                            """
                            the segment journal \(journal) holds revisions up to \(last), which the database (at revision \
                            \(databaseRevision)) should hold but does not
                            """,
                            loss: "revisions \(databaseRevision + 1)–\(last)")
                    }
                    return .replace
                }
                if header.version == 2, header.baseRevision > databaseRevision {
                    return refuse(
                        """
                        the database \(database) ends at revision \(databaseRevision), but its segment journal \(journal) continues \
                        from revision \(header.baseRevision): the database lost revisions it held once (its write-ahead log, \
                        \(database)-wal, is missing or damaged, or an older copy of the database was put in its place); put back \
                        the files that belong together, or restore a backup with `syncctl restore`
                        """,
                        loss: "revisions \(databaseRevision + 1)–\(scan.segments.last?.last ?? header.baseRevision)")
                }
                return refuse(
                    """
                    the segment journal \(journal) is not the one the database names (it continues after revision \
                    \(header.baseRevision); the database's continues after revision \(link.baseRevision)): it is an older copy
                    """,
                    loss: unknownLoss)
            }
            if header.version == 2, link.isLinked, databaseRevision < header.baseRevision {
                return refuse(
                    """
                    the database \(database) ends at revision \(databaseRevision), but its segment journal \(journal) continues \
                    from revision \(header.baseRevision): the database lost revisions it held once (its write-ahead log is \
                    missing or damaged)
                    """,
                    loss: "revisions \(databaseRevision + 1)–\(scan.segments.last?.last ?? header.baseRevision)")
            }
            if let named, named.end > scan.end {
                let following = scan.damage?.followingRevisions
                let lost = scan.damage?.expectedRevision ?? (scan.segments.last?.last ?? header.baseRevision) + 1
                let what = scan.damage == nil ? "ends at offset \(scan.end)" : "is damaged at offset \(scan.end)"
                return refuse(
                    """
                    the segment journal \(journal) \(what), before the end of the records the database's change log keeps in it \
                    (revisions \(named.revisions.lowerBound)–\(named.revisions.upperBound), up to offset \(named.end)): those writes \
                    were acknowledged, so syncd does not drop them by itself
                    """,
                    loss: """
                        revisions \(lost)–\(max(following?.upperBound ?? 0, named.revisions.upperBound)) from the change log (history and \
                        replays of them; their changes to values too, where the database's entries do not hold them yet)
                        """,
                    remedy: .cut(at: scan.end))
            }
            guard let damage = scan.damage else { return .use(scan) }
            guard let following = damage.followingRevisions else { return .cutTornEnd(scan, damage) }
            if damage.looksUnwritten, header.version == 2, !header.syncsEachAppend, header.bootID != bootID, header.bootID != 0 {
                return .cutAfterPowerCut(scan, damage)
            }
            return refuse(
                """
                the segment journal \(journal) is damaged at offset \(damage.offset) (where revision \(damage.expectedRevision) \
                should start), and whole records of revisions \(following.lowerBound)–\(following.upperBound) follow at offset \
                \(damage.following[0].offset): those writes were acknowledged, so syncd does not cut them off by itself
                """,
                loss:
                    "revisions \(damage.expectedRevision)–\(following.upperBound) (bytes \(damage.offset)–\(damage.offset + damage.bytes) of the journal)",
                remedy: .cut(at: damage.offset))
        }
    }
}

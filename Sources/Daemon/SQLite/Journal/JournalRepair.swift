import Foundation
import GRDB
import SharedStateWire

/// What `syncd recover` finds beside a database that does not start, and what it drops when
/// asked: the operator's way past a journal start-up refuses (see ``JournalRecovery``), never
/// taken by syncd on its own.
///
/// ```swift
/// let repair = try JournalRepair(databasePath: path)
/// print(repair.report)              // what is wrong, and exactly what dropping would lose
/// if repair.isNeeded { print(try repair.drop()) }
/// ```
package struct JournalRepair: Sendable {
    /// The database file.
    package let databasePath: String
    /// Its journal.
    package var journalPath: String { databasePath + "-segments" }
    /// What start-up would do.
    package let plan: JournalRecovery.Plan
    private let link: JournalLink
    private let databaseRevision: UInt64
    private let contents: SegmentJournal.Contents
    /// A journal other than the current one that the change log keeps records in and that is
    /// missing or short, as start-up refuses it (see ``SealedJournals``); nil when there is none.
    package let missingRecords: String?

    /// Reads the database at `databasePath` and its journal, changing neither (a database from
    /// an older syncd has its schema brought up to date).
    ///
    /// - Throws: ``StorageError`` when either cannot be read.
    package init(databasePath: String) throws {
        guard FileManager.default.fileExists(atPath: databasePath) else {
            throw StorageError(path: databasePath, message: "does not exist")
        }
        self.databasePath = databasePath
        let queue: DatabaseQueue
        do {
            queue = try DatabaseQueue(path: databasePath)
            try StorageMigrations.migrator.migrate(queue)
            contents = try SegmentJournal.read(path: databasePath + "-segments")
            let sealed = SealedJournals(journalPath: databasePath + "-segments")
            let named: JournalRecovery.NamedRecords?
            (link, databaseRevision, named, missingRecords) = try queue.read { [contents] db in
                let link = try JournalLink.read(db)
                return (
                    link, try Storage.lastRevision(db), try contents.salt.flatMap { try SealedJournals.named(in: $0, db) },
                    try sealed.problem(db, database: databasePath, excluding: link.salt)
                )
            }
            try queue.close()
            plan = JournalRecovery.plan(
                for: contents, journal: databasePath + "-segments", database: databasePath, link: link,
                databaseRevision: databaseRevision, bootID: JournalHeader.currentBootID, named: named)
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(path: databasePath, message: "cannot read: \(Storage.describe(error))")
        }
    }

    /// Whether start-up refuses, so that only ``drop()`` gets past it.
    package var isNeeded: Bool {
        if case .refuse = plan { return true }
        return missingRecords != nil
    }

    /// What start-up would do, and, when it refuses, exactly what dropping would lose.
    package var report: String {
        var lines = ["database \(databasePath): revision \(databaseRevision)"]
        if let missingRecords {
            lines.append("syncd does not start: \(missingRecords)")
            lines.append(
                "--drop deletes the change log's rows that name those records, and records it as compacted through their last revision")
        }
        switch plan {
        case .create:
            lines.append("journal \(journalPath): none yet; syncd starts one")
        case .replace:
            lines.append("journal \(journalPath): its records are all in the database already; syncd starts a new one")
        case .use(let scan):
            lines.append("journal \(journalPath): whole, \(describe(scan.segments)); syncd starts from it")
        case .cutTornEnd(let scan, let damage):
            lines.append(
                "journal \(journalPath): \(describe(scan.segments)), then a torn record of \(damage.bytes) bytes at offset \(damage.offset), "
                    + "which syncd cuts off itself (it was never acknowledged; the bytes are kept beside the journal)")
        case .cutAfterPowerCut(let scan, let damage):
            lines.append(
                "journal \(journalPath): \(describe(scan.segments)), then a hole a power cut left at offset \(damage.offset); syncd cuts "
                    + "it and the records after it off itself (written less than a sync interval before the cut; the bytes are kept)")
            lines += dropped(damage.following.map(\.segment))
        case .refuse(let problem):
            lines.append("syncd does not start: \(problem.message)")
            lines.append("dropping it loses: \(problem.loss)")
            if case .journal(let scan) = contents, let damage = scan.damage, case .cut = problem.remedy {
                lines += dropped(damage.following.map(\.segment))
            }
            switch problem.remedy {
            case .cut(let offset):
                lines.append("--drop cuts the journal at offset \(offset), keeping the bytes cut off in a file beside it")
            case .startNewJournal:
                lines.append(
                    "--drop moves the journal aside (if there is one) and starts a new one after revision \(databaseRevision)")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// Does what the report says `--drop` does; returns what it did, for a person.
    ///
    /// - Throws: ``StorageError`` when a file cannot be changed; what was done before stays.
    package func drop() throws -> String {
        guard case .refuse(let problem) = plan else {
            guard missingRecords != nil else { return "nothing to drop" }
            return try dropRowsNamingWhatIsGone() ?? "nothing to drop"
        }
        switch problem.remedy {
        case .cut(let offset):
            let kept = try SegmentJournal.cut(path: journalPath, at: offset)
            return
                (["cut \(journalPath) at offset \(offset); the bytes cut off are in \(kept)"]
                + [try dropRowsNamingWhatIsGone()].compactMap { $0 })
                .joined(separator: "\n")
        case .startNewJournal:
            var done: [String] = []
            if FileManager.default.fileExists(atPath: journalPath) {
                let aside = "\(journalPath).set-aside-\(Int(Date().timeIntervalSince1970))"
                guard rename(journalPath, aside) == 0 else {
                    throw StorageError(path: journalPath, message: "cannot move aside: \(String(cString: strerror(errno)))")
                }
                done.append("moved \(journalPath) to \(aside)")
            }
            let next = link.succeeded(after: databaseRevision)
            let queue: DatabaseQueue
            do {
                queue = try DatabaseQueue(path: databasePath)
                // Synced before the new journal is put in place, whatever SQLite's default.
                try queue.writeWithoutTransaction { db in
                    try db.execute(sql: "PRAGMA synchronous = FULL")
                    try Storage.move([], entries: nil, link: next, db, .full)
                }
            } catch {
                throw StorageError(path: databasePath, message: "cannot record the new journal: \(Storage.describe(error))")
            }
            _ = try SegmentJournal.create(path: journalPath, header: next.header(syncsEachAppend: false), syncInterval: nil)
            try? queue.writeWithoutTransaction { db in try Storage.forgetPreviousJournal(db) }
            try? queue.close()
            done.append("started a new journal after revision \(databaseRevision)")
            // Rows that named records of the journal set aside keep them through its sealed
            // name; those whose file is gone too are dropped now, not by a second run.
            if let dropped = try dropRowsNamingWhatIsGone() { done.append(dropped) }
            return done.joined(separator: "\n")
        }
    }

    /// Deletes the change log's rows that name records no journal holds any more (see
    /// ``SealedJournals/dropRowsNamingWhatIsGone(_:)``); says what it dropped, nil when nothing.
    private func dropRowsNamingWhatIsGone() throws -> String? {
        let sealed = SealedJournals(journalPath: journalPath)
        do {
            let queue = try DatabaseQueue(path: databasePath)
            defer { try? queue.close() }
            let dropped = try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = FULL")
                return try Storage.inTransaction(db) { db in try sealed.dropRowsNamingWhatIsGone(db) }
            }
            return dropped.map {
                "dropped revisions \($0.lowerBound)–\($0.upperBound) from the change log (their journal no longer holds them); compacted through \($0.upperBound)"
            }
        } catch {
            throw StorageError(path: databasePath, message: "cannot drop the rows naming lost records: \(Storage.describe(error))")
        }
    }

    private func describe(_ segments: [SegmentJournal.Segment]) -> String {
        guard let first = segments.first, let last = segments.last else { return "no records" }
        return "\(segments.count) records, revisions \(first.first)–\(last.last)"
    }

    /// One line per revision that dropping loses (at most 50), with the keys it changed.
    private func dropped(_ segments: [SegmentJournal.Segment]) -> [String] {
        var lines: [String] = []
        var count = 0
        for segment in segments {
            guard let revisions = try? LogSegment.revisions(in: segment.body, first: segment.first, last: segment.last) else {
                lines.append("  revisions \(segment.first)–\(segment.last): a record that does not decode")
                continue
            }
            for revision in revisions {
                count += 1
                guard count <= 50 else { continue }
                let changes = revision.changes.map { "\($0.type == .put ? "put" : "delete") \($0.key)" }
                lines.append("  revision \(revision.revision): \(changes.joined(separator: ", "))")
            }
        }
        if count > 50 { lines.append("  … and \(count - 50) more revisions") }
        return lines
    }
}

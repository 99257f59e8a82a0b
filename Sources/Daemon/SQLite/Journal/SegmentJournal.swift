import Foundation
import SyncEngine
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The change log's newest commit groups, appended to a file beside the database
/// (`<database>-segments`): a commit is one `write` of its ``LogSegment``, where a SQLite
/// transaction took a page write, locks and three statements. ``Storage/materialize(changedEntries:)``
/// moves the segments into the database's `changes` table in batches; the journal keeps them
/// until it is replaced by an empty one (``replace(with:)``: past a size, at start-up and at a
/// clean stop).
///
/// The file is a ``JournalHeader`` and records (see ``JournalScan``). What an append survives:
/// - every append is in the kernel's hands once ``append(first:last:body:)`` returns: a crash of
///   syncd loses nothing;
/// - with `syncInterval` nil (`--durability full`) each append is synced before it returns;
///   otherwise an append finds the oldest record not yet synced and, when that is older than
///   `syncInterval`, syncs before it returns. The engine's writer syncs sooner (``sync()``,
///   half an interval after the oldest unsynced append): what a power cut can take is what was
///   appended in the last interval, and, the file being appended in order, what is left is a
///   prefix.
///
/// Used under the engine's right to commit (one commit, sync or move at a time); its size and
/// unsynced age may be read from anywhere.
package final class SegmentJournal: Sendable {
    package typealias Segment = JournalScan.Segment

    /// What a journal's file holds, read without changing it.
    package enum Contents: Sendable {
        /// There is no file.
        case missing
        /// A file of `bytes` bytes that does not start as a journal does.
        case notAJournal(bytes: Int)
        /// A journal's magic but fewer bytes than its header, or a header whose checksum fails.
        case damagedHeader(bytes: Int)
        /// A journal, read (see ``JournalScan``).
        case journal(JournalScan)

        /// The journal's salt, when it is one.
        package var salt: UInt64? {
            if case .journal(let scan) = self { return scan.header.salt }
            return nil
        }
    }

    /// The appends not yet synced: since when, and how many bytes.
    package struct Unsynced: Sendable {
        package var since: ContinuousClock.Instant
        package var bytes: UInt64
    }

    private struct OpenFile {
        var descriptor: Int32
        var size: UInt64
        /// The bytes from the start known synced: a move names only records before it.
        var syncedSize: UInt64
        var header: JournalHeader
        var unsynced: Unsynced?
        /// While a ``sync()`` runs: the appends made since it began, which it may not cover.
        var appendedDuringSync: Unsynced?
        var isSyncing = false
    }

    /// The journal's file.
    package let path: String
    /// How long an append may stay unsynced; nil: each append is synced.
    package let syncInterval: Duration?
    private let file: Mutex<OpenFile?>
    /// The longest any append stayed unsynced since the journal was opened.
    private let longestUnsynced = Mutex<Duration>(.zero)

    /// The largest record a journal takes; a commit group larger than this is refused.
    package static let maxRecordBytes = Int(UInt32.max)

    // MARK: Reading, creating, opening

    /// Reads the journal at `path` without changing it.
    ///
    /// - Throws: ``StorageError`` naming the file when it exists but cannot be read.
    package static func read(path: String) throws -> Contents {
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return .missing }
            throw error(path, "cannot open", errno)
        }
        defer { _ = Glibc.close(descriptor) }
        let contents = try readAll(descriptor, path: path)
        return contents.withUnsafeBytes { bytes in
            switch JournalHeader.parse(bytes) {
            case .header(let header): .journal(JournalScan(bytes, header: header))
            case .notAJournal: .notAJournal(bytes: bytes.count)
            case .short, .damaged: .damagedHeader(bytes: bytes.count)
            }
        }
    }

    /// Creates an empty journal with `header` at `path`, replacing any file there at once: it is
    /// written beside, synced, renamed over `path`, and the directory synced.
    ///
    /// - Throws: ``StorageError`` naming the file when any step fails; `path` is then as before.
    package static func create(path: String, header: JournalHeader, syncInterval: Duration?) throws -> SegmentJournal {
        let descriptor = try makeFile(path: path, header: header)
        return SegmentJournal(
            path: path, syncInterval: syncInterval,
            file: OpenFile(descriptor: descriptor, size: UInt64(header.encodedSize), syncedSize: UInt64(header.encodedSize), header: header)
        )
    }

    /// Opens the journal `scan` read at `path` to append after its last whole record. A file
    /// that goes on past it must have been cut (``cut(path:at:)``) first.
    ///
    /// - Throws: ``StorageError`` naming the file when it cannot be opened.
    package static func open(path: String, scan: JournalScan, syncInterval: Duration?) throws -> SegmentJournal {
        let descriptor = Glibc.open(path, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { throw error(path, "cannot open", errno) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_size == scan.end else {
            _ = Glibc.close(descriptor)
            throw StorageError(path: path, message: "changed while syncd read it; try again")
        }
        do {
            // A journal made before sealed names gets its own now: a move names it.
            try SealedJournals(journalPath: path).seal(salt: scan.header.salt)
        } catch {
            _ = Glibc.close(descriptor)
            throw error
        }
        // What was appended before this start may not be synced: the first move syncs it.
        return SegmentJournal(
            path: path, syncInterval: syncInterval,
            file: OpenFile(descriptor: descriptor, size: UInt64(scan.end), syncedSize: 0, header: scan.header))
    }

    /// Cuts the journal at `path` at `offset`, keeping the bytes cut off in a file beside it,
    /// synced before the journal is cut; returns that file's path.
    ///
    /// - Throws: ``StorageError`` naming the file when it cannot be kept or cut; the journal is
    ///   then as before.
    package static func cut(path: String, at offset: Int) throws -> String {
        let descriptor = Glibc.open(path, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { throw error(path, "cannot open", errno) }
        defer { _ = Glibc.close(descriptor) }
        let contents = try readAll(descriptor, path: path)
        guard offset < contents.count else { return "" }
        let kept = "\(path).cut-\(Int(Date().timeIntervalSince1970))-at-\(offset)"
        let copy = Glibc.open(kept, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard copy >= 0 else { throw error(kept, "cannot keep the cut bytes of", errno) }
        defer { _ = Glibc.close(copy) }
        try contents[offset...].withUnsafeBytes { try write($0, to: copy, at: 0, path: kept) }
        guard fsync(copy) == 0 else { throw error(kept, "cannot sync", errno) }
        try syncDirectory(of: kept)
        guard ftruncate(descriptor, off_t(offset)) == 0, fsync(descriptor) == 0 else { throw error(path, "cannot cut", errno) }
        return kept
    }

    private init(path: String, syncInterval: Duration?, file: OpenFile) {
        self.path = path
        self.syncInterval = syncInterval
        self.file = Mutex(file)
    }

    // MARK: Appending and syncing

    /// Appends one segment, revisions `first` through `last`: one `write`, then an `fdatasync`
    /// when each append syncs or the oldest unsynced append is older than the interval. Returns
    /// where the record is, and whether it synced for that second reason (late: the writer
    /// should have synced sooner). When it throws, the journal is as before.
    @discardableResult
    package func append(first: UInt64, last: UInt64, body: Data) throws -> Appended {
        try append(first: first, last: last, body: body, mayDeferSync: false)
    }

    /// Where an append put its record, and whether it synced late.
    package struct Appended: Sendable {
        /// The journal's salt, and the record's offset in it.
        package var salt: UInt64
        package var offset: UInt64
        /// Whether the append synced because the writer's sync was late.
        package var syncedLate: Bool
    }

    /// Appends a record naming `writers` (``JournalWriters``), which the commit group appended
    /// next names: it is never synced on its own, that group's append syncs both when it syncs.
    /// When it throws, the journal is as before.
    package func append(writers: [WriterIdentity]) throws {
        _ = try append(
            first: JournalWriters.revision, last: JournalWriters.revision, body: JournalWriters.body(of: writers), mayDeferSync: true)
    }

    private func append(first: UInt64, last: UInt64, body: Data, mayDeferSync: Bool) throws -> Appended {
        try file.withLock { (file: inout OpenFile?) throws -> Appended in
            guard var open = file else { throw StorageError(path: path, message: "the segment journal is closed") }
            let now = ContinuousClock.now
            let syncsNow: Bool
            let isLate: Bool
            if mayDeferSync {
                isLate = false
                syncsNow = false
            } else if let syncInterval {
                isLate = open.unsynced.map { $0.since.duration(to: now) >= syncInterval } ?? false
                syncsNow = isLate
            } else {
                isLate = false
                syncsNow = true
            }
            try body.withUnsafeBytes { (body: UnsafeRawBufferPointer) throws in
                guard body.count <= Self.maxRecordBytes else {
                    throw StorageError(path: path, message: "a commit group of \(body.count) bytes is larger than a record may be")
                }
                var header = (UInt64(0), UInt64(0), UInt64(0))
                try withUnsafeMutableBytes(of: &header) { (header: UnsafeMutableRawBufferPointer) throws in
                    header.storeBytes(of: UInt32(body.count).littleEndian, toByteOffset: 4, as: UInt32.self)
                    header.storeBytes(of: first.littleEndian, toByteOffset: 8, as: UInt64.self)
                    header.storeBytes(of: last.littleEndian, toByteOffset: 16, as: UInt64.self)
                    let crc = Self.checksum(salt: open.header.salt, header: UnsafeRawBufferPointer(header), body: body)
                    header.storeBytes(of: crc.littleEndian, toByteOffset: 0, as: UInt32.self)
                    do {
                        if !mayDeferSync { Failpoint.journalBeforeAppend.hit() }
                        try Self.write(UnsafeRawBufferPointer(header), body, to: open.descriptor, at: open.size, path: path)
                        if syncsNow, fdatasync(open.descriptor) != 0 { throw Self.error(path, "cannot sync", errno) }
                    } catch {
                        // Nothing of a record cut short may stay: the next one would follow it.
                        _ = ftruncate(open.descriptor, off_t(open.size))
                        throw error
                    }
                }
            }
            let appended = UInt64(JournalScan.recordHeaderSize + body.count)
            let offset = open.size
            open.size += appended
            if syncsNow {
                if let since = open.unsynced?.since { noteSynced(age: since.duration(to: now)) }
                open.unsynced = nil
                open.syncedSize = open.size
            } else {
                open.unsynced = Unsynced(since: open.unsynced?.since ?? now, bytes: (open.unsynced?.bytes ?? 0) + appended)
            }
            if open.isSyncing {
                open.appendedDuringSync = Unsynced(
                    since: open.appendedDuringSync?.since ?? now, bytes: (open.appendedDuringSync?.bytes ?? 0) + appended)
            }
            file = open
            return Appended(salt: open.header.salt, offset: offset, syncedLate: isLate)
        }
    }

    /// Syncs what was appended and not yet synced; does nothing when all of it is. Appends go on
    /// meanwhile: the `fdatasync` runs outside the lock, on a descriptor of its own, and what was
    /// appended while it ran counts as unsynced afterwards.
    ///
    /// - Throws: ``StorageError`` naming the file when `fdatasync` fails: the appends stay unsynced.
    package func sync() throws {
        let started = file.withLock { file -> (descriptor: Int32, since: ContinuousClock.Instant, size: UInt64, salt: UInt64)? in
            guard var open = file, let unsynced = open.unsynced, !open.isSyncing else { return nil }
            // A descriptor of its own: the journal may be replaced, and its own closed, meanwhile.
            let descriptor = dup(open.descriptor)
            guard descriptor >= 0 else { return nil }
            open.isSyncing = true
            open.appendedDuringSync = nil
            file = open
            return (descriptor, unsynced.since, open.size, open.header.salt)
        }
        guard let started else { return }
        let result = fdatasync(started.descriptor)
        let failure = errno
        _ = Glibc.close(started.descriptor)
        file.withLock { file in
            // Only the file it synced: a replacement meanwhile (and a sync begun on the new one)
            // must not be credited with it.
            guard var open = file, open.isSyncing, open.header.salt == started.salt else { return }
            open.isSyncing = false
            if result == 0 {
                noteSynced(age: started.since.duration(to: .now))
                // What came after the sync began; a replacement meanwhile left nothing unsynced.
                if open.unsynced != nil {
                    open.unsynced = open.appendedDuringSync
                    open.syncedSize = max(open.syncedSize, started.size)
                }
            }
            open.appendedDuringSync = nil
            file = open
        }
        if result != 0 { throw Self.error(path, "cannot sync", failure) }
    }

    private func noteSynced(age: Duration) {
        longestUnsynced.withLock { $0 = max($0, age) }
    }

    /// Replaces the journal by an empty one with `header` (see ``create(path:header:syncInterval:)``):
    /// call it once every segment it holds is durable in the database, which names `header`.
    ///
    /// - Throws: ``StorageError`` naming the file when the new one cannot be made; the journal
    ///   is then as before.
    package func replace(with header: JournalHeader) throws {
        try file.withLock { (file: inout OpenFile?) throws in
            guard let open = file else { throw StorageError(path: path, message: "the segment journal is closed") }
            let descriptor = try Self.makeFile(path: path, header: header)
            _ = Glibc.close(open.descriptor)
            if let since = open.unsynced?.since { noteSynced(age: since.duration(to: .now)) }
            // A sync running on the old file finds this one not syncing and changes nothing.
            file = OpenFile(
                descriptor: descriptor, size: UInt64(header.encodedSize), syncedSize: UInt64(header.encodedSize), header: header)
        }
    }

    // MARK: State

    /// The header the journal was started with.
    package var header: JournalHeader? { file.withLock { $0?.header } }

    /// The appends not yet synced; nil when every one is.
    package var unsynced: Unsynced? { file.withLock { $0?.unsynced } }

    /// The longest any append stayed unsynced since the journal was opened: a record's age when
    /// it was synced or moved into the database, or the oldest unsynced one's age now.
    package var longestUnsyncedAge: Duration {
        let current = unsynced.map { $0.since.duration(to: .now) } ?? .zero
        return max(current, longestUnsynced.withLock { $0 })
    }

    /// The open file's descriptor, for tests that make its writes fail; nil once closed.
    var descriptor: Int32? { file.withLock { $0?.descriptor } }

    /// Whether the journal takes appends: until ``close()``.
    package var isOpen: Bool { file.withLock { $0 != nil } }

    /// The journal's size in bytes.
    package var size: UInt64 { file.withLock { $0?.size ?? 0 } }

    /// The bytes from the journal's start that are synced: a record that ends there or before
    /// survives a power cut.
    package var syncedSize: UInt64 { file.withLock { $0?.syncedSize ?? 0 } }

    /// Closes the file; appends throw afterwards. A second close does nothing.
    package func close() {
        file.withLock { file in
            if let open = file { _ = Glibc.close(open.descriptor) }
            file = nil
        }
    }

    deinit { close() }

    // MARK: The file

    /// Writes a new file holding `header` beside `path`, syncs it, gives it its sealed name
    /// (``SealedJournals``), renames it over `path` and syncs the directory; returns it open for
    /// appending.
    private static func makeFile(path: String, header: JournalHeader) throws -> Int32 {
        let fresh = path + ".new"
        _ = unlink(fresh)
        let descriptor = Glibc.open(fresh, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw error(fresh, "cannot create", errno) }
        do {
            try header.bytes.withUnsafeBytes { try write($0, to: descriptor, at: 0, path: fresh) }
            guard fsync(descriptor) == 0 else { throw error(fresh, "cannot sync", errno) }
            // The rename's directory sync below makes the name stay.
            try SealedJournals.link(fresh, to: SealedJournals(journalPath: path).path(salt: header.salt), syncingDirectory: false)
            Failpoint.journalDuringReplace.hit()
            guard rename(fresh, path) == 0 else { throw error(path, "cannot put in place", errno) }
            try syncDirectory(of: path)
            return descriptor
        } catch {
            _ = Glibc.close(descriptor)
            _ = unlink(fresh)
            throw error
        }
    }

    /// Syncs the directory holding `path`, so that a file created or renamed there stays.
    static func syncDirectory(of path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        let descriptor = Glibc.open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw error(directory, "cannot open the directory of", errno) }
        defer { _ = Glibc.close(descriptor) }
        guard fsync(descriptor) == 0 else { throw error(directory, "cannot sync the directory of", errno) }
    }

    /// Writes `first` then `second` at `offset`: one `pwritev` unless the kernel writes less. The
    /// two vectors live on the stack: an array of them was an allocation per commit.
    private static func write(
        _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
        to descriptor: Int32, at offset: UInt64, path: String
    ) throws {
        try withUnsafeTemporaryAllocation(of: iovec.self, capacity: 2) { vectors in
            vectors[0] = iovec(iov_base: UnsafeMutableRawPointer(mutating: first.baseAddress), iov_len: first.count)
            vectors[1] = iovec(iov_base: UnsafeMutableRawPointer(mutating: second.baseAddress), iov_len: second.count)
            var remaining = first.count + second.count
            var position = offset
            var next = 0
            while remaining > 0 {
                let written = pwritev(descriptor, vectors.baseAddress! + next, Int32(2 - next), off_t(position))
                if written < 0 {
                    if errno == EINTR { continue }
                    throw error(path, "cannot write", errno)
                }
                remaining -= written
                position += UInt64(written)
                // Past what was written: whole vectors dropped, the next one advanced.
                var skip = written
                while next < 2, skip >= vectors[next].iov_len {
                    skip -= vectors[next].iov_len
                    next += 1
                }
                if skip > 0 {
                    vectors[next].iov_base += skip
                    vectors[next].iov_len -= skip
                }
            }
        }
    }

    private static func readAll(_ descriptor: Int32, path: String) throws -> Data {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw error(path, "cannot read its size", errno) }
        var contents = Data(count: Int(status.st_size))
        var offset = 0
        while offset < contents.count {
            let read = contents.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + offset, $0.count - offset, off_t(offset)) }
            if read < 0, errno == EINTR { continue }
            guard read > 0 else { throw error(path, "cannot read", read < 0 ? errno : EIO) }
            offset += read
        }
        return contents
    }

    private static func error(_ path: String, _ what: String, _ code: Int32) -> StorageError {
        StorageError(path: path, message: "\(what) the segment journal: \(String(cString: strerror(code)))")
    }
}

extension SegmentJournal {
    /// A record's checksum: the salt, the record's header after the checksum itself, the body.
    static func checksum(salt: UInt64, header: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer) -> UInt32 {
        let salted = withUnsafeBytes(of: salt.littleEndian) { CRC32C.checksum($0) }
        let headed = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: header[4...]), continuing: salted)
        return CRC32C.checksum(body, continuing: headed)
    }
}

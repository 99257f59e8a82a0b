import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The change log's newest commit groups, appended to a file beside the database
/// (`<database>-segments`): a commit is one `write` of its ``LogSegment``, where a SQLite
/// transaction took a page write, locks and three statements. ``Storage/materialize(changedEntries:)`` moves the
/// segments into the database's `changes` table in batches, then empties the journal.
///
/// The file is a header (8 bytes of magic, then a random salt chosen each time the journal is
/// emptied) and records, each a header of 24 bytes (little-endian: CRC-32C, body length, first
/// and last revision) and the segment's body. The checksum covers the salt, the rest of the
/// record's header and its body, so a record cut short by a crash, damaged, or left from before
/// the journal was last emptied ends the journal. Opening reads every record up to the first
/// that is not whole and continuous, and cuts the file there: a write is answered only once its
/// record is written (and, with `--durability full`, synced), so what is cut was never
/// acknowledged.
///
/// Used under the engine's right to commit (one commit or materialisation at a time); its size
/// may be read from anywhere.
package final class SegmentJournal: Sendable {
    /// One commit group: its consecutive revisions `first` through `last`, as a ``LogSegment``
    /// body.
    package struct Segment: Sendable, Equatable {
        package let first: UInt64
        package let last: UInt64
        package let body: Data
    }

    /// What opening the journal found.
    package struct Recovered: Sendable {
        /// The whole records, in order.
        package var segments: [Segment] = []
        /// The bytes after them that were cut off, and where they began; nil when none.
        package var cutTail: (offset: UInt64, bytes: UInt64)?
    }

    private struct OpenFile {
        var descriptor: Int32
        var size: UInt64
        var salt: UInt64
    }

    /// The journal's file.
    package let path: String
    private let syncsEachAppend: Bool
    private let file: Mutex<OpenFile?>

    static let magic = Array("SYNCSEG1".utf8)
    static let fileHeaderSize = 16
    static let recordHeaderSize = 24

    /// Opens the journal at `path`, creating it (mode 0600) when missing, and reads its records.
    ///
    /// - Parameter syncsEachAppend: Whether each append waits for `fdatasync` (`--durability full`).
    /// - Throws: ``StorageError`` naming the file when it cannot be opened, read or repaired, or
    ///   is not a segment journal.
    package static func open(path: String, syncsEachAppend: Bool) throws -> (SegmentJournal, Recovered) {
        let descriptor = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw error(path, "cannot open", errno) }
        do {
            let contents = try readAll(descriptor, path: path)
            var recovered = Recovered()
            let salt: UInt64
            let end: Int
            if contents.count < fileHeaderSize {
                // New, or its header was cut short: no record can follow a torn header.
                salt = UInt64.random(in: .min ... .max)
                try writeHeader(descriptor, salt: salt, path: path)
                if !contents.isEmpty { recovered.cutTail = (0, UInt64(contents.count)) }
                end = fileHeaderSize
            } else {
                guard contents.prefix(magic.count).elementsEqual(magic) else {
                    throw StorageError(path: path, message: "is not a syncd segment journal (move it away if it is not needed)")
                }
                salt = contents.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: magic.count, as: UInt64.self).littleEndian }
                let read = contents.withUnsafeBytes { records(in: $0, salt: salt) }
                recovered.segments = read.0
                end = read.end
                if end < contents.count {
                    recovered.cutTail = (UInt64(end), UInt64(contents.count - end))
                    guard ftruncate(descriptor, off_t(end)) == 0 else { throw error(path, "cannot cut its torn tail", errno) }
                }
            }
            let journal = SegmentJournal(
                path: path, syncsEachAppend: syncsEachAppend, file: OpenFile(descriptor: descriptor, size: UInt64(end), salt: salt))
            return (journal, recovered)
        } catch {
            _ = Glibc.close(descriptor)
            throw error
        }
    }

    private init(path: String, syncsEachAppend: Bool, file: OpenFile) {
        self.path = path
        self.syncsEachAppend = syncsEachAppend
        self.file = Mutex(file)
    }

    /// The whole, continuous records at the start of `records` (the file without its header),
    /// and where they end in the file.
    static func records(in contents: UnsafeRawBufferPointer, salt: UInt64) -> ([Segment], end: Int) {
        var segments: [Segment] = []
        var offset = fileHeaderSize
        while contents.count - offset >= recordHeaderSize {
            let header = UnsafeRawBufferPointer(rebasing: contents[offset..<offset + recordHeaderSize])
            let crc = UInt32(littleEndianBytes: header, at: 0)
            let length = Int(UInt32(littleEndianBytes: header, at: 4))
            let first = UInt64(littleEndian: header.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            let last = UInt64(littleEndian: header.loadUnaligned(fromByteOffset: 16, as: UInt64.self))
            let bodyStart = offset + recordHeaderSize
            guard contents.count - bodyStart >= length, first <= last else { break }
            let body = UnsafeRawBufferPointer(rebasing: contents[bodyStart..<bodyStart + length])
            guard checksum(salt: salt, header: header, body: body) == crc else { break }
            if let previous = segments.last, first != previous.last &+ 1 { break }
            segments.append(Segment(first: first, last: last, body: Data(body)))
            offset = bodyStart + length
        }
        return (segments, offset)
    }

    /// A record's checksum: the salt, the record's header after the checksum itself, the body.
    private static func checksum(salt: UInt64, header: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer) -> UInt32 {
        let salted = withUnsafeBytes(of: salt.littleEndian) { CRC32C.checksum($0) }
        let headed = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: header[4...]), continuing: salted)
        return CRC32C.checksum(body, continuing: headed)
    }

    /// Appends one segment, revisions `first` through `last`: one `write` (and an `fdatasync`
    /// when each append syncs). When it throws, the journal is as before.
    package func append(first: UInt64, last: UInt64, body: Data) throws {
        try file.withLock { (file: inout OpenFile?) throws in
            guard let open = file else { throw StorageError(path: path, message: "the segment journal is closed") }
            try body.withUnsafeBytes { (body: UnsafeRawBufferPointer) throws in
                guard body.count <= UInt32.max else {
                    throw StorageError(path: path, message: "a commit group of \(body.count) bytes is larger than a record may be")
                }
                var header = (UInt64(0), UInt64(0), UInt64(0))
                try withUnsafeMutableBytes(of: &header) { (header: UnsafeMutableRawBufferPointer) throws in
                    header.storeBytes(of: UInt32(body.count).littleEndian, toByteOffset: 4, as: UInt32.self)
                    header.storeBytes(of: first.littleEndian, toByteOffset: 8, as: UInt64.self)
                    header.storeBytes(of: last.littleEndian, toByteOffset: 16, as: UInt64.self)
                    let crc = Self.checksum(salt: open.salt, header: UnsafeRawBufferPointer(header), body: body)
                    header.storeBytes(of: crc.littleEndian, toByteOffset: 0, as: UInt32.self)
                    do {
                        try Self.write(UnsafeRawBufferPointer(header), body, to: open.descriptor, at: open.size, path: path)
                        if syncsEachAppend, fdatasync(open.descriptor) != 0 { throw Self.error(path, "cannot sync", errno) }
                    } catch {
                        // Nothing of a record cut short may stay: the next one would follow it.
                        _ = ftruncate(open.descriptor, off_t(open.size))
                        throw error
                    }
                }
                file!.size += UInt64(Self.recordHeaderSize + body.count)
            }
        }
    }

    /// Empties the journal, under a new salt: call it once every segment it holds is durable in
    /// the database.
    package func reset() throws {
        try file.withLock { (file: inout OpenFile?) throws in
            guard let open = file else { return }
            let salt = UInt64.random(in: .min ... .max)
            guard ftruncate(open.descriptor, 0) == 0 else { throw Self.error(path, "cannot empty", errno) }
            try Self.writeHeader(open.descriptor, salt: salt, path: path)
            file = OpenFile(descriptor: open.descriptor, size: UInt64(Self.fileHeaderSize), salt: salt)
        }
    }

    /// The open file's descriptor, for tests that make its writes fail; nil once closed.
    var descriptor: Int32? { file.withLock { $0?.descriptor } }

    /// Whether the journal takes appends: until ``close()``.
    package var isOpen: Bool { file.withLock { $0 != nil } }

    /// The journal's size in bytes.
    package var size: UInt64 { file.withLock { $0?.size ?? 0 } }

    /// Closes the file; appends throw afterwards. A second close does nothing.
    package func close() {
        file.withLock { file in
            if let open = file { _ = Glibc.close(open.descriptor) }
            file = nil
        }
    }

    deinit { close() }

    // MARK: The file

    private static func writeHeader(_ descriptor: Int32, salt: UInt64, path: String) throws {
        var header = magic
        withUnsafeBytes(of: salt.littleEndian) { header.append(contentsOf: $0) }
        try header.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) throws in
            try write(bytes, to: descriptor, at: 0, path: path)
        }
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

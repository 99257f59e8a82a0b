import Foundation
import SyncEngine

/// The writers a journal names before the revisions they wrote: a record of revisions 0 through
/// 0 (no commit group starts at 0) whose body lists each writer's session, process, user, group
/// and client name. A connection's first write appends one beside its commit group instead of
/// inserting a `sessions` row on the answer's path; the move into the database inserts the rows,
/// and start-up inserts those of the journal it finds, so who wrote a revision survives whatever
/// the revision survives.
///
/// The body, little-endian: the number of writers (4 bytes), then for each its session (8), pid
/// (4), uid (4), gid (4), the length of its client name (4) and the name in UTF-8.
enum JournalWriters {
    /// The revisions a writers record names in place of a commit group's.
    static let revision: UInt64 = 0

    /// The body of a record naming `writers`.
    static func body(of writers: [WriterIdentity]) -> Data {
        var body = Data()
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { body.append(contentsOf: $0) } }
        append(UInt32(writers.count))
        for writer in writers {
            let name = Data(writer.clientName.utf8)
            append(writer.session)
            append(writer.pid)
            append(writer.uid)
            append(writer.gid)
            append(UInt32(name.count))
            body.append(name)
        }
        return body
    }

    /// The writers a record's body names; nil when it is not such a body (its checksum held, so
    /// only a journal written by another program could hold one).
    static func writers(in body: UnsafeRawBufferPointer) -> [WriterIdentity]? {
        var offset = 0
        func read<T: FixedWidthInteger>(_: T.Type) -> T? {
            guard body.count - offset >= MemoryLayout<T>.size else { return nil }
            defer { offset += MemoryLayout<T>.size }
            return T(littleEndian: body.loadUnaligned(fromByteOffset: offset, as: T.self))
        }
        guard let count = read(UInt32.self) else { return nil }
        var writers: [WriterIdentity] = []
        for _ in 0..<count {
            guard let session = read(UInt64.self), let pid = read(Int32.self), let uid = read(UInt32.self), let gid = read(UInt32.self),
                let length = read(UInt32.self).map(Int.init), body.count - offset >= length
            else { return nil }
            let name = String(decoding: UnsafeRawBufferPointer(rebasing: body[offset..<offset + length]), as: UTF8.self)
            offset += length
            writers.append(WriterIdentity(session: session, clientName: name, pid: pid, uid: uid, gid: gid))
        }
        return offset == body.count ? writers : nil
    }
}

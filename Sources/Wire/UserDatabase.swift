#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The user and group databases (`/etc/passwd`, `/etc/group`, or whatever NSS serves), read with
/// the reentrant calls: `getpwuid` and `getgrgid` return a buffer shared by every thread, which a
/// lookup on another event loop may overwrite while this one reads it.
package enum UserDatabase {
    /// The name of user `uid`; nil when the database has none.
    package static func userName(of uid: uid_t) -> String? {
        withPasswd(of: uid) { $0.pw_name.map { String(cString: $0) } }
    }

    /// The home directory of user `uid`; nil when the database has none.
    package static func homeDirectory(of uid: uid_t) -> String? {
        withPasswd(of: uid) { $0.pw_dir.map { String(cString: $0) } }
    }

    /// The name of group `gid`; nil when the database has none.
    package static func groupName(of gid: gid_t) -> String? {
        withBuffer { buffer in
            var entry = group()
            var result: UnsafeMutablePointer<group>?
            let status = getgrgid_r(gid, &entry, buffer.baseAddress!, buffer.count, &result)
            guard status != ERANGE else { return .bufferTooSmall }
            return .done(status == 0 && result != nil ? entry.gr_name.map { String(cString: $0) } : nil)
        }
    }

    private static func withPasswd<R>(of uid: uid_t, _ body: (passwd) -> R?) -> R? {
        withBuffer { buffer in
            var entry = passwd()
            var result: UnsafeMutablePointer<passwd>?
            let status = getpwuid_r(uid, &entry, buffer.baseAddress!, buffer.count, &result)
            guard status != ERANGE else { return .bufferTooSmall }
            return .done(status == 0 && result != nil ? body(entry) : nil)
        }
    }

    private enum Attempt<R> {
        case done(R?)
        case bufferTooSmall
    }

    /// Calls `lookup` with a buffer for the entry's strings, twice as large each time it is too small.
    private static func withBuffer<R>(_ lookup: (UnsafeMutableBufferPointer<CChar>) -> Attempt<R>) -> R? {
        var size = 4096
        while size <= 1 << 20 {
            var storage = [CChar](repeating: 0, count: size)
            switch storage.withUnsafeMutableBufferPointer({ lookup($0) }) {
            case .done(let result): return result
            case .bufferTooSmall: size *= 2
            }
        }
        return nil
    }
}

import SharedStateWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Why this process may not connect to a socket syncd is listening on, and the way out: syncd
/// makes its socket readable and writable by its owner and its group only (mode 0660), so a user
/// in neither gets `EACCES`, which `strerror` words as if nothing were listening.
enum SocketPermission {
    /// The sentence for a connection to `path` refused with `EACCES`.
    static func refusal(of path: String) -> String {
        var status = stat()
        guard stat(path, &status) == 0 else {
            return "permission denied: a directory on the way to the socket is closed to this process "
                + "(\(String(cString: strerror(errno))))"
        }
        let group = groupName(status.st_gid)
        let owner = userName(status.st_uid)
        let me = userName(getuid())
        return "permission denied: the socket is \(modeText(status.st_mode)) (owner \(owner), group \(group)), and this process "
            + "(user \(me)) is neither its owner nor in group \(group). Add the user to group \(group) (then log in again), "
            + "or start syncd with --socket-group naming a group the user is in"
    }

    /// `mode` as `ls -l` prints it, the file type first: `srw-rw----`.
    static func modeText(_ mode: mode_t) -> String {
        let type: Character = (mode & S_IFMT) == S_IFSOCK ? "s" : (mode & S_IFMT) == S_IFDIR ? "d" : "-"
        var text = String(type)
        for shift in stride(from: 6, through: 0, by: -3) {
            let bits = (mode >> mode_t(shift)) & 0o7
            text += (bits & 0o4 != 0 ? "r" : "-") + (bits & 0o2 != 0 ? "w" : "-") + (bits & 0o1 != 0 ? "x" : "-")
        }
        return text
    }

    private static func userName(_ uid: uid_t) -> String {
        UserDatabase.userName(of: uid) ?? "\(uid)"
    }

    private static func groupName(_ gid: gid_t) -> String {
        UserDatabase.groupName(of: gid) ?? "\(gid)"
    }
}

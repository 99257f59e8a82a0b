#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where syncd listens and keeps its database when nothing says otherwise. syncd, syncctl and the
/// client library resolve the socket the same way, so they meet without configuration.
public enum DefaultLocations {
    /// The socket path: `$SYNCD_SOCKET`, else `$RUNTIME_DIRECTORY/syncd.sock` (systemd), else
    /// `$XDG_RUNTIME_DIR/syncd/syncd.sock`, else `/tmp/syncd-$UID/syncd.sock`.
    public static func socketPath(environment: [String: String]) -> String {
        if let path = nonEmpty(environment["SYNCD_SOCKET"]) { return path }
        if let directory = firstPath(environment["RUNTIME_DIRECTORY"]) { return directory + "/syncd.sock" }
        if let directory = nonEmpty(environment["XDG_RUNTIME_DIR"]) { return directory + "/syncd/syncd.sock" }
        return "/tmp/syncd-\(getuid())/syncd.sock"
    }

    /// The socket of the system-wide syncd that `syncd.socket` (systemd/) listens on.
    public static let systemSocketPath = "/run/syncd/syncd.sock"

    /// The socket a client connects to: `$SYNCD_SOCKET` if set; else syncd's own default
    /// (``socketPath(environment:)``) when a socket exists there; else the system-wide syncd's
    /// socket when one exists; else syncd's own default, so a failure names where syncd would be.
    public static func clientSocketPath(environment: [String: String]) -> String {
        let personal = socketPath(environment: environment)
        if nonEmpty(environment["SYNCD_SOCKET"]) != nil || exists(personal) { return personal }
        return exists(systemSocketPath) ? systemSocketPath : personal
    }

    private static func exists(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }

    /// The database path: `$SYNCD_DATABASE`, else `$STATE_DIRECTORY/state.sqlite` (systemd), else
    /// `$XDG_STATE_HOME/syncd/state.sqlite`, else `~/.local/state/syncd/state.sqlite`.
    public static func databasePath(environment: [String: String]) -> String {
        if let path = nonEmpty(environment["SYNCD_DATABASE"]) { return path }
        if let directory = firstPath(environment["STATE_DIRECTORY"]) { return directory + "/state.sqlite" }
        if let directory = nonEmpty(environment["XDG_STATE_HOME"]) { return directory + "/syncd/state.sqlite" }
        let home = nonEmpty(environment["HOME"]) ?? homeDirectoryFromPasswd() ?? "/tmp"
        return home + "/.local/state/syncd/state.sqlite"
    }

    private static func nonEmpty(_ value: String?) -> String? {
        guard let value, !value.isEmpty else { return nil }
        return value
    }

    /// systemd passes several directories separated by ':' when a unit names several.
    private static func firstPath(_ value: String?) -> String? {
        nonEmpty(value).flatMap { $0.split(separator: ":").first.map(String.init) }
    }

    private static func homeDirectoryFromPasswd() -> String? {
        UserDatabase.homeDirectory(of: getuid())
    }
}

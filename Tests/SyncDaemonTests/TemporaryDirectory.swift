import Foundation

/// A directory under the system's temporary directory, removed when the value goes away.
final class TemporaryDirectory {
    let path: String

    init() throws {
        // Short, so socket paths inside stay under the 107-byte limit.
        path = "/tmp/ss-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { path + "/" + name }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

import Foundation

/// Creates the directories syncd keeps its files in, readable by its own user only.
package enum PrivateDirectory {
    /// Creates the directory that will hold `path`, mode 0700, if it does not exist yet.
    ///
    /// - Parameter purpose: What the directory is for, such as "database", for the error message.
    /// - Throws: ``DaemonStartError`` naming the directory when it cannot be created.
    package static func createParent(of path: String, purpose: String) throws(DaemonStartError) {
        let directory = (path as NSString).deletingLastPathComponent
        guard !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) else { return }
        do {
            try FileManager.default.createDirectory(
                atPath: directory,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        } catch {
            throw DaemonStartError("cannot create the \(purpose) directory \(directory): \(error.localizedDescription)")
        }
    }
}

/// The error that says a client may not do something: one wording, whichever part of syncd
/// refuses (a request, or a watch the access policy ended).
package enum AccessDenial {
    /// `who` may not `action` (`"read key 'a/b'"`).
    package static func error(_ who: String, _ action: String) -> SharedStateError {
        SharedStateError(.permissionDenied, "permission denied: \(who) may not \(action)")
    }

    /// The action of reading anything under `prefix`.
    package static func readingAnything(under prefix: String) -> String {
        prefix.isEmpty ? "read any key" : "read any key under \(KeyRules.quoted(prefix))"
    }
}

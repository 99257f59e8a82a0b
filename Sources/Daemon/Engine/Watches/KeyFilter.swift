/// Which keys a client may see: true for a key it may read. Watches, lists and snapshots leave out
/// every other key, values and names alike.
package typealias KeyFilter = @Sendable (String) -> Bool

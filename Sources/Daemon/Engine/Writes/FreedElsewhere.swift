import Dispatch

/// Frees a large value on another thread than the one that is done with it.
///
/// The value moves into a box that only the other thread's task holds, so the last reference is
/// dropped there whichever thread runs first.
package final class FreedElsewhere<Value>: @unchecked Sendable {
    private var value: Value?

    private init(_ value: consuming Value) {
        self.value = consume value
    }

    static func free(_ value: consuming Value) {
        let box = FreedElsewhere(value)
        DispatchQueue.global(qos: .background).async { box.value = nil }
    }
}

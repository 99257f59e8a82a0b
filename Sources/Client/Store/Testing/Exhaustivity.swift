/// How much a ``TestStore`` insists on.
public enum Exhaustivity: Sendable, Equatable {
    /// Every state change must be asserted, every action an effect sends must be received, and
    /// every effect must have finished by the end of the test.
    case on
    /// Only what the test asserts is checked: a `send` or `receive` closure checks the fields it
    /// sets, `receive` skips actions until one matches, and leftover actions and effects are
    /// fine. For integration-style tests of large features.
    ///
    /// With `showSkippedAssertions`, what an exhaustive test would have failed on is reported as
    /// a known issue: visible in the test's output, without failing it.
    case off(showSkippedAssertions: Bool)

    /// Checks only what the test asserts, silently; see ``off(showSkippedAssertions:)``.
    public static let off = Self.off(showSkippedAssertions: false)
}

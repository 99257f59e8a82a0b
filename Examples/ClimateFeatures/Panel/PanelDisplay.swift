import Foundation
import SharedState

/// Where the panel shows its screen: standard output in the process, a list in tests.
public struct PanelDisplay: Sendable {
    /// Shows one line.
    public var show: @Sendable (String) -> Void

    public init(show: @escaping @Sendable (String) -> Void) {
        self.show = show
    }
}

extension PanelDisplay: DependencyKey {
    public static let liveValue = PanelDisplay { line in
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
    public static let testValue = PanelDisplay { _ in }
}

extension DependencyValues {
    /// Where the panel shows its screen.
    public var panelDisplay: PanelDisplay {
        get { self[PanelDisplay.self] }
        set { self[PanelDisplay.self] = newValue }
    }
}

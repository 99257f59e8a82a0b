/// What started an effect: the feature (the reducer of the store it runs in) and the action whose
/// reduction returned it.
///
/// Code inside an effect reads ``current``; the shared-state client uses it as the cause of the
/// writes an effect makes, so `syncctl history` can say which feature wrote a key while handling
/// which action. The action is described only when asked, so starting an effect costs nothing
/// more.
public struct EffectOrigin: Sendable {
    /// The feature: its reducer's type name, without the wrappers of modifiers
    /// (`_printChanges()` makes `LoggingReducer<Thermostat>`; this is `Thermostat`).
    public let feature: String
    let action: any Sendable

    init(feature: String, action: any Sendable) {
        var feature = feature
        while let open = feature.firstIndex(of: "<"), let close = feature.lastIndex(of: ">"), open < close {
            feature = String(feature[feature.index(after: open)..<close])
            if let comma = feature.firstIndex(of: ",") { feature = String(feature[..<comma]) }
        }
        self.feature = feature
        self.action = action
    }

    /// The origin of the effect the current task runs in; nil outside effects.
    public static var current: EffectOrigin? { EffectContext.current?.origin }

    /// `Feature: action` on one line: the action with its payload when that is short
    /// (`Panel: requestApplied("r7")`), else its case alone (`Thermostat: decisionPublished(…)`);
    /// at most `maxBytes` bytes of UTF-8.
    public func description(maxBytes: Int = 256) -> String {
        var action = String(
            String.UnicodeScalarView(
                String(describing: self.action).unicodeScalars.map { $0.properties.generalCategory == .control ? " " : $0 }))
        if action.count > Self.longestPayloadShown, let open = action.firstIndex(of: "(") {
            action = action[..<open] + "(…)"
        }
        var description = feature + ": " + action
        while description.utf8.count > maxBytes { description.removeLast() }
        return description
    }

    /// The longest action description shown with its payload.
    static let longestPayloadShown = 64
}

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

    /// `Feature: action` on one line, the action as the path of cases down to the one the
    /// feature handled (`Panel: path.element(id: #0).setLocked(true)`), each step with what it
    /// carries besides the next step, and the last with its payload when that is short
    /// (`Panel: requestApplied("r7")`), else its case alone (`Thermostat: decisionPublished(…)`);
    /// at most `maxBytes` bytes of UTF-8.
    public func description(maxBytes: Int = 256) -> String {
        var description = feature + ": " + Self.path(of: action)
        description = String(
            String.UnicodeScalarView(description.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : $0 }))
        while description.utf8.count > maxBytes { description.removeLast() }
        return description
    }

    /// `action` as the path of its cases: each enum case whose payload holds another action (an
    /// enum other than `Optional` or `Result`, alone or as the last such field of a tuple) is a
    /// step, named with the tuple's other fields; the first that does not is the leaf.
    static func path(of action: Any) -> String {
        var steps: [String] = []
        var current = action
        while true {
            let mirror = Mirror(reflecting: current)
            guard mirror.displayStyle == .enum, let child = mirror.children.first, let name = child.label,
                let (next, fields) = nestedAction(in: child.value)
            else {
                steps.append(leaf(current))
                return steps.joined(separator: ".")
            }
            steps.append(fields.isEmpty ? name : "\(name)(\(fields))")
            current = next
        }
    }

    /// The action a case's payload holds, with the payload's other fields described; nil when it
    /// holds none.
    private static func nestedAction(in payload: Any) -> (action: Any, fields: String)? {
        if isAction(payload) { return (payload, "") }
        let mirror = Mirror(reflecting: payload)
        guard mirror.displayStyle == .tuple else { return nil }
        let fields = Array(mirror.children)
        guard let index = fields.lastIndex(where: { isAction($0.value) }) else { return nil }
        let others = fields.indices.filter { $0 != index }.map { field in
            (fields[field].label.map { $0.hasPrefix(".") ? "" : "\($0): " } ?? "") + String(reflecting: fields[field].value)
        }
        return (fields[index].value, others.joined(separator: ", "))
    }

    /// Whether `value` may be a feature's action: an enum, but not an optional or a result.
    private static func isAction(_ value: Any) -> Bool {
        guard Mirror(reflecting: value).displayStyle == .enum else { return false }
        let type = String(describing: Swift.type(of: value))
        return !type.hasPrefix("Optional<") && !type.hasPrefix("Result<")
    }

    /// The last step: its case with its payload when short, else its case alone.
    private static func leaf(_ action: Any) -> String {
        let described = String(describing: action)
        guard described.count > longestPayloadShown, let open = described.firstIndex(of: "(") else { return described }
        return described[..<open] + "(…)"
    }

    /// The longest action description shown with its payload.
    static let longestPayloadShown = 64
}

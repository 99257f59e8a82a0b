import CasePaths

/// One case of a `@CasePathable` enum and the value it carries, written `\.name` as a case key
/// path is: `Scope(state: \.heater, action: \.heater)`, `.forEach(\.rows, action: \.rows)`.
///
/// It is a key path to the case path the `@CasePathable` macro generates, so the reducers that
/// take one embed and extract actions by a direct `switch`: a `CaseKeyPath` goes through `Any`,
/// a dynamic cast and a key path lookup on every action (D41). Cases of cases are written
/// `\.settings.alert`.
public typealias EnumCase<Root: CasePathable, Value> = KeyPath<Root.AllCasePaths, AnyCasePath<Root, Value>>

extension CasePathable {
    /// The case path `enumCase` names, with the macro's direct embed and extract.
    @inlinable
    static func casePath<Value>(_ enumCase: EnumCase<Self, Value>) -> AnyCasePath<Self, Value> {
        allCasePaths[keyPath: enumCase]
    }
}

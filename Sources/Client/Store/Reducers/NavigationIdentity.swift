import CasePaths

/// Which child a piece of optional or enum state holds, as `ifLet` tells children apart: the
/// enum case (for `@CasePathable` enums), the `id` (for `Identifiable` state), or else only the
/// type. When it changes, the old child's effects are cancelled, so they never deliver into the
/// new one.
@usableFromInline
func navigationIdentity<Value>(of value: Value) -> AnyHashable {
    var parts: [AnyHashable] = [ObjectIdentifier(Value.self)]
    if let casePathable = value as? any CasePathable, let enumCase = caseIdentity(of: casePathable) {
        parts.append(enumCase)
    }
    if let identifiable = value as? any Identifiable {
        parts.append(identity(of: identifiable))
    }
    return AnyHashable(parts)
}

private func caseIdentity<Root: CasePathable>(of root: Root) -> AnyHashable? {
    guard let cases = Root.allCasePaths as? any CasePathReflectable<Root> else { return nil }
    return AnyHashable(cases[root])
}

private func identity<Value: Identifiable>(of value: Value) -> AnyHashable {
    AnyHashable(value.id)
}

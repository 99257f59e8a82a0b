// The feature of the documentation's "Getting started" (SharedState.docc/GettingStarted.md),
// which scripts/check-doc-snippets.py keeps equal to this region.

// snippet: lobby-feature
import SharedState

extension SharedKey where Value == Int {
    static let visitors = SharedKey("lobby/visitors", default: 0)
}

struct Lobby: Reducer, Sendable {
    struct State: Equatable, Sendable {
        var visitors = 0
        var problem: String?
    }

    @CasePathable
    enum Action: Equatable, Sendable {
        case start
        case visitorsChanged(Result<Int, SharedStateError>)
        case doorOpened
    }

    enum CancelID { case visitors }
    @Dependency(\.sharedState) var sharedState

    func reduce(into state: inout State, action: Action) -> Effect<Action> {
        switch action {
        case .start:
            // The current value, then every change, from any process.
            return .observe(.visitors) { .visitorsChanged($0) }.cancellable(id: CancelID.visitors)
        case .visitorsChanged(.success(let count)):
            state.visitors = count
            return .none
        case .visitorsChanged(.failure(let error)):
            // A value that no longer decodes as Int (schema drift) arrives here, never as a crash,
            // naming where and why ("... is not a Int: expected Int, found a string"); the library
            // also logs it at warning. A schema on the prefix (syncctl schema set) refuses such
            // writes at syncd instead.
            state.problem = error.message
            return .none
        case .doorOpened:
            return .run { _ in try await sharedState.update(.visitors) { $0 += 1 } }  // CAS, retried
        }
    }
}
// snippet end

import SharedState

extension SharedKey where Value == Int {
    /// How many visitors came in, shared by every process of the lobby.
    public static let visitors = SharedKey("lobby/visitors", default: 0)
}

/// A lobby's counter: it shows the visitors every process counted, and counts one more for each
/// `open` typed on its standard input.
public struct Lobby: Reducer, Sendable {
    public struct State: Equatable, Sendable {
        public var visitors = 0
        public var problem: String?

        public init() {}
    }

    @CasePathable
    public enum Action: Equatable, Sendable {
        case start
        case visitorsChanged(Result<Int, SharedStateError>)
        case command(String)
        case counted(Result<Int, SharedStateError>)
    }

    enum CancelID { case visitors, commands }

    @Dependency(\.sharedState) var sharedState
    @Dependency(\.commandLines) var commandLines

    public init() {}

    public func reduce(into state: inout State, action: Action) -> Effect<Action> {
        switch action {
        case .start:
            return .merge(
                // The current count, then every change, from any process.
                .observe(.visitors) { .visitorsChanged($0) }.cancellable(id: CancelID.visitors),
                // Each line typed is an action.
                .run { send in
                    for await line in commandLines() { await send(.command(line)) }
                }
                .cancellable(id: CancelID.commands)
            )
        case .visitorsChanged(.success(let count)):
            state.visitors = count
            state.problem = nil
            return .none
        case .visitorsChanged(.failure(let error)):
            state.problem = error.message
            return .none
        case .command("open"):
            return .run { send in
                do {
                    let count = try await sharedState.update(.visitors) { $0 += 1 }  // compare-and-set, retried
                    await send(.counted(.success(count)))
                } catch {
                    await send(.counted(.failure(error as? SharedStateError ?? SharedStateError(.unavailable, "\(error)"))))
                }
            }
        case .command(let other):
            state.problem = "unknown command \(other.debugDescription): type open"
            return .none
        case .counted(.success):
            return .none  // the watch brings the new count
        case .counted(.failure(let error)):
            state.problem = error.message
            return .none
        }
    }
}

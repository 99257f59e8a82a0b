import FeatureStore
import Foundation
import SyncClient

extension FeatureHost {
    /// Runs the feature as the whole process, with the main actor on the thread that reads
    /// syncd's socket (`MainEventLoop`), and exits when it ends.
    ///
    /// Call it from a synchronous `main`:
    ///
    /// ```swift
    /// @main struct LobbyProcess {
    ///     static func main() {
    ///         FeatureHost(name: "lobby").main(initialState: Lobby.State(), reducer: { Lobby() }, start: .start)
    ///     }
    /// }
    /// ```
    ///
    /// It does what ``run(initialState:reducer:start:stop:exitWhenIdle:)`` does; a change from
    /// syncd then reaches the reducer on the thread that read it, with no other thread woken.
    ///
    /// Exits with status 0 when the feature ended on SIGTERM or SIGINT or (with `exitWhenIdle`)
    /// ran out of work; with 1, after saying why on standard error, when syncd could not be
    /// reached or closed the connection for good, so that a service manager restarts it.
    public func main<R: Reducer>(
        initialState: sending R.State,
        reducer: sending @escaping () -> R,
        start: sending R.Action? = nil,
        stop: sending R.Action? = nil,
        exitWhenIdle: Bool = false
    ) -> Never {
        MainEventLoop.run {
            do {
                let ending = try await run(
                    initialState: initialState, reducer: reducer, start: start, stop: stop, exitWhenIdle: exitWhenIdle)
                if ending == .disconnected { exit(1) }
            } catch {
                FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
                exit(1)
            }
        }
    }
}

import Dependencies
import SyncClient

extension DependencyValues {
    /// The shared state a feature reads, writes and watches.
    ///
    /// ```swift
    /// struct Sensor: Reducer {
    ///     @Dependency(\.sharedState) var sharedState
    ///     ...
    ///     return .run { [reading = state.reading] _ in
    ///         try await sharedState.set(.reading(of: "kitchen"), to: reading)
    ///     }
    /// }
    /// ```
    ///
    /// - The live value connects to syncd at `$SYNCD_SOCKET` or the default socket on first use;
    ///   ``FeatureHost`` sets a client it connected itself instead.
    /// - The test value is a fresh ``InMemorySharedState`` for each test.
    public var sharedState: any SharedStateBackend {
        get { self[SharedStateKey.self] }
        set { self[SharedStateKey.self] = newValue }
    }
}

private enum SharedStateKey: DependencyKey {
    static var liveValue: any SharedStateBackend {
        var configuration = SharedStateClient.Configuration()
        // A write from an effect names the feature and the action that started it.
        configuration.causeOfWrites = { EffectOrigin.current?.description() }
        return LazySharedStateClient(configuration: configuration)
    }
    static var testValue: any SharedStateBackend { InMemorySharedState() }
    static var previewValue: any SharedStateBackend { InMemorySharedState() }
}

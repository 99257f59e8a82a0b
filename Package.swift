// swift-tools-version: 6.2
import PackageDescription

/// The daemon's own modules, in release builds, leave out Swift's checks at run time that no two
/// accesses to a class's stored property, a global or a captured variable overlap: a call into
/// the runtime each, made many times on every write's path (D1). Debug builds, and so every test
/// run, still check; the checks at compile time stay. Only modules that no product of the package
/// exports: a package that depends on the `SharedState` library may not build unsafe flags.
// FAILPOINTS: the named failpoints of the commit path (SyncEngine's Failpoint), armed by
// SYNCD_FAILPOINTS in debug builds, which the tests run; a release build has none.
let daemonSettings: [SwiftSetting] = [
    .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)),
    .define("FAILPOINTS", .when(configuration: .debug)),
]

let package = Package(
    name: "SharedState",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "SharedState", targets: ["SharedState"]),
        .executable(name: "syncd", targets: ["syncd"]),
        .executable(name: "syncctl", targets: ["syncctl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // syncd's metrics in Prometheus's text format (issue 16), in a registry of syncd's own. It
        // is also a swift-metrics backend; syncd uses its types directly, for their help texts.
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // Latency percentiles in syncctl bench, mergeable across subscriber processes.
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        // The store runtime only; syncd and syncctl never link these, so their builds skip swift-syntax.
        .package(url: "https://github.com/pointfreeco/swift-dependencies", from: "1.17.1"),
        .package(url: "https://github.com/pointfreeco/swift-case-paths", from: "1.10.0"),
        .package(url: "https://github.com/pointfreeco/swift-custom-dump", from: "1.7.3"),
        .package(url: "https://github.com/pointfreeco/swift-identified-collections", from: "1.1.1"),
        // Already built for swift-identified-collections; named so inlinable reducers may use OrderedSet.
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/pointfreeco/xctest-dynamic-overlay", from: "1.13.1"),
        // syncd's etcd backend (issue 13) speaks etcd's v3 API, which is gRPC over HTTP/2.
        .package(url: "https://github.com/grpc/grpc-swift-2", from: "2.4.3"),
        .package(url: "https://github.com/grpc/grpc-swift-nio-transport", from: "2.9.2"),
        .package(url: "https://github.com/grpc/grpc-swift-protobuf", from: "2.4.1"),
        // Child processes, in the multi-process tests and in syncctl (bench fanout's subscribers,
        // inspect --open): the ecosystem's spawner, in place of a hand-written posix_spawn wrapper
        // and Foundation's Process, which crashed the test process about once in thirty runs
        // (issue 58). It needs tools 6.2, and swift-system, which the build already has.
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2"),
        // Its FilePath and FileDescriptor, which Subprocess's API takes.
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        // `swift package generate-documentation`: the DocC catalogs of SharedState, FeatureStore and
        // SyncClient (scripts/docs.sh). A command plugin: built only when documentation is made.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // The wire protocol: generated messages, framing, the hand-written codecs, the rules for
        // keys and values that both sides enforce, and the one type both sides build a Unix
        // socket's address with. Every other module builds on it; it opens no connection.
        .target(
            name: "SharedStateWire",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            path: "Sources/Wire"
        ),
        // The socket client and typed keys: all syncctl needs, free of macros.
        .target(
            name: "SyncClient",
            dependencies: [
                "SharedStateWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Client/Client"
        ),
        // The TCA-style store runtime: reducers, effects, stores and TestStore. Knows nothing of syncd.
        .target(
            name: "FeatureStore",
            dependencies: [
                .product(name: "CasePaths", package: "swift-case-paths"),
                .product(name: "CustomDump", package: "swift-custom-dump"),
                .product(name: "Dependencies", package: "swift-dependencies"),
                .product(name: "IdentifiedCollections", package: "swift-identified-collections"),
                .product(name: "IssueReporting", package: "xctest-dynamic-overlay"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "OrderedCollections", package: "swift-collections"),
            ],
            path: "Sources/Client/Store"
        ),
        // What feature processes import: the client and the runtime, joined by the shared-state
        // dependency, its in-memory test double, shared-state effects and the process host.
        .target(
            name: "SharedState",
            dependencies: [
                "SyncClient",
                "FeatureStore",
                .product(name: "Dependencies", package: "swift-dependencies"),
                .product(name: "IssueReporting", package: "xctest-dynamic-overlay"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Sources/Client/SharedState"
        ),
        // The climate example: three feature processes that cooperate only through syncd.
        .target(
            name: "ClimateFeatures",
            dependencies: [
                "SharedState", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/ClimateFeatures"
        ),
        .executableTarget(
            name: "climate-sensor",
            dependencies: ["ClimateFeatures", "SharedState", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Examples/climate-sensor"
        ),
        .executableTarget(
            name: "climate-thermostat",
            dependencies: ["ClimateFeatures", "SharedState", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Examples/climate-thermostat"
        ),
        .executableTarget(
            name: "climate-panel",
            dependencies: ["ClimateFeatures", "SharedState", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Examples/climate-panel"
        ),
        // A client of etcd's v3 API: the code generated from etcd's .proto files, and the calls
        // syncd's etcd backend makes, with failover between a cluster's endpoints.
        .target(
            name: "EtcdClient",
            dependencies: [
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2Posix", package: "grpc-swift-nio-transport"),
                .product(name: "GRPCProtobuf", package: "grpc-swift-protobuf"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Daemon/EtcdClient"
        ),
        // syncd's layers, each a library so tests run them in-process, with dependencies that
        // point one way: SyncDaemon (wiring) -> SyncServer, SyncSQLite, SyncEtcd -> SyncEngine.
        // The engine: entries, key order, planning, watches, retention, sessions, and the seam
        // (StateBackend) its backends implement. Nothing of SQLite, etcd or the socket server.
        .target(
            name: "SyncEngine",
            dependencies: [
                "SharedStateWire",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Sources/Daemon/Engine",
            swiftSettings: daemonSettings
        ),
        // CRC-32C with the processor's instruction, for the segment journal's checksums.
        .target(name: "CRC32CInstruction", path: "Sources/Daemon/CRC32C"),
        // The default backend: the state in a SQLite file on this host.
        .target(
            name: "SyncSQLite",
            dependencies: [
                "CRC32CInstruction",
                "SyncEngine",
                "SharedStateWire",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "GRDB", package: "GRDB.swift"),
                // The SQLite C API GRDB is built on, for the start-up load of every entry.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            path: "Sources/Daemon/SQLite",
            swiftSettings: daemonSettings
        ),
        // The backend for several hosts: the state in an etcd cluster.
        .target(
            name: "SyncEtcd",
            dependencies: [
                "SyncEngine",
                "SharedStateWire",
                "EtcdClient",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Daemon/Etcd"
        ),
        // The socket server: connections, sessions, one file per request, access control, and
        // the metrics over HTTP.
        .target(
            name: "SyncServer",
            dependencies: [
                "SyncEngine",
                "SharedStateWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Sources/Daemon/Server",
            swiftSettings: daemonSettings
        ),
        // syncd's wiring: configuration, the backend it chose, the server, systemd, shutdown.
        .target(
            name: "SyncDaemon",
            dependencies: [
                "SyncEngine",
                "SyncSQLite",
                "SyncEtcd",
                "SyncServer",
                "SharedStateWire",
                // `--etcd-endpoints` is checked with the etcd client's own endpoint parsing.
                "EtcdClient",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            path: "Sources/Daemon/Wiring",
            swiftSettings: daemonSettings
        ),
        .executableTarget(
            name: "syncd",
            dependencies: [
                "SyncDaemon",
                "SyncEngine",
                "SyncSQLite",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Tools/syncd"
        ),
        .executableTarget(
            name: "syncctl",
            dependencies: [
                "SyncClient",
                "SharedStateWire",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                // `syncctl inspect` serves its page with NIO's HTTP/1 server, as syncd's metrics.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Sources/Tools/syncctl",
            // The inspector's page, compiled into the binary: nothing to install beside it.
            resources: [.embedInCode("Inspect/inspector.html")]
        ),
        // Benchmarks of the store runtime (syncctl bench measures the daemon).
        .executableTarget(
            name: "etcd-bench",
            dependencies: ["EtcdClient", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Benchmarks/etcd-bench"
        ),
        .executableTarget(
            name: "feature-bench",
            dependencies: ["SharedState", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Benchmarks/feature-bench"
        ),
        .target(name: "TestSupport", path: "Tests/Support"),
        .testTarget(
            name: "SharedStateWireTests",
            dependencies: [
                "TestSupport", "SharedStateWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOTestUtils", package: "swift-nio"),
                // The reference the hand codecs' bytes are checked against.
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),
        .testTarget(
            name: "SharedStateTests",
            dependencies: [
                "TestSupport", "SharedState", "SyncClient", "SharedStateWire",
                "SyncDaemon", "SyncEngine", "SyncSQLite", "SyncEtcd", "SyncServer",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "IssueReportingTestSupport", package: "xctest-dynamic-overlay"),
            ]
        ),
        .testTarget(
            name: "SyncDaemonTests",
            dependencies: [
                "TestSupport", "SyncDaemon", "SyncEngine", "SyncSQLite", "SyncEtcd", "SyncServer", "SharedStateWire",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Subprocess", package: "swift-subprocess"),
            ]
        ),
        // Test targets that use TestStore link IssueReportingTestSupport: that is how its
        // failures reach swift-testing on Linux.
        .testTarget(
            name: "FeatureStoreTests",
            dependencies: [
                "FeatureStore",
                .product(name: "CasePaths", package: "swift-case-paths"),
                .product(name: "CustomDump", package: "swift-custom-dump"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "IssueReportingTestSupport", package: "xctest-dynamic-overlay"),
            ]
        ),
        .testTarget(
            name: "ClimateFeaturesTests",
            dependencies: [
                "ClimateFeatures", "SharedState", .product(name: "IssueReportingTestSupport", package: "xctest-dynamic-overlay"),
            ]
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "TestSupport", "SyncClient", "EtcdClient", "SyncDaemon", "SyncEngine", "SyncSQLite", "SyncEtcd", "SyncServer", "SharedStateWire",
                .product(name: "Logging", package: "swift-log"),
                // To read a stopped syncd's database as it was left.
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
    ]
)

// The allocation benchmarks (Benchmarks/allocations, issue 58), run by ordo-one's package-benchmark,
// join the package only when SHAREDSTATE_ALLOCATION_BENCHMARKS is set (scripts/allocations.sh sets
// it): they measure the engine through its package-level API, which a package of their own could
// not reach, and the everyday build does not pay for the harness.
if Context.environment["SHAREDSTATE_ALLOCATION_BENCHMARKS"] != nil {
    package.dependencies.append(
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]))
    package.targets.append(
        .executableTarget(
            name: "allocations",
            dependencies: [
                "SharedStateWire", "SyncEngine", "SyncSQLite", "SyncServer", "SharedState", "FeatureStore",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/allocations",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ))
}

// swift-tools-version: 6.0
import PackageDescription

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
    ],
    targets: [
        // The wire protocol: generated messages, framing, and the rules for keys and values that
        // both sides enforce. Every other module builds on it; it knows nothing of sockets.
        .target(
            name: "SharedStateWire",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),
        // What feature processes link: the socket client and typed keys.
        .target(
            name: "SharedState",
            dependencies: [
                "SharedStateWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // syncd's logic, as a library so tests can run it in-process.
        .target(
            name: "SyncDaemon",
            dependencies: [
                "SharedStateWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .executableTarget(
            name: "syncd",
            dependencies: [
                "SyncDaemon",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "syncctl",
            dependencies: [
                "SharedState",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "SharedStateWireTests",
            dependencies: [
                "SharedStateWire",
                .product(name: "NIOTestUtils", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "SharedStateTests",
            dependencies: [
                "SharedState",
                "SyncDaemon",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),
        .testTarget(name: "SyncDaemonTests", dependencies: ["SyncDaemon"]),
        .testTarget(name: "IntegrationTests", dependencies: ["SharedState"]),
    ]
)

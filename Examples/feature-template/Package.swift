// swift-tools-version: 6.2
import PackageDescription

// A feature process of its own, in a package of its own: copy this folder to start one.
let package = Package(
    name: "lobby",
    platforms: [.macOS(.v15)],
    dependencies: [
        // This repository, two folders up. From elsewhere, name your copy of it by URL and a
        // version or branch: .package(url: "https://github.com/YOUR-ORG/SharedState.git", branch: "main")
        .package(name: "SharedState", path: "../.."),
        // TestStore's failures reach swift-testing on Linux through this.
        .package(url: "https://github.com/pointfreeco/xctest-dynamic-overlay", from: "1.13.1"),
    ],
    targets: [
        // The feature in a library, so the process and the tests share it.
        .target(name: "Lobby", dependencies: [.product(name: "SharedState", package: "SharedState")]),
        .executableTarget(name: "lobby", dependencies: ["Lobby"]),
        .testTarget(
            name: "LobbyTests",
            dependencies: ["Lobby", .product(name: "IssueReportingTestSupport", package: "xctest-dynamic-overlay")]
        ),
    ]
)

import Foundation
import Testing

/// `syncctl inspect` in a real browser: the pytest suite in Tests/Browser drives Debian's Chromium
/// with Playwright (no browser download) against a private syncd and inspector of its own. It runs
/// in the venv `.ci/run` prepares, with playwright installed there; `.ci/run` installs Chromium.
///
/// It runs when `SHAREDSTATE_BROWSER_TESTS=1` is set, on its own after the rest, as `.ci/run`
/// does (like the etcd suites): a browser and 1,000 writes a second for ten seconds took the two
/// cores from the suite's timed multi-process tests, and a healthy watcher of
/// `SlowSubscriberTests` once fell behind beside it.
@Suite(.timeLimit(.minutes(10))) struct InspectorBrowserTests {
    static let chromium = ProcessInfo.processInfo.environment["CHROMIUM"] ?? "/usr/bin/chromium"
    static let isEnabled = ProcessInfo.processInfo.environment["SHAREDSTATE_BROWSER_TESTS"] == "1"

    @Test(
        .enabled(if: isEnabled, "set SHAREDSTATE_BROWSER_TESTS=1 to run the inspector's browser tests"),
        .enabled(if: FileManager.default.isExecutableFile(atPath: chromium), "no Chromium: apt-get install -y chromium")
    )
    func thePagesTestsPassInChromium() async throws {
        let scratch = try Scratch()
        let python = try await PythonEnvironment.prepare(scratch: scratch, also: ["playwright"], probing: "playwright")
        var environment = ProcessInfo.processInfo.environment
        environment["SYNCD_BINARY"] = try Binaries.path("syncd")
        environment["SYNCCTL_BINARY"] = try Binaries.path("syncctl")
        environment["CHROMIUM"] = Self.chromium
        environment["PYTHONPATH"] = PythonEnvironment.client + "/src"
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        let pytest = try await ChildProcess(
            python,
            ["-m", "pytest", PythonEnvironment.root + "/Tests/Browser", "-q", "-s", "-p", "no:cacheprovider"],
            scratch: scratch,
            name: "pytest-browser",
            environment: environment
        )
        let status = try await pytest.waitForExit(timeout: .seconds(480))
        #expect(status == 0, "the inspector's browser tests failed:\n\(pytest.stdout)\n\(pytest.stderr)")
        print(pytest.stdout.split(separator: "\n").filter { $0.contains(" ms") }.joined(separator: "\n"))
    }
}

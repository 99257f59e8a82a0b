import Foundation
import Synchronization
import Testing

/// The Python client's pytest suite (clients/python/tests) against the syncd built next to these
/// tests. It runs in the venv `.ci/run` creates at `.build/python-venv`; when that is missing,
/// the test creates it (python3 -m venv, then pip from PyPI), so `swift test` alone works too.
@Suite(.timeLimit(.minutes(10))) struct PythonClientTests {
    @Test func thePytestSuitePassesAgainstTheBuiltSyncd() async throws {
        let scratch = try Scratch()
        let python = try await PythonEnvironment.prepare(scratch: scratch)
        var environment = ProcessInfo.processInfo.environment
        environment["SYNCD_BINARY"] = try Binaries.path("syncd")
        // The checkout's code, whatever version of it the venv has installed.
        environment["PYTHONPATH"] = PythonEnvironment.client + "/src"
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        let pytest = try await ChildProcess(
            python,
            ["-m", "pytest", PythonEnvironment.client + "/tests", "-q", "-p", "no:cacheprovider"],
            scratch: scratch,
            name: "pytest",
            environment: environment
        )
        let status = try await pytest.waitForExit(timeout: .seconds(480))
        #expect(status == 0, "pytest failed:\n\(pytest.stdout)\n\(pytest.stderr)")
    }
}

/// The client installs as its README says (`pip install ./clients/python` in a venv) without
/// writing into the source tree: the wheel pip builds for it is made with hatchling, outside.
@Suite(.timeLimit(.minutes(5))) struct PythonInstallTests {
    @Test func installingTheClientLeavesTheSourceTreeAsItWas() async throws {
        let scratch = try Scratch()
        let python = try await PythonEnvironment.prepare(scratch: scratch)
        let before = try Self.files(under: PythonEnvironment.client)
        let wheel = try await Command.run(
            python,
            [
                "-m", "pip", "wheel", "--quiet", "--no-deps", "--disable-pip-version-check", "--wheel-dir", scratch.file("wheels"),
                PythonEnvironment.client,
            ], timeout: .seconds(240))
        #expect(wheel.status == 0, "pip wheel failed: \(wheel.errors)")
        let made = try FileManager.default.contentsOfDirectory(atPath: scratch.file("wheels"))
        #expect(made.contains { $0.hasPrefix("sharedstate-") && $0.hasSuffix(".whl") }, "\(made)")
        #expect(try Self.files(under: PythonEnvironment.client) == before)
    }

    /// Every file under `path`, but Python's own caches.
    private static func files(under path: String) throws -> Set<String> {
        let all = FileManager.default.enumerator(atPath: path)?.allObjects as? [String] ?? []
        return Set(all.filter { !$0.contains("__pycache__") && !$0.contains(".pytest_cache") })
    }
}

/// The venv the Python client's tests run in.
enum PythonEnvironment {
    /// The repository's root: this file is `Tests/IntegrationTests/PythonClientTests.swift`.
    static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()
    static let client = root + "/clients/python"
    static let venv = root + "/.build/python-venv"

    /// The venv's python, after creating the venv and installing the client and pytest into it
    /// if they are not there yet.
    ///
    /// - Parameters:
    ///   - packages: More packages from PyPI to install (the browser tests' `playwright`).
    ///   - modules: Modules whose import tells that those are installed.
    static func prepare(scratch: Scratch, also packages: [String] = [], probing modules: String = "") async throws -> String {
        // One at a time: two pip installs of the same source tree race in its build directory
        // ("File exists: build/bdist…"), as the power-loss tests' cases did from a fresh clone.
        await gate.enter()
        defer { gate.leave() }
        let python = venv + "/bin/python"
        if !FileManager.default.isExecutableFile(atPath: python) {
            try await run("/usr/bin/env", ["python3", "-m", "venv", venv], scratch: scratch, name: "venv")
        }
        let imports = "google.protobuf, pytest, pytest_timeout, jsonschema" + (modules.isEmpty ? "" : ", " + modules)
        let probe = try await ChildProcess(python, ["-c", "import " + imports], scratch: scratch, name: "probe")
        if try await probe.waitForExit() != 0 {
            try await run(
                python,
                ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", client + "[test]"] + packages,
                scratch: scratch,
                name: "pip"
            )
        }
        return python
    }

    private static let gate = Gate()

    /// A lock for async callers, first come first served.
    private final class Gate: Sendable {
        private let state = Mutex<(isHeld: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

        func enter() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let isFree = state.withLock { state in
                    if state.isHeld {
                        state.waiting.append(continuation)
                        return false
                    }
                    state.isHeld = true
                    return true
                }
                if isFree { continuation.resume() }
            }
        }

        func leave() {
            let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
                if state.waiting.isEmpty {
                    state.isHeld = false
                    return nil
                }
                return state.waiting.removeFirst()
            }
            next?.resume()
        }
    }

    private static func run(_ executable: String, _ arguments: [String], scratch: Scratch, name: String) async throws {
        let child = try await ChildProcess(executable, arguments, scratch: scratch, name: name)
        let status = try await child.waitForExit(timeout: .seconds(300))
        guard status == 0 else {
            let command = ([executable] + arguments).joined(separator: " ")
            throw TestFailure("\(command) exited with \(status):\n\(child.stdout)\n\(child.stderr)")
        }
    }
}

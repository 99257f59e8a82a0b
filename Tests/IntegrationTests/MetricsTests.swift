import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// syncd's metrics, from `syncctl metrics` and from the HTTP listener `--metrics-address` starts,
/// in a format `promtool check metrics` accepts; and `syncctl top`, which reads them live.
@Suite(.timeLimit(.minutes(2))) struct MetricsTests {
    @Test func countsWhatHappenedAndServesItOverHTTP() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch, extraArguments: ["--metrics-address", "127.0.0.1:0"])
        try await eventually("the metrics listener") { daemon.child.stderr.contains("metrics listening") }
        let address = try #require(daemon.child.stderr.split(separator: "\n").first { $0.contains("metrics listening") })
        let port = try #require(address.split(separator: ":").last.flatMap { UInt16($0.trimmingCharacters(in: .whitespaces)) })

        _ = try await syncctl(["put", "a", "1"], scratch: scratch)
        _ = try await syncctl(["put", "b", "2"], scratch: scratch)
        #expect(try await syncctl(["get", "missing"], scratch: scratch).status == 2)

        let fromSyncctl = try await syncctl(["metrics"], scratch: scratch)
        #expect(fromSyncctl.status == 0)
        for line in ["syncd_revisions_committed_total 2", "syncd_keys 2.0", #"syncd_request_errors_total{code="notFound"} 1"#] {
            #expect(fromSyncctl.stdout.contains(line + "\n"), "\(line) in:\n\(fromSyncctl.stdout)")
        }
        #expect(fromSyncctl.stdout.contains("# HELP syncd_commit_duration_seconds "))

        // A watcher of 300 writes: the clients report counts its events, and one write in 64 is
        // timed from syncd's receiving it to its event's delivery.
        let watcher = try await ChildProcess(
            try Binaries.path("syncctl"), ["--socket", scratch.socket, "watch", "bench/"], scratch: scratch, name: "watcher")
        try await waitForWatches(1, scratch: scratch)
        let bench = try await syncctl(["bench", "put", "--connections", "1", "--pipeline", "1", "--count", "300"], scratch: scratch)
        #expect(bench.status == 0, "\(bench.stderr)")
        try await eventually("the watcher to print 300 changes") { watcher.stdout.split(separator: "\n").count >= 300 }
        let clients = try await syncctl(["--json", "clients"], scratch: scratch)
        let reports = try #require(try JSONSerialization.jsonObject(with: Data(clients.stdout.utf8)) as? [[String: Any]])
        #expect(reports.compactMap { $0["eventsDelivered"] as? Int }.max() == 300, "\(clients.stdout)")
        watcher.signal(SIGTERM)
        _ = try await watcher.waitForExit()
        let timed = try await syncctl(["metrics"], scratch: scratch)
        let timedCount = timed.stdout.split(separator: "\n").first { $0.hasPrefix("syncd_write_to_delivery_seconds_count ") }
        #expect(timedCount.flatMap { Double($0.split(separator: " ")[1]) } ?? 0 >= 4, "\(timed.stdout)")

        let (status, body) = try Self.get("/metrics", port: port)
        #expect(status == 200)
        #expect(body.contains("syncd_revisions_committed_total 302\n"))
        #expect(try Self.get("/elsewhere", port: port).status == 404)
        // .ci/run installs promtool; where it is missing this check is left out.
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/promtool") {
            let check = try await ChildProcess("/usr/bin/promtool", ["check", "metrics"], scratch: scratch, name: "promtool", stdin: body)
            #expect(try await check.waitForExit() == 0, "promtool: \(check.stdout) \(check.stderr)")
        }
        try await daemon.stop()
    }

    @Test func topShowsWritesPerClientAndPrefix() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        let writer = try await ChildProcess(
            try Binaries.path("syncctl"),
            ["--socket", scratch.socket, "bench", "put", "--connections", "1", "--pipeline", "1", "--count", "2000", "--rate", "400"],
            scratch: scratch, name: "writer")
        let top = try await syncctl(["top", "--interval", "0.5", "--count", "2"], scratch: scratch)
        #expect(top.status == 0, "\(top.stderr)")
        let lastBlock = top.stdout.components(separatedBy: "\n\n\n").last ?? ""
        #expect(lastBlock.contains("writes/s"), "\(top.stdout)")
        #expect(top.stdout.contains("CLIENT"))
        // The bench writes under bench/, as syncctl: both show with a rate above zero.
        let benchLine = top.stdout.split(separator: "\n").last { $0.hasPrefix("bench ") }
        #expect(benchLine.map { Int($0.split(separator: " ").last ?? "") ?? 0 } ?? 0 > 0, "\(top.stdout)")
        writer.signal(SIGTERM)
        _ = try await writer.waitForExit()
        try await daemon.stop()
    }

    /// One HTTP/1.0 GET on loopback: the status and the body.
    private static func get(_ path: String, port: UInt16) throws -> (status: Int, body: String) {
        let handle = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard handle >= 0 else { throw TestFailure("socket: \(errno)") }
        defer { close(handle) }
        // A hang fails the test instead of stalling it: reads give up after 5 s.
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(handle, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(handle, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw TestFailure("connect to port \(port): \(errno)") }
        let request = Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { write(handle, $0.baseAddress, $0.count) }
        var response: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(handle, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            response += chunk[..<count]
        }
        let text = String(decoding: response, as: UTF8.self)
        let status = Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0
        let body = text.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        return (status, body)
    }
}

import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The climate example's three processes against a real syncd: they cooperate only through
/// shared state and converge on what their readings imply.
@Suite(.timeLimit(.minutes(2))) struct ClimateExampleTests {
    @Test func sensorsThermostatAndPanelConverge() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        let thermostat = try await startFeature("climate-thermostat", ["--band", "0.5"], scratch: scratch)
        let panel = try await startFeature("climate-panel", [], scratch: scratch)
        let kitchen = try await startFeature(
            "climate-sensor", ["--name", "kitchen", "--base-celsius", "18", "--interval-ms", "5", "--readings", "40"], scratch: scratch)
        let hall = try await startFeature(
            "climate-sensor", ["--name", "hall", "--base-celsius", "19", "--interval-ms", "5", "--readings", "40"], scratch: scratch)

        // Sensors with a fixed number of readings exit on their own, cleanly, and their
        // presence keys go with them.
        #expect(try await kitchen.waitForExit() == 0)
        #expect(try await hall.waitForExit() == 0)
        let kitchenLast = celsius(base: 18, sequence: 40)
        let hallLast = celsius(base: 19, sequence: 40)
        let reading = try #require(try await jsonObject("climate/sensors/kitchen", scratch: scratch))
        #expect(reading["sequence"] as? Int == 40)
        #expect(reading["celsius"] as? Double == kitchenLast)
        #expect(try await syncctl(["get", "climate/online/kitchen"], scratch: scratch).status == 2)

        // The thermostat's decision converges on the last readings; below the band it heats.
        let average = ((kitchenLast + hallLast) / 2 * 100).rounded() / 100
        try await eventuallyAsync("the thermostat's decision on the last readings") {
            let heater = try await jsonObject("climate/heater", scratch: scratch)
            return heater?["averageCelsius"] as? Double == average && heater?["sensors"] as? Int == 2
        }
        #expect(try await jsonObject("climate/heater", scratch: scratch)?["mode"] as? String == (average < 20.5 ? "heating" : "idle"))
        // Each write names the process, the feature and the action whose effect made it, and
        // another process's history shows what it changed inside the value.
        let heaterHistory = try await syncctl(["--json", "history", "climate/heater", "--diff"], scratch: scratch)
        let lastLine = try #require(heaterHistory.stdout.split(separator: "\n").last, "\(heaterHistory.stderr)")
        let lastWrite = try #require(try JSONSerialization.jsonObject(with: Data(lastLine.utf8)) as? [String: Any])
        #expect(lastWrite["client"] as? String == "thermostat")
        #expect(lastWrite["pid"] as? Int == Int(thermostat.pid))
        #expect((lastWrite["cause"] as? String)?.hasPrefix("Thermostat: ") == true, "\(lastWrite)")
        let patch = try #require(lastWrite["patch"] as? [[String: Any]], "\(lastWrite)")
        #expect(patch.allSatisfy { ($0["path"] as? String)?.hasPrefix("/") == true }, "\(patch)")
        #expect(!patch.isEmpty)

        // Raising the target from anywhere changes the decision live.
        _ = try await syncctl(["put", "climate/target", "\(average - 5)"], scratch: scratch)
        try await eventuallyAsync("the heater to stop under a lower target") {
            try await jsonObject("climate/heater", scratch: scratch)?["mode"] as? String == "idle"
        }

        // The panel shows the heater, and applies navigation requests in order.
        _ = try await syncctl(["put", "climate/panel/requests/1", #"{"command":"push","screen":"sensor/kitchen"}"#], scratch: scratch)
        _ = try await syncctl(["put", "climate/panel/requests/2", #"{"command":"push","screen":"sensor/hall"}"#], scratch: scratch)
        try await eventuallyAsync("the panel to apply both requests") {
            try await jsonObject("climate/panel/screen", scratch: scratch)?["applied"] as? Int == 2
        }
        #expect(
            try await jsonObject("climate/panel/screen", scratch: scratch)?["path"] as? [String] == [
                "overview", "sensor/kitchen", "sensor/hall",
            ])
        try await eventually("the panel's line") { panel.stdout.contains("overview › sensor/kitchen › sensor/hall  [heater idle") }

        // SIGTERM stops each long-running feature cleanly.
        thermostat.signal(SIGTERM)
        panel.signal(SIGTERM)
        #expect(try await thermostat.waitForExit() == 0)
        #expect(try await panel.waitForExit() == 0)
        #expect(thermostat.stderr.contains("stopping on SIGTERM or SIGINT"))
        try await daemon.stop()
    }

    @Test func thePanelNeitherLosesNorRepeatsARequestAcrossRestarts() async throws {
        let scratch = try Scratch()
        let daemon = try await DaemonProcess(scratch)
        var panel = try await startFeature("climate-panel", [], scratch: scratch)
        for (index, screen) in ["a", "b", "c"].enumerated() {
            _ = try await syncctl(
                ["put", "climate/panel/requests/\(index)", #"{"command":"push","screen":"\#(screen)"}"#], scratch: scratch)
        }
        try await eventuallyAsync("three requests applied") {
            try await jsonObject("climate/panel/screen", scratch: scratch)?["applied"] as? Int == 3
        }

        // Killed outright: requests published while it is down are applied once it is back,
        // and the three it applied before are not applied again.
        panel.signal(SIGKILL)
        _ = try await panel.waitForExit()
        _ = try await syncctl(["put", "climate/panel/requests/3", #"{"command":"pop"}"#], scratch: scratch)
        _ = try await syncctl(["put", "climate/panel/requests/4", #"{"command":"push","screen":"d"}"#], scratch: scratch)
        panel = try await startFeature("climate-panel", [], scratch: scratch)
        try await eventuallyAsync("five requests applied") {
            try await jsonObject("climate/panel/screen", scratch: scratch)?["applied"] as? Int == 5
        }
        try await Task.sleep(for: .milliseconds(200))
        let screen = try #require(try await jsonObject("climate/panel/screen", scratch: scratch))
        #expect(screen["applied"] as? Int == 5)
        #expect(screen["path"] as? [String] == ["overview", "a", "b", "d"])
        #expect(try await syncctl(["list", "climate/panel/requests/"], scratch: scratch).stdout == "")

        panel.signal(SIGTERM)
        #expect(try await panel.waitForExit() == 0)
        try await daemon.stop()
    }

    @Test func aFeatureProcessWaitsForSyncdAndRejectsBadArguments() async throws {
        let scratch = try Scratch()
        let early = try await startFeature(
            "climate-sensor", ["--name", "porch", "--interval-ms", "1", "--readings", "3"], scratch: scratch)
        try await Task.sleep(for: .milliseconds(300))
        let daemon = try await DaemonProcess(scratch)
        #expect(try await early.waitForExit() == 0)
        #expect(try await jsonObject("climate/sensors/porch", scratch: scratch)?["sequence"] as? Int == 3)

        let bad = try await startFeature("climate-sensor", ["--name", "a/b"], scratch: scratch)
        #expect(try await bad.waitForExit() != 0)
        #expect(bad.stderr.contains("--name must be one key segment"))
        try await daemon.stop()
    }

    @Test func sigtermStopsAFeatureBusyWithWorkAndOneStillConnecting() async throws {
        let scratch = try Scratch()
        // Not connected yet: syncd is not running.
        let waiting = try await startFeature("climate-sensor", ["--name", "early", "--readings", "5"], scratch: scratch)
        try await Task.sleep(for: .milliseconds(300))
        waiting.signal(SIGTERM)
        #expect(try await waiting.waitForExit(timeout: .seconds(5)) == 0)

        let daemon = try await DaemonProcess(scratch)
        let busy = try await startFeature(
            "climate-sensor", ["--name", "busy", "--readings", "100000", "--interval-ms", "50"], scratch: scratch)
        try await eventuallyAsync("a reading") { try await jsonObject("climate/sensors/busy", scratch: scratch) != nil }
        busy.signal(SIGTERM)
        #expect(try await busy.waitForExit(timeout: .seconds(5)) == 0)
        #expect(try await syncctl(["get", "climate/online/busy"], scratch: scratch).status == 2)
        try await daemon.stop()
    }

    // MARK: - Helpers

    /// The sensor example's curve, as `Sensor.celsius(base:sequence:)` computes it.
    private func celsius(base: Double, sequence: Int) -> Double {
        ((base + 2 * sin(Double(sequence) / 4)) * 100).rounded() / 100
    }
}

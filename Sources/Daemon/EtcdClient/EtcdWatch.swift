import Foundation
import GRPCCore
import Synchronization

/// What a watch of ``EtcdClient/watch(key:rangeEnd:startRevision:previousEntries:)`` reports.
public enum EtcdWatchUpdate: Sendable, Equatable {
    /// The watch is established on `endpoint`; the events that follow start at the revision asked for.
    case started(endpoint: EtcdEndpoint)
    /// Changes, in revision order; several revisions may come in one update. `revision` is the
    /// cluster's revision when etcd sent them.
    case events([EtcdEvent], revision: Int64)
    /// Nothing changed in the range up to `revision`.
    case progress(revision: Int64)
    /// The endpoint failed; the watch carries on at the next one, from the revision after the
    /// last event it reported, and says ``started(endpoint:)`` again when it does.
    case interrupted(reason: String)
}

extension EtcdClient {
    /// Watches `key`, or with `rangeEnd` every key in `[key, rangeEnd)`, from `startRevision`
    /// (0: from now on), until the consumer stops iterating.
    ///
    /// The watch outlives endpoint failures: it moves to the next endpoint and resumes there
    /// from the revision after the last event it reported, so no change is missed or repeated.
    /// It asks etcd to end it when its member loses the cluster's leader, so a member cut off
    /// from the others cannot leave it silently behind; and it asks for a progress notice every
    /// third of ``watchSilenceLimit``, so an endpoint this host is cut off from (whose packets are
    /// dropped, not refused) is left once it has been silent that long. It ends with
    /// ``EtcdError/compacted(requested:compactedRevision:)`` when the revision it must resume from
    /// is compacted.
    public func watch(
        key: Data, rangeEnd: Data? = nil, startRevision: Int64 = 0, previousEntries: Bool = false
    ) -> AsyncThrowingStream<EtcdWatchUpdate, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    try await runWatch(
                        key: key, rangeEnd: rangeEnd, startRevision: startRevision, previousEntries: previousEntries,
                        to: continuation)
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    private func runWatch(
        key: Data, rangeEnd: Data?, startRevision: Int64, previousEntries: Bool,
        to continuation: AsyncThrowingStream<EtcdWatchUpdate, any Error>.Continuation
    ) async throws {
        let next = Mutex(startRevision)
        var pause = Duration.milliseconds(50)
        while !Task.isCancelled {
            let index = currentIndex
            let endpoint = endpoints[index]
            let request = Etcdserverpb_WatchRequest.with {
                $0.createRequest = .with {
                    $0.key = key
                    if let rangeEnd { $0.rangeEnd = rangeEnd }
                    $0.startRevision = next.withLock { $0 }
                    $0.prevKv = previousEntries
                    $0.progressNotify = true
                }
            }
            let reason: String
            let lastHeard = Mutex(ContinuousClock.now)
            let created = Mutex(false)
            let silenceLimit = watchSilenceLimit
            do {
                // etcd ends a watch marked so when its member has no leader.
                try await Etcdserverpb_Watch.Client(wrapping: client(at: index)).watch(
                    metadata: ["hasleader": "true"],
                    requestProducer: { writer in
                        try await writer.write(request)
                        // Closing the request stream would end the watch: it stays open, and asks
                        // for a progress notice every so often. An endpoint cut off by the network
                        // drops packets rather than refusing them: its silence is how it shows.
                        let probe = silenceLimit / 3
                        while true {
                            try await Task.sleep(for: probe)
                            let silence = ContinuousClock.now - lastHeard.withLock { $0 }
                            if silence > silenceLimit {
                                throw RPCError(code: .unavailable, message: "etcd did not answer the watch for \(silence)")
                            }
                            try await writer.write(.with { $0.progressRequest = .init() })
                        }
                    },
                    onResponse: { response in
                        for try await message in response.messages {
                            lastHeard.withLock { $0 = .now }
                            if message.canceled {
                                if message.compactRevision > 0 {
                                    throw EtcdError.compacted(
                                        requested: next.withLock { $0 }, compactedRevision: message.compactRevision)
                                }
                                throw RPCError(code: .unavailable, message: "etcd ended the watch: \(message.cancelReason)")
                            }
                            if message.created {
                                created.withLock { $0 = true }
                                continuation.yield(.started(endpoint: endpoint))
                                continue
                            }
                            if let last = message.events.last {
                                next.withLock { $0 = last.kv.modRevision + 1 }
                                continuation.yield(.events(message.events.map(EtcdEvent.init), revision: message.header.revision))
                            } else {
                                continuation.yield(.progress(revision: message.header.revision))
                            }
                        }
                        throw RPCError(code: .unavailable, message: "etcd closed the watch stream")
                    })
                return
            } catch let error as EtcdError {
                throw error
            } catch let error as RPCError {
                switch Self.classify(error) {
                case .request(let refusal): throw refusal
                case .endpoint(let message, _): reason = "\(endpoint): \(message)"
                }
            } catch is CancellationError {
                return
            }
            if Task.isCancelled { return }
            continuation.yield(.interrupted(reason: reason))
            moveOn(from: index, because: reason)
            // Wait longer after each failure in a row; a watch that was running starts the count
            // again, so that it comes back quickly however many failures it once lived through.
            if created.withLock({ $0 }) { pause = .milliseconds(50) }
            try? await Task.sleep(for: pause)
            pause = min(pause * 2, .seconds(1))
        }
    }
}

import Foundation

/// An atomic compare-then-write: if every compare holds, the `onSuccess` operations are applied,
/// otherwise the `onFailure` ones, all under one revision that watchers see in one batch.
///
/// ```swift
/// let result = try await client.transaction(
///     Transaction(
///         compares: [.version(of: "lock/owner", is: 0)],
///         onSuccess: [.put("lock/owner", json: #""kiosk-1""#)]
///     )
/// )
/// ```
public struct Transaction: Sendable {
    /// A condition on one key.
    public struct Compare: Sendable {
        var wireValue: Sharedstate_V1_Compare

        /// The key's version is `version`; 0 means the key does not exist.
        public static func version(of key: String, is version: UInt64) -> Compare {
            Compare(
                wireValue: .with {
                    $0.key = key
                    $0.version = version
                })
        }

        /// The key does not exist.
        public static func absent(_ key: String) -> Compare { .version(of: key, is: 0) }

        /// The key exists and its value is exactly these bytes.
        public static func value(of key: String, is value: Data) -> Compare {
            Compare(
                wireValue: .with {
                    $0.key = key
                    $0.value = value
                })
        }
    }

    /// A write inside a transaction.
    public struct Operation: Sendable {
        var wireValue: Sharedstate_V1_Operation
        package var key: String {
            switch wireValue.kind {
            case .put(let put): put.key
            case .delete(let delete): delete.key
            case nil: ""
            }
        }
        package var value: Data? {
            if case .put(let put) = wireValue.kind { return put.value }
            return nil
        }
        /// Whether it is a put bound to the connection.
        var isEphemeral: Bool {
            if case .put(let put) = wireValue.kind { return put.ephemeral }
            return false
        }

        /// Sets `key` to `value` (one JSON document), if its version is `ifVersion` when given;
        /// with `ephemeral`, bound to this connection.
        public static func put(_ key: String, value: Data, ifVersion: UInt64? = nil, ephemeral: Bool = false) -> Operation {
            Operation(
                wireValue: .with {
                    $0.put = .with {
                        $0.key = key
                        $0.value = value
                        if let ifVersion { $0.ifVersion = ifVersion }
                        $0.ephemeral = ephemeral
                    }
                })
        }

        /// Sets `key` to the JSON document in `json`.
        public static func put(_ key: String, json: String, ifVersion: UInt64? = nil, ephemeral: Bool = false) -> Operation {
            put(key, value: Data(json.utf8), ifVersion: ifVersion, ephemeral: ephemeral)
        }

        /// Removes `key`, if its version is `ifVersion` when given. A missing key is left alone.
        public static func delete(_ key: String, ifVersion: UInt64? = nil) -> Operation {
            Operation(
                wireValue: .with {
                    $0.delete = .with {
                        $0.key = key
                        if let ifVersion { $0.ifVersion = ifVersion }
                    }
                })
        }
    }

    /// The conditions, all of which must hold for `onSuccess` to apply.
    public var compares: [Compare]
    /// Applied when every compare holds.
    public var onSuccess: [Operation]
    /// Applied when a compare fails.
    public var onFailure: [Operation]
    /// Why, in the writer's words: kept with the revision of whichever branch writes, and shown by
    /// `syncctl history` and `watch`. At most 256 bytes.
    public var cause: String = ""

    /// Creates a transaction.
    public init(compares: [Compare] = [], onSuccess: [Operation] = [], onFailure: [Operation] = []) {
        self.compares = compares
        self.onSuccess = onSuccess
        self.onFailure = onFailure
    }
}

extension Transaction.Compare {
    /// The key the compare is about.
    package var key: String { wireValue.key }

    /// The compare as the write planner takes it.
    package var request: WriteRequest.Compare {
        switch wireValue.target {
        case .value(let value): WriteRequest.Compare(key: wireValue.key, target: .value(value))
        case .version(let version): WriteRequest.Compare(key: wireValue.key, target: .version(version))
        case nil: WriteRequest.Compare(key: wireValue.key, target: .version(0))
        }
    }
}

extension Transaction.Operation {
    /// The operation as the write planner takes it, ephemeral puts bound to `session`.
    package func request(session: UInt64) -> WriteRequest.WriteOperation {
        switch wireValue.kind {
        case .put(let put):
            .put(
                key: put.key,
                value: put.value,
                ifVersion: put.hasIfVersion ? put.ifVersion : nil,
                ephemeralSession: put.ephemeral ? session : 0
            )
        case .delete(let delete):
            .delete(key: delete.key, ifVersion: delete.hasIfVersion ? delete.ifVersion : nil)
        case nil:
            .delete(key: "", ifVersion: nil)
        }
    }
}

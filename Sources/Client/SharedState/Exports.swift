@_exported import FeatureStore
@_exported import SyncClient

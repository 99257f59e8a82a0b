@_exported import SharedStateWire

"""Code protoc generated from Protos/sharedstate/v1/sharedstate.proto; regenerate it with
scripts/generate-python-protos.sh, never edit it by hand."""

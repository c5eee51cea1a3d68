"""tests/integration/lib - helpers shared by the integration tests (and by
tests/unit/test_export_http.c through export_server.py).

  pb          protobuf wire format: one varint encoder, one field reader
  otlp        one reader of OTLP ExportProfilesServiceRequest files
  otlp_stub   one OTLP/HTTP endpoint (in-process, or a child over stdin)
  yamlsub     a strict parser for the YAML subset of deploy/
  ports       free_port(), a loopback TCP port for a server a test starts
  symtest     the frame of a symbolizer test that builds its own fixture:
              checks, skips, scratch directory, the private-netns re-run

Written from the field numbers of the .proto files, not with spanprof's C
decoders, so an encoder bug cannot hide behind a decoder with the same bug.
A test imports them as `from lib import otlp` (tests/integration is on
sys.path when a test runs from there).
"""

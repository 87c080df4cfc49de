"""A2A 1.0 over gRPC (``lf.a2a.v1.A2AService``): the proto, its messages, the conversion edge.

Everything here needs the ``grpc`` extra (``pip install 'a2a-sync[grpc]'``: grpcio,
protobuf, googleapis-common-protos) and is imported only by the gRPC bindings
(:mod:`a2a_sync.client.bindings.grpc`, :mod:`a2a_sync.server.bindings.grpc`); ``import
a2a_sync`` never imports grpc or protobuf.

* ``a2a.proto`` — the specification's proto, vendored (see its header);
* :mod:`._descriptor` — its compiled descriptor (``scripts/gen_grpc.py`` regenerates it);
* :mod:`.messages` — message classes in a private descriptor pool and the method table;
* :mod:`.convert` — ProtoJSON dicts (what the 1.0 codec reads and writes) to and from
  protobuf messages, and A2A errors to and from ``google.rpc.Status`` with ErrorInfo.
"""

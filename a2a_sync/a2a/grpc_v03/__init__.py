"""A2A 0.3 over gRPC (``a2a.v1.A2AService``): the proto, its messages, the conversion edge.

The 0.3 compatibility of :mod:`a2a_sync.a2a.grpc` (A2A 1.0, ``lf.a2a.v1``): the two
services are in different packages, so one gRPC server serves both and one channel can
call either. Needs the ``grpc`` extra; imported only by the gRPC bindings.

* ``a2a.proto`` — the 0.3.0 specification's proto, vendored (see its header);
* :mod:`._descriptor` — its compiled descriptor (``scripts/gen_grpc.py`` regenerates it);
* :mod:`.messages` — message classes in a private descriptor pool and the method table;
* :mod:`.convert` — 0.3 protobuf messages to and from the 0.3 JSON-RPC shapes the 0.3
  codec reads and writes (through their ProtoJSON form and :mod:`a2a_sync.a2a.rest_v03`,
  which translates the same ProtoJSON for 0.3's REST binding), and 0.3 gRPC errors.
"""

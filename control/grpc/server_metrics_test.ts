import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { Registry } from "prom-client";
import { GrpcServerMetrics } from "./server_metrics.ts";
import { RequestError, toServiceError } from "./request_error.ts";
import {
  type CertifyRequest,
  type CertifyResponse,
  IdentityClient,
  IdentityService,
} from "../../proto/gen/identity.ts";

Deno.test("gRPC server metrics count started and handled calls by status code over a real server", async () => {
  const registry = new Registry();
  const metrics = new GrpcServerMetrics(registry);
  const server = new grpc.Server({ interceptors: [metrics.interceptor] });
  server.addService(IdentityService, {
    certify: (
      call: grpc.ServerUnaryCall<CertifyRequest, CertifyResponse>,
      cb: grpc.sendUnaryData<CertifyResponse>,
    ) => {
      if (call.request.identity === "") {
        cb(toServiceError(new RequestError("invalid_argument", "identity is empty")));
      } else {cb(null, {
          leafCertificate: new Uint8Array([1]),
          intermediateCertificates: [],
          validUntil: undefined,
        });}
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      "127.0.0.1:0",
      grpc.ServerCredentials.createInsecure(),
      (e, p) => e ? reject(e) : resolve(p),
    )
  );
  const client = new IdentityClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const certify = (identity: string) =>
    new Promise<grpc.ServiceError | null>((resolve) =>
      client.certify(
        { identity, token: new Uint8Array(), certificateSigningRequest: new Uint8Array() },
        (err) => resolve(err),
      )
    );
  try {
    assert.equal(await certify("a"), null);
    const err = await certify("");
    assert.equal(err?.code, grpc.status.INVALID_ARGUMENT);
    assert.equal(err?.details, "identity is empty");
    const text = await registry.metrics();
    const labels =
      'grpc_service="io.linkerd.proxy.identity.Identity",grpc_method="Certify",grpc_type="unary"';
    assert.match(text, new RegExp(`grpc_server_started_total\\{${labels}\\} 2`));
    assert.match(text, new RegExp(`grpc_server_handled_total\\{${labels},grpc_code="OK"\\} 1`));
    assert.match(text, new RegExp(`grpc_server_handled_total\\{${labels},grpc_code="INVALID_ARGUMENT"\\} 1`));
    // One answer sent (the refused call sends none), counted at the first scrape and not again at the next.
    assert.match(text, new RegExp(`grpc_server_msg_sent_total\\{${labels}\\} 1\n`));
    assert.equal(await certify("b"), null);
    assert.match(await registry.metrics(), new RegExp(`grpc_server_msg_sent_total\\{${labels}\\} 2\n`));
  } finally {
    client.close();
    server.forceShutdown();
  }
});

Deno.test("unknown errors become INTERNAL at the edge", () => {
  const e = toServiceError(new TypeError("boom"));
  assert.equal(e.code, grpc.status.INTERNAL);
  assert.match(e.details ?? "", /boom/);
});

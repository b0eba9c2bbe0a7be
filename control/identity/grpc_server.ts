/** The gRPC edge of identity: `io.linkerd.proxy.identity.Identity/Certify`, plaintext. */
import * as grpc from "@grpc/grpc-js";
import type { Registry } from "prom-client";
import { GrpcServerMetrics } from "../grpc/server_metrics.ts";
import { controlServerOptions } from "../grpc/server_options.ts";
import { toServiceError } from "../grpc/request_error.ts";
import { type CertifyRequest, type CertifyResponse, IdentityService } from "../../proto/gen/identity.ts";
import type { CertifyService } from "./service.ts";

export interface IdentityGrpcServer {
  port: number;
  server: grpc.Server;
  /** Stops accepting calls and waits for those in flight (bounded by `graceMs`). */
  close(graceMs?: number): Promise<void>;
}

export async function serveIdentityGrpc(opts: {
  service: CertifyService;
  registry: Registry;
  /** `host:port`, e.g. `0.0.0.0:8080`; port 0 picks a free one. */
  address: string;
  log?: (line: string) => void;
}): Promise<IdentityGrpcServer> {
  const metrics = new GrpcServerMetrics(opts.registry);
  const server = new grpc.Server(controlServerOptions("identity", [metrics.interceptor]));
  server.addService(IdentityService, {
    certify(
      call: grpc.ServerUnaryCall<CertifyRequest, CertifyResponse>,
      cb: grpc.sendUnaryData<CertifyResponse>,
    ) {
      opts.service.certify(call.request).then(
        (res) => cb(null, res),
        (e) => {
          const err = toServiceError(e);
          if (err.code === grpc.status.INTERNAL) opts.log?.(`Certify failed: ${(e as Error)?.stack ?? e}`);
          cb(err);
        },
      );
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      opts.address,
      grpc.ServerCredentials.createInsecure(),
      (e, p) => e ? reject(e) : resolve(p),
    )
  );
  return {
    port,
    server,
    close: (graceMs = 5000) =>
      new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      }),
  };
}

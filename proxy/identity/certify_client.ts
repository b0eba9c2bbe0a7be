/**
 * The gRPC client for Identity/Certify. Like linkerd2-proxy: plaintext h2 when the address is
 * loopback (the control plane is in this pod), otherwise TLS with SNI = the identity service's
 * name, verifying its certificate against the trust anchors and its SAN against that name.
 */
import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import type { PeerCertificate } from "node:tls";
import { NO_DNS_SERVICE_CONFIG } from "../discovery/control_client.ts";
import { type CertifyRequest, type CertifyResponse, IdentityClient } from "../../proto/gen/identity.ts";

/** 127.0.0.0/8, ::1, or exactly `localhost.` (with the dot), as the proxy's `is_loopback`. */
export function isLoopbackAddr(addr: string): boolean {
  const host = hostOf(addr);
  if (host === "localhost.") return true;
  if (host === "::1" || host === "0:0:0:0:0:0:0:1") return true;
  const m = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  return m !== null && m.slice(1).every((o) => Number(o) <= 255);
}

function hostOf(addr: string): string {
  const bracket = /^\[([^\]]+)\]:\d+$/.exec(addr);
  if (bracket) return bracket[1];
  const i = addr.lastIndexOf(":");
  if (i <= 0) throw new Error(`identity address "${addr}" is not host:port`);
  return addr.slice(0, i);
}

export type CertifyFn = (req: CertifyRequest, timeoutMs: number) => Promise<CertifyResponse>;

export interface CertifyClient {
  certify: CertifyFn;
  close(): void;
}

export function createCertifyClient(
  opts: { svcAddr: string; svcName?: string; trustAnchorsPem: string },
): CertifyClient {
  let client: IdentityClient;
  // grpc-js resolves `localhost.` poorly; it is loopback by definition, so dial the IP.
  const target = opts.svcAddr.replace(/^localhost\.:/, "127.0.0.1:");
  if (isLoopbackAddr(opts.svcAddr)) {
    client = new IdentityClient(target, grpc.credentials.createInsecure());
  } else {
    const name = opts.svcName;
    if (!name) {
      throw new Error(`identity address "${opts.svcAddr}" is not loopback, so it needs the service name`);
    }
    const creds = grpc.credentials.createSsl(
      Buffer.from(opts.trustAnchorsPem),
      null,
      null,
      {
        checkServerIdentity: (_host: string, cert: PeerCertificate) => {
          const sans = (cert.subjectaltname ?? "").split(", ");
          return sans.includes(`DNS:${name}`) ? undefined : new Error(
            `identity server certificate names ${cert.subjectaltname ?? "nothing"}, want DNS:${name}`,
          );
        },
      },
    );
    client = new IdentityClient(target, creds, {
      "grpc.ssl_target_name_override": name,
      "grpc.default_authority": name,
      // The identity pod can be replaced: re-resolve soon after a failure and keep reconnects quick,
      // rather than staying on a dead address for grpc-js's default two-minute backoff.
      "grpc.dns_min_time_between_resolutions_ms": 1000,
      "grpc.initial_reconnect_backoff_ms": 200,
      "grpc.max_reconnect_backoff_ms": 5000,
      ...NO_DNS_SERVICE_CONFIG,
    });
  }
  return {
    certify: (req, timeoutMs) =>
      new Promise((resolve, reject) =>
        client.certify(
          req,
          new grpc.Metadata(),
          { deadline: Date.now() + timeoutMs },
          (err, res) => err ? reject(err) : resolve(res),
        )
      ),
    close: () => client.close(),
  };
}

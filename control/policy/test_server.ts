/**
 * Test fixture: the real policy gRPC server on 127.0.0.1 fed by a fake event source, with grpc-js
 * clients for both APIs. `await using` stops all of it.
 */
import * as grpc from "@grpc/grpc-js";
import { Registry } from "prom-client";
import { InboundServerPoliciesClient } from "../../proto/gen/inbound.ts";
import { OutboundPoliciesClient } from "../../proto/gen/outbound.ts";
import { defaultPolicyConfig } from "./config.ts";
import { PolicyGrpcServer, type PolicyServerOptions } from "./grpc_server.ts";
import { FakePolicySource, PolicyStore } from "./store.ts";
import { pod } from "./testing.ts";

export type PolicyTestServer = Awaited<ReturnType<typeof startPolicyServer>>;

/** An inbound policy client of a server elsewhere (a deployed policy controller), for cluster tests. */
export function dialInboundPolicy(address: string): InboundServerPoliciesClient {
  return new InboundServerPoliciesClient(address, grpc.credentials.createInsecure());
}

export async function startPolicyServer(
  opts: Partial<Omit<PolicyServerOptions, "store" | "config" | "registry">> = {},
) {
  const source = new FakePolicySource();
  const store = new PolicyStore();
  const abort = new AbortController();
  source.start((e) => store.apply(e), abort.signal);
  const registry = new Registry();
  const srv = new PolicyGrpcServer({ store, config: defaultPolicyConfig(), registry, ...opts });
  const port = await srv.listen("127.0.0.1", 0);
  const inbound = new InboundServerPoliciesClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const outbound = new OutboundPoliciesClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const flips = new Map<string, number>();
  return {
    source,
    registry,
    srv,
    port,
    inbound,
    outbound,
    /**
     * Flips pod `ns/name`'s (labelled app=name) default policy between deny and
     * all-unauthenticated: every WatchPort stream on it gets a new message.
     */
    flip(ns: string, name: string): void {
      const n = (flips.get(`${ns}/${name}`) ?? 0) + 1;
      flips.set(`${ns}/${name}`, n);
      const policy = n % 2 ? "deny" : "all-unauthenticated";
      source.emit(
        "modified",
        "Pod",
        pod(ns, name, { app: name }, { annotations: { "config.linkerd.io/default-inbound-policy": policy } }),
      );
    },
    async [Symbol.asyncDispose]() {
      inbound.close();
      outbound.close();
      abort.abort();
      srv.forceShutdown();
      await new Promise((r) => setTimeout(r, 10));
    },
  };
}

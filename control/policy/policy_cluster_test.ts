/**
 * Against the real API server in KUBECONFIG: apply our CRDs (Gateway API ones only when absent)
 * and the Linkerd-style examples into a fresh namespace, run the policy controller's informers,
 * store and gRPC server in-process, and check the `Server` messages and route status.
 */
import * as grpc from "@grpc/grpc-js";
import { Registry } from "prom-client";
import { must } from "../../tests/lib/exec.ts";
import { assertEquals } from "./assert.ts";
import { InboundServerPoliciesClient, type Server } from "../../proto/gen/inbound.ts";
import { loadKubeConfig } from "../k8s/mod.ts";
import { defaultPolicyConfig } from "./config.ts";
import { decideCrdInstall, type LiveCrd } from "./gateway_crds.ts";
import { PolicyGrpcServer } from "./grpc_server.ts";
import { InformerPolicySource, KubeStatusClient } from "./k8s_source.ts";
import { RouteStatusWriter } from "./route_status.ts";
import { PolicyStore } from "./store.ts";

const KUBECONFIG = Deno.env.get("KUBECONFIG");
const ROOT = new URL("../../", import.meta.url).pathname;

async function kubectl(args: string[], stdin?: string): Promise<string> {
  return await must("kubectl", args, { env: { KUBECONFIG: KUBECONFIG! }, stdin });
}

async function installCrds(): Promise<void> {
  const dir = `${ROOT}manifests/crds/policy`;
  for await (const e of Deno.readDir(dir)) {
    if (!e.name.endsWith(".yaml")) continue;
    const text = await Deno.readTextFile(`${dir}/${e.name}`);
    if (e.name.startsWith("gateway-")) {
      const name = /name: (\S+)/.exec(text)![1];
      let live: LiveCrd | undefined;
      try {
        live = JSON.parse(await kubectl(["get", "crd", name, "-o", "json"]));
      } catch {
        live = undefined;
      }
      const d = decideCrdInstall(name, live, ["v1"]);
      if (d.action === "skip") continue;
    }
    await kubectl(["apply", "-f", "-"], text);
  }
  await kubectl([
    "wait",
    "--for=condition=Established",
    "--timeout=60s",
    "crd",
    "-l",
    "app.kubernetes.io/part-of=weft",
  ]);
}

/**
 * Collects every message of a stream from the moment it is opened, so an update that arrives
 * while the test is still waiting for kubectl to exit is not lost between two waits.
 */
class Messages {
  readonly #seen: Server[] = [];
  #wake: (() => void) | undefined;
  constructor(stream: grpc.ClientReadableStream<Server>) {
    stream.on("data", (s: Server) => {
      this.#seen.push(s);
      this.#wake?.();
    });
  }

  /** Waits for the first message not yet consumed that satisfies `want`, consuming up to it. */
  async next(want: (s: Server) => boolean, what: string): Promise<Server> {
    const deadline = Date.now() + 20_000;
    while (true) {
      const i = this.#seen.findIndex(want);
      if (i >= 0) return this.#seen.splice(0, i + 1)[i];
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${what} within 20s`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }
}

Deno.test({
  name: "cluster: examples apply and the controller streams their Server messages, then follows deletes",
  ignore: !KUBECONFIG,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await installCrds();
    const ns = `weft-policy-${Date.now().toString(36)}`;
    const examples = ["emojivoto-app.yaml", "server-authorization-policy.yaml", "per-route-policy.yaml"];
    const abort = new AbortController();
    let srv: PolicyGrpcServer | undefined;
    let writer: RouteStatusWriter | undefined;
    try {
      for (const f of examples) {
        // The examples name the emojivoto namespace; each test run gets its own.
        const text = (await Deno.readTextFile(`${ROOT}manifests/examples/policy/${f}`)).replaceAll(
          "emojivoto",
          ns,
        );
        await kubectl(["apply", "-f", "-"], text);
      }
      const kc = loadKubeConfig(KUBECONFIG);
      const store = new PolicyStore();
      const source = new InformerPolicySource(kc, undefined, () => {});
      source.start((e) => store.apply(e), abort.signal);
      const cfg = defaultPolicyConfig();
      writer = new RouteStatusWriter(store, cfg, new KubeStatusClient(kc), { delayMs: 20 });
      srv = new PolicyGrpcServer({ store, config: cfg, registry: new Registry() });
      const port = await srv.listen("127.0.0.1", 0);
      const deadline = Date.now() + 60_000;
      while (!source.synced() || !store.pod(ns, "emoji")) {
        if (Date.now() > deadline) throw new Error(`not synced: ${source.pending().join(", ")}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const client = new InboundServerPoliciesClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
      const stream = client.watchPort({ workload: JSON.stringify({ ns, pod: "emoji" }), port: 8080 });
      stream.on("error", () => {});
      const messages = new Messages(stream);
      const first = await messages.next(
        (s) => s.labels.name === "emoji-grpc" && s.authorizations.length === 1,
        "emoji-grpc",
      );
      assertEquals(first.protocol?.kind?.$case, "grpc");
      const p = first.authorizations[0].authentication?.permit;
      assertEquals(
        p?.$case === "meshTLS" && p.value.clients?.$case === "identities"
          ? p.value.clients.value.identities
          : [],
        [{ name: `web.${ns}.serviceaccount.identity.weft.cluster.local` }],
      );

      await kubectl(["delete", "-n", ns, "authorizationpolicy", "emoji-grpc"]);
      await messages.next(
        (s) => s.labels.name === "emoji-grpc" && s.authorizations.length === 0,
        "the authz removal",
      );
      await kubectl(["delete", "-n", ns, "server", "emoji-grpc"]);
      await messages.next((s) => s.labels.kind === "default", "the default policy");
      stream.cancel();
      client.close();

      // Route status is written back for the per-route HTTPRoute.
      let status = "";
      for (let i = 0; i < 100 && !status.includes("Accepted"); i++) {
        await new Promise((r) => setTimeout(r, 100));
        status = await kubectl([
          "get",
          "-n",
          ns,
          "httproutes.policy.linkerd.io",
          "web-api",
          "-o",
          "jsonpath={.status.parents[0].conditions[*].type}",
        ]);
      }
      // A Server parent gets only Accepted (as Linkerd writes it), plus weft's probe condition if any.
      assertEquals(status.split(" ").filter((t) => t !== "weft.io/DefaultProbeAuthorization"), ["Accepted"]);
    } finally {
      writer?.close();
      srv?.forceShutdown();
      abort.abort();
      await kubectl(["delete", "namespace", ns, "--wait=false"]).catch(() => {});
    }
  },
});

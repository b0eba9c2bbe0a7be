/**
 * The proxy's control-plane client metrics against the REAL controllers (no cluster needed): the
 * proxy's own discovery clients (`Discovery`: WatchPort, Watch, Get, GetProfile) and identity client
 * (`ProxyIdentity`: Certify) talk real gRPC to weft's destination server (fed through its fake
 * informers), policy server (fed through its store) and identity server (its own process, with a
 * table TokenReview). Each call must show in `control_request_total` when it starts and in
 * `control_response_total` when it ends, labelled as linkerd2-proxy labels them: the controller's
 * `addr`, the connection's TLS (`tls="no_identity",no_tls_reason="loopback"`: the proxies of the
 * control-plane pods reach their controllers on loopback, in plaintext), `status_code`,
 * `classification`, `grpc_status` and `error`. Streams end the two ways they end in a mesh: the proxy
 * drops a watch it no longer needs (after the idle timeout) and a controller refuses a request.
 * The TLS labels (`tls="true",server_id=…`) are asserted on the cluster (tests/e2e/cli_diagnostics_test.ts).
 */
import assert from "node:assert/strict";
import { Fixture, pod as dstPod, service as dstService, slice } from "../../control/destination/testing.ts";
import { startPolicyServer } from "../../control/policy/test_server.ts";
import { namespace, pod as policyPod, service as policyService } from "../../control/policy/testing.ts";
import { destinationContext, policyWorkload } from "../../proto/proxy_workload.ts";
import { CertStore } from "../../proxy/core/cert_store.ts";
import { Discovery } from "../../proxy/discovery/clients.ts";
import { PROXY_IDENTITY_DEFAULTS } from "../../proxy/identity/config.ts";
import { ProxyIdentity } from "../../proxy/identity/proxy_identity.ts";
import { Registry } from "../../proxy/metrics/registry.ts";
import { startIdentityServer } from "../../proxy/testing/identity_server.ts";
import { until } from "../../proxy/testing/poll.ts";

const NS = "shop";
const CLUSTER_IP = "10.96.0.10";
const AUTHORITY = `web.${NS}.svc.cluster.local:80`;

type Labels = Record<string, string>;

/** Every sample of `name` with exactly these labels (no more, no fewer), summed. */
function exact(text: string, name: string, want: Labels): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    const m = line.match(/^([a-z_]+)\{(.*)\} (\S+)$/);
    if (!m || m[1] !== name) continue;
    const got: Labels = {};
    for (const [, k, v] of m[2].matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)) got[k] = v;
    const keys = Object.keys(want);
    if (Object.keys(got).length === keys.length && keys.every((k) => got[k] === want[k])) sum += Number(m[3]);
  }
  return sum;
}

function loopback(addr: string): Labels {
  return { addr, tls: "no_identity", no_tls_reason: "loopback" };
}

function ended(addr: string, classification: string, grpcStatus: string): Labels {
  return { ...loopback(addr), status_code: "200", classification, grpc_status: grpcStatus, error: "" };
}

Deno.test({
  name:
    "control_* metrics: WatchPort, Watch, Get, GetProfile and Certify against the real controllers, with Linkerd's labels",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    // Destination: a Service with one meshed endpoint.
    const dst = new Fixture();
    dst.apply("namespaces", { metadata: { name: NS } });
    dst.apply("services", dstService(NS, "web", [{ name: "http", port: 80 }], { clusterIP: CLUSTER_IP }));
    dst.apply("pods", dstPod(NS, "web-1", "10.244.0.5", { meshed: true }));
    dst.apply("endpointslices", slice(NS, "web", [{ ip: "10.244.0.5", pod: "web-1" }]));
    await dst.start();
    // Policy: the client pod itself (its inbound port) and the Service it calls.
    await using pol = await startPolicyServer();
    pol.source.emit("added", "Namespace", namespace(NS));
    pol.source.emit("added", "Pod", policyPod(NS, "client-1", { app: "client" }, { ip: "10.244.0.9" }));
    pol.source.emit(
      "added",
      "Service",
      policyService(NS, "web", { clusterIP: CLUSTER_IP, ports: [{ name: "http", port: 80 }] } as never),
    );
    const dir = await Deno.makeTempDir({ prefix: "weft-control-metrics-" });
    const identity = await startIdentityServer(dir, ["tok-client=shop/client"], "24h");
    let identityUp = true;

    const registry = new Registry();
    const dstAddr = `127.0.0.1:${dst.port}`;
    const polAddr = `127.0.0.1:${pol.port}`;
    const idAddr = `127.0.0.1:${identity.port}`;
    const plain = (port: number) => ({ addr: { host: "127.0.0.1", port }, name: undefined, plaintext: true });
    const discovery = new Discovery({
      store: new CertStore(),
      destination: plain(dst.port),
      policy: plain(pol.port),
      // What the injector gives a pod: its workload and context token.
      workload: policyWorkload(NS, "client-1"),
      contextToken: destinationContext(NS, "node-a", "client-1"),
      // Slow reconnects, short idle: a released watch is dropped soon and not reopened.
      backoff: { minMs: 30_000, maxMs: 30_000, jitter: 0 },
      inboundIdleMs: 100,
      outboundIdleMs: 100,
      registry,
    });
    const scrape = () => registry.metrics();
    const waitFor = async (what: string, name: string, labels: Labels, n: number) =>
      await until(what, async () => exact(await scrape(), name, labels) >= n ? true : undefined, 10_000);
    try {
      // Each watch: opened (request counted), answered by the real controller, dropped by the proxy
      // after its idle timeout (response counted: no trailers from a dropped gRPC stream is
      // success with grpc_status 0, as Linkerd classifies it).
      const inbound = discovery.inbound.subscribe(8080);
      const inView = await inbound.ready(10_000);
      assert.equal(inView.status, "live", `WatchPort: ${JSON.stringify(inView.end)}`);
      assert.equal(exact(await scrape(), "control_request_total", loopback(polAddr)), 1);
      inbound.release();
      await waitFor("WatchPort ended", "control_response_total", ended(polAddr, "success", "0"), 1);

      const outbound = discovery.outbound.subscribe({ ip: CLUSTER_IP, port: 80 });
      const outView = await outbound.ready(10_000);
      assert.equal(outView.status, "live", `Watch: ${JSON.stringify(outView.end)}`);
      assert.equal(exact(await scrape(), "control_request_total", loopback(polAddr)), 2);
      outbound.release();
      await waitFor("Watch ended", "control_response_total", ended(polAddr, "success", "0"), 2);

      const endpoints = discovery.destination.subscribe(AUTHORITY);
      const epView = await endpoints.ready(10_000);
      assert.equal(epView.status, "live", `Get: ${JSON.stringify(epView.end)}`);
      assert.deepEqual([...epView.state!.endpoints.keys()], ["10.244.0.5:8080"]);
      assert.equal(exact(await scrape(), "control_request_total", loopback(dstAddr)), 1);
      endpoints.release();
      await waitFor("Get ended", "control_response_total", ended(dstAddr, "success", "0"), 1);

      const profile = discovery.profile.subscribe(`${CLUSTER_IP}:80`);
      const prView = await profile.ready(10_000);
      assert.equal(prView.status, "live", `GetProfile: ${JSON.stringify(prView.end)}`);
      assert.equal(exact(await scrape(), "control_request_total", loopback(dstAddr)), 2);
      profile.release();
      await waitFor("GetProfile ended", "control_response_total", ended(dstAddr, "success", "0"), 2);

      // A request the destination controller refuses ends with its status, grpc_status 3; Linkerd counts
      // INVALID_ARGUMENT as the server answering (only UNKNOWN, DEADLINE_EXCEEDED, INTERNAL,
      // UNAVAILABLE and DATA_LOSS are failures), so the classification stays success.
      const bad = discovery.destination.subscribe("web.shop.svc.cluster.local:99999");
      const badView = await bad.ready(10_000);
      assert.equal(badView.status, "final");
      assert.equal(badView.end?.code, 3, JSON.stringify(badView.end));
      bad.release();
      await waitFor("refused Get", "control_response_total", ended(dstAddr, "success", "3"), 1);

      // Certify: the proxy's identity client with its token file, then with a token TokenReview refuses.
      const id = new ProxyIdentity({
        ...PROXY_IDENTITY_DEFAULTS,
        localName: `client.${NS}.serviceaccount.identity.linkerd.cluster.local`,
        trustAnchorsPem: identity.anchorsPem,
        tokenFile: `${dir}/token`,
        svcAddr: idAddr,
      }, { store: new CertStore(), registry, log: () => {} });
      // The token file is read on every Certify, so each call sends what the file holds then.
      const certify = async (token: string) => {
        await Deno.writeTextFile(`${dir}/token`, token);
        id.lastError = undefined;
        await id.refreshOnce();
        return id.lastError;
      };
      assert.equal(await certify("tok-client"), undefined);
      await waitFor("Certify", "control_response_total", ended(idAddr, "success", "0"), 1);
      const refused = await certify("tok-unknown");
      assert.ok(refused, "an unknown token was certified");
      const text = await scrape();
      // The identity controller refuses an unauthenticated token with FAILED_PRECONDITION (9): an
      // answer, not a failure, by Linkerd's gRPC classification.
      assert.match(refused, /token is not authenticated/);
      assert.equal(exact(text, "control_response_total", ended(idAddr, "success", "9")), 1, text);
      assert.equal(exact(text, "control_request_total", loopback(idAddr)), 2);

      // Every call has a latency sample under the same labels (with its status code).
      for (const [addr, n] of [[polAddr, 2], [dstAddr, 3], [idAddr, 2]] as const) {
        assert.equal(
          exact(text, "control_response_latency_ms_count", { ...loopback(addr), status_code: "200" }),
          n,
          `latency samples of ${addr}:\n${text}`,
        );
      }
      // The HELP/TYPE lines as Linkerd's: three families, counters and a histogram.
      assert.match(text, /^# TYPE control_request_total counter$/m);
      assert.match(text, /^# TYPE control_response_total counter$/m);
      assert.match(text, /^# TYPE control_response_latency_ms histogram$/m);

      // The identity controller gone: the call fails before any response, counted as a failure with
      // no status code and the error that ended it.
      await identity.close();
      identityUp = false;
      assert.ok(await certify("tok-client"), "Certify succeeded with the identity controller stopped");
      id.close();
      const gone = (await scrape()).split("\n").filter((l) =>
        l.startsWith("control_response_total{") && l.includes(`addr="${idAddr}"`) &&
        l.includes('status_code=""')
      );
      assert.equal(gone.length, 1, gone.join("\n"));
      assert.match(gone[0], /classification="failure",grpc_status="",error="[^"]+"\} 1$/);
    } finally {
      discovery.close();
      if (identityUp) await identity.close();
      await dst.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

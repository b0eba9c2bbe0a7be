/** Both validating webhooks from one server over real HTTPS on 127.0.0.1, certificate from a test CA. */
import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { testCa, writeLikeKubelet } from "../webhook/testing/pki.ts";
import { parseArgs, validatorHandlers } from "./main.ts";
import { serveValidator } from "./webhook_server.ts";

function review(group: string, kind: string, name: string, object: unknown, operation = "CREATE") {
  return {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: `uid-${name}`,
      kind: { group, version: "v1", kind },
      namespace: "shop",
      name,
      operation,
      object,
    },
  };
}

const profile = (pathRegex: string) => ({
  apiVersion: "linkerd.io/v1alpha2",
  kind: "ServiceProfile",
  metadata: { name: "web.shop.svc.cluster.local", namespace: "shop" },
  spec: { routes: [{ name: "root", condition: { method: "GET", pathRegex } }] },
});

Deno.test("validator server: /serviceprofile and /policy from one HTTPS server, refusals name the field", async () => {
  const ca = await testCa();
  const dir = await Deno.makeTempDir();
  const leaf = await ca.issue("weft-validator");
  await writeLikeKubelet(dir, { "tls.crt": leaf.cert, "tls.key": leaf.key });
  const abort = new AbortController();
  const registry = new Registry();
  const server = await serveValidator({
    hostname: "127.0.0.1",
    port: 0,
    certFile: `${dir}/tls.crt`,
    keyFile: `${dir}/tls.key`,
    handlers: validatorHandlers({ clusterDomain: "cluster.local" }, () => []),
    signal: abort.signal,
    registry,
    reloadIntervalMs: 30,
    maxBodyBytes: 32 * 1024,
    log: () => {},
  });
  const client = Deno.createHttpClient({ caCerts: [ca.caPem] });
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`https://127.0.0.1:${server.port}${path}`, {
      method: "POST",
      body: typeof body === "string" ? body : JSON.stringify(body),
      headers: { "content-type": "application/json" },
      client,
    });
    const text = await res.text();
    return { status: res.status, json: JSON.parse(text) };
  };
  try {
    const badSp = await post("/serviceprofile", review("linkerd.io", "ServiceProfile", "web", profile("(")));
    assert.equal(badSp.status, 200);
    assert.deepEqual(badSp.json, {
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      response: {
        uid: "uid-web",
        allowed: false,
        status: {
          code: 400,
          reason: "Invalid",
          message:
            'ServiceProfile shop/web is invalid: spec.routes[0].condition.pathRegex: invalid regular expression "(": unclosed group (at character 1)',
        },
      },
    });
    const goodSp = await post(
      "/serviceprofile",
      review("linkerd.io", "ServiceProfile", "web", profile("/api/.*")),
    );
    assert.deepEqual([goodSp.json.response.uid, goodSp.json.response.allowed], ["uid-web", true]);

    const badPolicy = await post(
      "/policy",
      review("policy.linkerd.io", "NetworkAuthentication", "n", {
        metadata: { name: "n" },
        spec: { networks: [{ cidr: "10.0.0.0/99" }] },
      }),
    );
    assert.equal(badPolicy.json.response.allowed, false);
    assert.match(
      badPolicy.json.response.status.message,
      /^NetworkAuthentication shop\/n is invalid: spec\.networks\[0\]\.cidr: /,
    );
    const goodPolicy = await post(
      "/policy",
      review("policy.linkerd.io", "NetworkAuthentication", "n", {
        metadata: { name: "n" },
        spec: { networks: [{ cidr: "10.0.0.0/8" }] },
      }),
    );
    assert.equal(goodPolicy.json.response.allowed, true);

    // A profile sent to the policy path (a misconfigured webhook) is refused there, not admitted.
    const crossed = await post("/policy", review("linkerd.io", "ServiceProfile", "web", profile("/")));
    assert.equal(crossed.json.response.allowed, false);

    const garbage = await post("/serviceprofile", "{not json");
    assert.equal(garbage.status, 400);
    assert.match(garbage.json.error, /request body is not JSON/);
    const wrongKind = await post("/serviceprofile", { apiVersion: "admission.k8s.io/v1", kind: "Pod" });
    assert.equal(wrongKind.status, 400);
    assert.equal(wrongKind.json.error, 'bad AdmissionReview: kind is "Pod", want AdmissionReview');
    const big = await post("/serviceprofile", { pad: "x".repeat(40 * 1024) });
    assert.equal(big.status, 413);
    const nowhere = await post("/validate", review("linkerd.io", "ServiceProfile", "web", profile("/")));
    assert.equal(nowhere.status, 404);
    assert.equal(nowhere.json.error, "no admission handler at /validate; have /serviceprofile, /policy");

    // The server still answers after the bad requests, and after its certificate was rotated.
    const rotated = await ca.issue("weft-validator-2");
    await writeLikeKubelet(dir, { "tls.crt": rotated.cert, "tls.key": rotated.key });
    const deadline = Date.now() + 3000;
    while (server.reloads() === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(server.reloads(), 1);
    const after = await post("/serviceprofile", review("linkerd.io", "ServiceProfile", "web", profile("/x")));
    assert.equal(after.json.response.allowed, true);

    const metrics = await registry.metrics();
    assert.match(metrics, /validator_admission_responses_total\{path="\/serviceprofile",allowed="false"\} 1/);
    assert.match(metrics, /validator_admission_responses_total\{path="\/serviceprofile",allowed="true"\} 2/);
    assert.match(metrics, /validator_admission_responses_total\{path="\/policy",allowed="false"\} 2/);
    assert.match(metrics, /webhook_http_responses_total\{path="other",code="404"\} 1/);
  } finally {
    client.close();
    abort.abort();
    await server.closed;
    await Deno.remove(dir, { recursive: true });
    await ca.close();
  }
});

Deno.test("validator flags: defaults :9443 and :9997, the Secret directory, and bad values named", () => {
  const d = parseArgs([], {});
  assert.deepEqual(d, {
    hostname: "0.0.0.0",
    port: 9443,
    adminHostname: "0.0.0.0",
    adminPort: 9997,
    certFile: "/var/run/weft/tls/tls.crt",
    keyFile: "/var/run/weft/tls/tls.key",
    clusterDomain: "cluster.local",
    kubeconfig: undefined,
  });
  const o = parseArgs(["--tls-dir=/certs", "--tls-key=/k.pem", "--addr=127.0.0.1:1"], {
    CLUSTER_DOMAIN: "c.example",
  });
  assert.deepEqual([o.certFile, o.keyFile, o.clusterDomain, o.port], [
    "/certs/tls.crt",
    "/k.pem",
    "c.example",
    1,
  ]);
  assert.throws(() => parseArgs(["--addr=9443"], {}), /--addr: "9443" is not host:port \(no :port\)/);
  assert.throws(() => parseArgs(["--port=1"], {}), /unknown flag --port/);
  assert.throws(
    () => parseArgs(["--cluster-domain=Cluster"], {}),
    /--cluster-domain: "Cluster" is not a DNS name/,
  );
});

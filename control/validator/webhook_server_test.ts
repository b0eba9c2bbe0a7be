/** The webhook over real HTTPS on 127.0.0.1 with a certificate made for the test. */
import assert from "node:assert/strict";
import { serveWebhook } from "./webhook_server.ts";
import { policyAdmissionHandler } from "./policy_validator.ts";

/** A throwaway CA and a serving certificate for 127.0.0.1 signed by it (rustls rejects a CA as leaf). */
async function testPki(): Promise<{ ca: string; cert: string; key: string }> {
  const dir = await Deno.makeTempDir();
  const run = async (args: string[]) => {
    const out = await new Deno.Command("openssl", { args, cwd: dir, stdout: "null", stderr: "piped" })
      .output();
    if (!out.success) throw new Error(`openssl ${args[0]}: ${new TextDecoder().decode(out.stderr)}`);
  };
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  try {
    await run([
      "req",
      "-x509",
      ...ec,
      "-days",
      "1",
      "-subj",
      "/CN=weft-test-ca",
      "-keyout",
      "ca.key",
      "-out",
      "ca.pem",
    ]);
    await run([
      "req",
      "-new",
      ...ec,
      "-subj",
      "/CN=weft-validator",
      "-keyout",
      "key.pem",
      "-out",
      "leaf.csr",
    ]);
    await Deno.writeTextFile(`${dir}/ext.cnf`, "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n");
    await run([
      "x509",
      "-req",
      "-in",
      "leaf.csr",
      "-CA",
      "ca.pem",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-days",
      "1",
      "-extfile",
      "ext.cnf",
      "-out",
      "cert.pem",
    ]);
    const read = (f: string) => Deno.readTextFile(`${dir}/${f}`);
    return { ca: await read("ca.pem"), cert: await read("cert.pem"), key: await read("key.pem") };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("validating webhook over HTTPS: rejects with the field named, allows valid, survives garbage", async () => {
  const { ca, cert, key } = await testPki();
  const abort = new AbortController();
  let port = 0;
  const server = serveWebhook({
    hostname: "127.0.0.1",
    port: 0,
    cert,
    key,
    signal: abort.signal,
    handlers: { "/policy": policyAdmissionHandler({ servers: () => [] }) },
    onListen: (a) => port = a.port,
    log: () => {},
  });
  const client = Deno.createHttpClient({ caCerts: [ca] });
  try {
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`https://127.0.0.1:${port}${path}`, {
        method: "POST",
        body: typeof body === "string" ? body : JSON.stringify(body),
        headers: { "content-type": "application/json" },
        client,
      });
      return { status: res.status, text: await res.text() };
    };
    const review = (spec: unknown) => ({
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      request: {
        uid: "abc",
        kind: { group: "policy.linkerd.io", version: "v1alpha1", kind: "NetworkAuthentication" },
        namespace: "emojivoto",
        name: "n",
        operation: "CREATE",
        object: { metadata: { name: "n" }, spec },
      },
    });
    const bad = await post("/policy", review({ networks: [{ cidr: "10.0.0.0/99" }] }));
    assert.equal(bad.status, 200);
    const r = JSON.parse(bad.text).response;
    assert.equal(r.uid, "abc");
    assert.equal(r.allowed, false);
    assert.match(
      r.status.message,
      /^NetworkAuthentication emojivoto\/n is invalid: spec\.networks\[0\]\.cidr: /,
    );

    const garbage = await post("/policy", "{not json");
    assert.equal(garbage.status, 400);
    assert.equal((await post("/nowhere", review({}))).status, 404);

    const good =
      JSON.parse((await post("/policy", review({ networks: [{ cidr: "10.0.0.0/8" }] }))).text).response;
    assert.deepEqual([good.uid, good.allowed], ["abc", true]);
  } finally {
    client.close();
    abort.abort();
    await server.finished;
  }
});

/**
 * A real identity gRPC server for other components' tests, which may not import control/:
 *
 *   deno run -A control/identity/testing_server.ts --dir=DIR [--lifetime=1h] [--token=TOKEN=NS/SA ...]
 *
 * Creates a trust anchor and issuer, writes the anchor to DIR/ca.crt, serves Certify on
 * 127.0.0.1 with TokenReview answered from the --token table, prints `{"port":N}` and runs
 * until stdin closes (the test ends the process by closing its stdin).
 */
import { Registry } from "prom-client";
import { createIssuer, createTrustAnchor } from "../certs/pki.ts";
import { systemClock } from "../../proto/support/clock.ts";
import { parseDurationMs } from "../../proto/go_duration.ts";
import { FakeReviewer, serviceAccountToken } from "./fake_reviewer.ts";
import { serveIdentityGrpc } from "./grpc_server.ts";
import { Issuer, TrustAnchors } from "./issuer.ts";
import { CertifyService } from "./service.ts";
import { TokenValidator } from "./token_validator.ts";

const flags = new Map<string, string[]>();
for (const a of Deno.args) {
  const m = /^--([a-z]+)=(.*)$/.exec(a);
  if (!m) throw new Error(`bad argument ${a}`);
  flags.set(m[1], [...(flags.get(m[1]) ?? []), m[2]]);
}
const dir = flags.get("dir")?.[0];
if (!dir) throw new Error("--dir is required");
const lifetimeMs = parseDurationMs(flags.get("lifetime")?.[0] ?? "24h", "--lifetime");
const now = Date.now();
const root = await createTrustAnchor({
  commonName: "root.linkerd.cluster.local",
  lifetimeMs: 7 * 86_400_000,
  now: now - 3_600_000,
});
const iss = await createIssuer(root, {
  commonName: "identity.linkerd.cluster.local",
  lifetimeMs: 3 * 86_400_000,
  now: now - 3_600_000,
});
await Deno.writeTextFile(`${dir}/ca.crt`, root.certPem);
const anchors = TrustAnchors.parse(root.certPem);
const issuer = await Issuer.load(
  { certPem: iss.certPem, keyPem: iss.keyPem, origin: "testing" },
  anchors,
  now,
);
const answers: Record<string, ReturnType<typeof serviceAccountToken>> = {};
for (const t of flags.get("token") ?? []) {
  const [token, sa] = t.split("=");
  const [ns, name] = sa.split("/");
  answers[token] = serviceAccountToken(ns, name);
}
const validator = new TokenValidator(new FakeReviewer(answers), {
  audiences: ["identity.l5d.io"],
  rateLimit: { ratePerSecond: 1000, burst: 1000, maxQueued: 1000 },
  timeoutMs: 5000,
}, systemClock);
const service = new CertifyService({
  config: { controlPlaneNamespace: "linkerd", trustDomain: "cluster.local", lifetimeMs, clockSkewMs: 20_000 },
  issuer: () => issuer,
  // Opaque table tokens are accepted here (other components' tests write "tok-a" token files);
  // the real controller refuses anything but a JWT (token_screen.ts).
  screenToken: () => undefined,
  validateToken: (t, client) => validator.validate(t, client),
  clock: systemClock,
});
const server = await serveIdentityGrpc({ service, registry: new Registry(), address: "127.0.0.1:0" });
console.log(JSON.stringify({ port: server.port }));
// Run until the parent closes stdin.
for await (const _ of Deno.stdin.readable) { /* ignore input */ }
validator.close();
await server.close(100);

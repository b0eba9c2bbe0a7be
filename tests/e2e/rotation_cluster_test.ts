// Cluster e2e (issue 21): with the demo's HTTP/1 (web-load -> web -> api), gRPC and TCP load running the whole
// time, `deno task rotate anchor` replaces the trust anchor with the full procedure, then `deno task rotate issuer`
// replaces the issuer under the new anchor. Asserts: no failed request on any load client; no error counted by
// any proxy of the demo or of the control plane (a refused or failed connection, a TLS handshake refused either
// way, a failed call or stream of the proxies' destination, policy and identity clients, a failed Certify, a
// refused trust bundle) nor a Certify refused by identity (see PROXY_ERROR_SERIES and newErrors for the two
// counts that are printed, not asserted); no container restart and no pod replaced (demo and control plane);
// and at the end every proxy's leaf from the installed issuer, every proxy trusting only the new anchor, the old
// anchor out of the bundle. Prints the time each rotation took and the requests made during it.
//
// Hold /tmp/weft/cluster.lock while running it (it rewrites the mesh's trust anchor). Needs issue 21's proxy
// and identity parts (live trust bundle, metrics of the rotation contract). Bounded: each wait of the command
// 4 min, the load clients stop by themselves after 25 min.
//
// The anchor goes first so the issuer rotation can use the new anchor's key, which this test made: the key of
// the anchor `deploy` created is not needed, and a re-run works on a cluster a previous run rotated.
import assert from "node:assert/strict";
import {
  CONTROL_PLANE_NS,
  inNamespace,
  type Json,
  kjson,
  KUBECONFIG,
  kubectl,
  requireMesh,
} from "./lib/kube.ts";
import { delta, fmtCounts, loadCounts, startDemoLoad } from "./lib/demo_load.ts";
import { parseMetrics, type Sample, select } from "./lib/prom.ts";
import { PROXY_ADMIN_PORT } from "./lib/workloads.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const ROTATE = `${ROOT}manifests/rotation/main.ts`;
const RATE = 10;
const LOAD_DURATION_S = 1500;
const opts = { sanitizeOps: false, sanitizeResources: false };
/** Each wait of the command; shorter only to try the test's own machinery on a mesh without issue 21's parts. */
const WAIT = `--timeout=${Deno.env.get("WEFT_ROTATION_WAIT") ?? "4m"}`;

function pemBlocks(pem: string): string[] {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

/** SHA-256 of the DER, lowercase hex: the fingerprint of the rotation contract. */
async function fingerprint(pemBlock: string): Promise<string> {
  const b64 = pemBlock.replace(/-----[A-Z ]+-----/g, "").replace(/\s+/g, "");
  const der = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const d = await crypto.subtle.digest("SHA-256", der);
  return Array.from(new Uint8Array(d), (b) => b.toString(16).padStart(2, "0")).join("");
}

async function bundleFingerprints(): Promise<string[]> {
  const cm = await kjson(["-n", CONTROL_PLANE_NS, "get", "configmap", "linkerd-identity-trust-roots"]);
  return await Promise.all(pemBlocks(cm.data?.["ca-bundle.crt"] ?? "").map(fingerprint));
}

async function installedIssuer(): Promise<string> {
  const s = await kjson(["-n", CONTROL_PLANE_NS, "get", "secret", "linkerd-identity-issuer"]);
  const crt = s.data?.["crt.pem"] ?? s.data?.["tls.crt"];
  return await fingerprint(pemBlocks(atob(crt))[0]);
}

/** Runs the rotation command as an operator would, echoing its lines; returns its exit code and the seconds. */
async function rotate(args: string[]): Promise<{ code: number; seconds: number; out: string }> {
  console.log(`$ deno task rotate ${args.join(" ")}`);
  const t0 = Date.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", ROTATE, ...args],
    env: { KUBECONFIG },
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(15 * 60_000),
  }).spawn();
  let out = "";
  const pump = async (s: ReadableStream<Uint8Array>) => {
    for await (const chunk of s.pipeThrough(new TextDecoderStream())) {
      out += chunk;
      await Deno.stdout.write(new TextEncoder().encode(chunk.replace(/^(?=.)/gm, "  | ")));
    }
  };
  const [status] = await Promise.all([child.status, pump(child.stdout), pump(child.stderr)]);
  return { code: status.code, seconds: (Date.now() - t0) / 1000, out };
}

/**
 * Counters that must not grow while the rotations run, on every proxy of the demo and of the control plane.
 * Together they cover each hop a rotation can break: a TLS handshake refused either way (`inbound/
 * outbound_tcp_errors_total{error="tls_*"}`, an unauthenticated direct connection, a meshed connect), a request
 * the proxy failed itself (`*_http_errors_total`), a peer no longer recognised by its identity
 * (`inbound_tcp_authz_deny_total`), the proxy's control-plane clients — destination, policy and identity, a
 * `control_response_total` with `classification="failure"` (a stream or call that failed, TLS to the controller
 * included) — a Certify that failed (`identity_cert_refresh_total{result="failure"}`) and a trust bundle refused
 * while the command rewrote it (`weft_identity_trust_bundle_reloads_total{result="error"}`).
 */
const PROXY_ERROR_SERIES: { name: string; match?: Record<string, string> }[] = [
  { name: "inbound_tcp_errors_total" },
  { name: "outbound_tcp_errors_total" },
  { name: "inbound_http_errors_total" },
  { name: "outbound_http_errors_total" },
  { name: "inbound_tcp_authz_deny_total" },
  { name: "control_response_total", match: { classification: "failure" } },
  { name: "identity_cert_refresh_total", match: { result: "failure" } },
  { name: "weft_identity_trust_bundle_reloads_total", match: { result: "error" } },
];
/** Identity's own side of Certify: every refused request, by reason (admin port of the identity container). */
const IDENTITY_ADMIN_PORT = 9990;

async function scrape(ip: string, port: number): Promise<Sample[]> {
  const res = await fetch(`http://${ip}:${port}/metrics`, { signal: AbortSignal.timeout(5000) });
  return parseMetrics(await res.text());
}

async function proxyScrape(p: Json): Promise<Sample[]> {
  return await scrape(p.status.podIP, PROXY_ADMIN_PORT);
}

/** One error count: which pod's proxy (or controller), which series, and the pod's IP to tell its own hops. */
interface ErrorCount {
  pod: string;
  podIP: string;
  key: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * The error counters of every proxy in `pods` (a pod that cannot be scraped fails the test: it must not count as
 * clean) and identity's refused Certify requests, keyed by pod, series and labels.
 */
async function errorCounts(pods: Json[]): Promise<Map<string, ErrorCount>> {
  const out = new Map<string, ErrorCount>();
  const add = (p: Json, s: Sample) => {
    const pod = `${p.metadata.namespace}/${p.metadata.name}`;
    const key = `${pod} ${s.name}${JSON.stringify(s.labels)}`;
    const prev = out.get(key);
    if (prev) prev.value += s.value;
    else out.set(key, { pod, podIP: p.status.podIP, key, labels: s.labels, value: s.value });
  };
  for (const p of pods) {
    const m = await proxyScrape(p);
    for (const { name, match } of PROXY_ERROR_SERIES) for (const s of select(m, name, match)) add(p, s);
    if (p.metadata.labels?.["linkerd.io/control-plane-component"] === "identity") {
      const im = await scrape(p.status.podIP, IDENTITY_ADMIN_PORT);
      for (const s of select(im, "identity_certificates_rejected_total")) add(p, s);
    }
  }
  return out;
}

/**
 * Why two counts are printed and not asserted: none involves a certificate, so none is a TLS or trust
 * failure, which is what a rotation can cause.
 * - `detect_timeout`: the client sent nothing within the detect timeout. Outbound, detection reads the
 *   application's plaintext before any TLS; inbound, it starts only after the TLS handshake succeeded (or on a
 *   plaintext connection). Nothing is refused either: the connection is forwarded as TCP, as Linkerd does. The
 *   one seen (web-load → web) came from the client: Deno's fetch (hyper's pool) opens a spare connection while
 *   waiting for a busy one and parks it idle.
 * - `inbound_tcp_errors_total{error="connect"}` to the pod's own address: the inbound proxy's plaintext connect to
 *   its own application, made after the client's handshake and authorization succeeded, so no certificate
 *   decides it. Seen once in CI (9 for one gRPC pod, 0 failed requests; the log lines were not kept). A likely
 *   cause, reproduced off-cluster: when the proxy's event loop stalls longer than the inbound connect timeout
 *   (300 ms), the timer runs before the completed connect is delivered and a loopback connect the kernel
 *   finished at once counts as `timed out after 300ms`. Fixed in 4716a19: a timer that fires late (a stalled
 *   loop) gives the connect a grace period before failing it (proxy/transport/connect_test.ts). Still printed
 *   rather than asserted: the CI run's logs were not kept, so that cause is likely, not proven. The proxy logs
 *   each one (`refused: connect to …`) and the test prints those lines: which peer, which error.
 * `control_response_total` failures are asserted on every hop, loopback included. CI twice counted some (+5 on
 * the identity pod's proxy, later +5/+6 on four control-plane proxies) with no Certify failing: they were start-up
 * failures coming back. The proxy idle-evicted its control series and revived them, counts kept, at
 * the next Certify, so a series missing before the rotation reappeared with its old count. Control series are
 * no longer evicted (proxy/metrics/control_metrics.ts, as Linkerd keeps a series whose handle is held).
 * Anything else, on any proxy, fails the test.
 */
function isLocalConnect(c: ErrorCount): boolean {
  return c.key.includes(" inbound_tcp_errors_total{") && c.labels.error === "connect" &&
    (c.labels.target_addr ?? "").startsWith(`${c.podIP}:`);
}

function newErrors(
  before: Map<string, ErrorCount>,
  after: Map<string, ErrorCount>,
): { errors: string[]; excluded: ErrorCount[] } {
  const errors: string[] = [], excluded: ErrorCount[] = [];
  for (const [k, c] of after) {
    const d = c.value - (before.get(k)?.value ?? 0);
    if (d <= 0) continue;
    if (c.labels.error === "detect_timeout" || isLocalConnect(c)) {
      excluded.push({ ...c, value: d });
    } else errors.push(`${k} +${d}`);
  }
  return { errors, excluded };
}

/** Prints the excluded counts and, for local connects, the proxy's own log lines since `since` (their cause). */
async function printExcluded(excluded: ErrorCount[], since: Date): Promise<void> {
  if (excluded.length === 0) {
    console.log("no protocol-detection timeout and no inbound connect error to a local application");
    return;
  }
  for (const c of excluded) console.log(`not a rotation error (see newErrors): ${c.key} +${c.value}`);
  for (const pod of new Set(excluded.filter(isLocalConnect).map((c) => c.pod))) {
    const [ns, name] = pod.split("/");
    const r = await kubectl([
      "-n",
      ns,
      "logs",
      name,
      "-c",
      "linkerd-proxy",
      `--since-time=${since.toISOString()}`,
    ], { timeoutMs: 15_000 });
    const lines = r.stdout.split("\n").filter((l) => l.includes("refused: connect to"));
    console.log(`${pod} proxy log, inbound connects refused since ${since.toISOString()} (${lines.length}):`);
    for (const l of lines.slice(0, 20)) console.log(`  ${l}`);
  }
}

/** Every pod of the namespaces by uid, with its containers' restart total. */
async function podSnapshot(namespaces: string[]): Promise<Map<string, { name: string; restarts: number }>> {
  const out = new Map<string, { name: string; restarts: number }>();
  for (const ns of namespaces) {
    for (const p of (await kjson(["-n", ns, "get", "pods"])).items as Json[]) {
      if (p.status?.phase === "Succeeded") continue;
      const statuses = [...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? [])];
      out.set(p.metadata.uid, {
        name: `${ns}/${p.metadata.name}`,
        restarts: statuses.reduce((n: number, c: Json) => n + (c.restartCount ?? 0), 0),
      });
    }
  }
  return out;
}

function podChanges(
  before: Map<string, { name: string; restarts: number }>,
  after: Map<string, { name: string; restarts: number }>,
): string[] {
  const out: string[] = [];
  for (const [uid, b] of before) {
    const a = after.get(uid);
    if (!a) out.push(`${b.name} is gone (replaced?)`);
    else if (a.restarts !== b.restarts) out.push(`${b.name} restarted ${a.restarts - b.restarts} times`);
  }
  for (const [uid, a] of after) if (!before.has(uid)) out.push(`${a.name} is new`);
  return out;
}

async function meshedPods(): Promise<Json[]> {
  return ((await kjson(["get", "pods", "-A", "-l", `linkerd.io/control-plane-ns=${CONTROL_PLANE_NS}`]))
    .items as Json[])
    .filter((p) => p.status?.phase === "Running" && !p.metadata.deletionTimestamp && p.status?.podIP);
}

Deno.test({
  name: "e2e: issuer and trust-anchor rotation under HTTP/1, gRPC and TCP load: no failure, no restart",
  ...opts,
  fn: async () => {
    await requireMesh();
    const anchorDir = await Deno.makeTempDir({ prefix: "weft-rotation-" });
    let addedAnchor = false;
    let passed = false;
    try {
      // A rotation a previous run left half-done is finished first (it needs no key): the test starts from one anchor.
      if ((await bundleFingerprints()).length > 1) {
        console.log("the bundle holds several anchors (an earlier run stopped mid-rotation): finishing it");
        for (const step of ["wait-leaves", "remove-anchor", "wait-trust"]) {
          const r = await rotate([step, WAIT]);
          assert.equal(r.code, 0, `${step} (finishing an earlier rotation) failed`);
        }
      }
      const [oldAnchor] = await bundleFingerprints();

      await inNamespace("e2e-rotation", { inject: true }, async (ns) => {
        const loadPods = await startDemoLoad(ns, RATE, LOAD_DURATION_S);
        const snap0 = await podSnapshot([ns, CONTROL_PLANE_NS]);
        // The demo's proxies and the control plane's (identity, destination and policy, …): the hops from the
        // proxies to the controllers go through the latter.
        const watched = (await meshedPods()).filter((p) =>
          p.metadata.namespace === ns || p.metadata.namespace === CONTROL_PLANE_NS
        );
        const controlPlane = watched.filter((p) => p.metadata.namespace === CONTROL_PLANE_NS);
        assert.ok(
          controlPlane.some((p) => p.metadata.labels?.["linkerd.io/control-plane-component"] === "identity"),
          "the identity pod is meshed and watched",
        );
        console.log(
          `errors watched on ${watched.length} proxies: the demo's ${
            watched.length - controlPlane.length
          } and ` +
            `the control plane's ${controlPlane.map((p) => p.metadata.name).join(", ")}`,
        );
        const since = new Date();
        const err0 = await errorCounts(watched);
        const load0 = await loadCounts(loadPods);
        console.log(`before the rotations (start-up included): ${fmtCounts(load0)}`);

        // (b) The trust anchor, with the full procedure.
        addedAnchor = true;
        const anchor = await rotate(["anchor", `--anchor-dir=${anchorDir}`, WAIT]);
        assert.equal(anchor.code, 0, "deno task rotate anchor failed");
        const load1 = await loadCounts(loadPods);
        const newAnchor = await fingerprint(await Deno.readTextFile(`${anchorDir}/ca.crt`));
        assert.deepEqual(await bundleFingerprints(), [newAnchor], "the bundle holds only the new anchor");
        assert.notEqual(newAnchor, oldAnchor);

        // (a) The issuer, under the new anchor.
        const issuerBefore = await installedIssuer();
        const issuer = await rotate(["issuer", `--anchor-dir=${anchorDir}`, WAIT]);
        assert.equal(issuer.code, 0, "deno task rotate issuer failed");
        const load2 = await loadCounts(loadPods);
        const issuerAfter = await installedIssuer();
        assert.notEqual(issuerAfter, issuerBefore, "the issuer changed");

        const dAnchor = delta(load0, load1), dIssuer = delta(load1, load2);
        console.log(
          `anchor rotation: ${anchor.seconds.toFixed(1)} s end to end; requests during it: ${
            fmtCounts(dAnchor)
          }`,
        );
        console.log(
          `issuer rotation: ${issuer.seconds.toFixed(1)} s end to end; requests during it: ${
            fmtCounts(dIssuer)
          }`,
        );

        // Every meshed pod, the control plane's included, on the new issuer and trusting only the new anchor,
        // read straight from each proxy (not through the command).
        const stale: string[] = [];
        const mesh = await meshedPods();
        for (const p of mesh) {
          const m = await proxyScrape(p);
          const leaf = select(m, "weft_identity_leaf_issuer_info").filter((s) => s.value === 1)
            .map((s) => s.labels.fingerprint_sha256);
          const anchors = select(m, "weft_identity_trust_anchor_expiration_timestamp_seconds")
            .map((s) => s.labels.fingerprint_sha256);
          if (leaf.join() !== issuerAfter) {
            stale.push(`${p.metadata.namespace}/${p.metadata.name} leaf from ${leaf}`);
          }
          if (anchors.join() !== newAnchor) {
            stale.push(
              `${p.metadata.namespace}/${p.metadata.name} trusts ${anchors.join(",") || "nothing reported"}`,
            );
          }
        }
        assert.deepEqual(stale, [], `${mesh.length} meshed pods checked`);

        for (const [k, v] of Object.entries(delta(load0, load2))) {
          assert.ok(v.success > 0, `${k} carried no request during the rotations`);
          assert.equal(v.failure, 0, `${k}: ${v.failure} failed requests during the rotations`);
        }
        const { errors, excluded } = newErrors(err0, await errorCounts(watched));
        await printExcluded(excluded, since);
        assert.deepEqual(
          errors,
          [],
          "errors counted by the demo's and the control plane's proxies, or identity",
        );
        assert.deepEqual(
          podChanges(snap0, await podSnapshot([ns, CONTROL_PLANE_NS])),
          [],
          "pods restarted or replaced",
        );
        console.log(
          `rotation e2e: ${mesh.length} meshed pods on issuer ${issuerAfter.slice(0, 12)} under anchor ` +
            `${newAnchor.slice(0, 12)} (old anchor ${
              oldAnchor.slice(0, 12)
            } gone); 0 failed requests, 0 errors ` +
            `on ${watched.length} proxies, 0 restarts`,
        );
        console.log(JSON.stringify({
          anchorRotationSeconds: anchor.seconds,
          issuerRotationSeconds: issuer.seconds,
          duringAnchor: dAnchor,
          duringIssuer: dIssuer,
          meshedPods: mesh.length,
          proxiesWatchedForErrors: watched.length,
          notRotationErrors: Object.fromEntries(excluded.map((c) => [c.key, c.value])),
        }));
      });
      passed = true;
    } finally {
      // A failed anchor rotation stopped before its issuer was installed: take the new anchor out again
      // (remove-anchor refuses by itself when leaves already depend on it). Nothing to do after a pass.
      if (addedAnchor && !passed) {
        await rotate(["remove-anchor"]).catch(() => {});
        console.log(`the new anchor's key stays in ${anchorDir} (the cluster may still use it)`);
      } else await Deno.remove(anchorDir, { recursive: true }).catch(() => {});
    }
  },
});

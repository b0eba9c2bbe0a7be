// mesh:check's version skew (issue 19), against a fake API server's pods.
import assert from "node:assert/strict";
import type { Kube } from "../kube.ts";
import { NAMESPACE } from "../render.ts";
import { checkOutcome } from "./result.ts";
import { checkVersionSkew, imageTag, numericVersion, skew } from "./version_skew.ts";

const NEW = "sha256:6bbd0d1585fb650f2addd2217f9274cf9aaaa";
const OLD = "sha256:1111111111111111111111111111111111111";

/** A control-plane pod: a controller container and its proxy, both on the weft image. */
function controlPlanePod(name: string, o: { tag?: string; build?: string; proxyVersionFlag?: string } = {}) {
  const image = `localhost/weft:${o.tag ?? "dev"}`;
  return {
    metadata: {
      namespace: NAMESPACE,
      name: `weft-${name}-1`,
      labels: { "linkerd.io/control-plane-component": name },
      annotations: { "linkerd.io/proxy-version": o.tag ?? "dev" },
    },
    spec: {
      initContainers: [{ name: "linkerd-proxy", image }],
      containers: [{
        name,
        image,
        command: [
          "weft-control",
          name,
          ...(o.proxyVersionFlag ? [`--proxy-version=${o.proxyVersionFlag}`] : []),
        ],
      }],
    },
    status: {
      phase: "Running",
      initContainerStatuses: [{ name: "linkerd-proxy", imageID: o.build ?? NEW }],
      containerStatuses: [{ name, imageID: o.build ?? NEW }],
    },
  };
}

function meshedPod(
  name: string,
  o: { version?: string; image?: string; build?: string; phase?: string } = {},
) {
  return {
    metadata: {
      namespace: "app",
      name,
      annotations: o.version === undefined ? {} : { "linkerd.io/proxy-version": o.version },
    },
    spec: {
      containers: [{ name: "app", image: "app:1" }, {
        name: "linkerd-proxy",
        image: o.image ?? "localhost/weft:dev",
      }],
    },
    status: {
      phase: o.phase ?? "Running",
      containerStatuses: [{ name: "app", imageID: "sha256:app" }, {
        name: "linkerd-proxy",
        imageID: o.build ?? NEW,
      }],
    },
  };
}

/** What the check reads: one list of meshed pods, by the control-plane-ns label. */
function fakeKube(pods: unknown[]): Kube & { queries: string[] } {
  const queries: string[] = [];
  return {
    queries,
    list: (path: string, q: Record<string, string> = {}) => {
      queries.push(`${path}?${new URLSearchParams(q)}`);
      return Promise.resolve(path === "/api/v1/pods" ? pods : []);
    },
  } as unknown as Kube & { queries: string[] };
}

const run = (pods: unknown[]) => checkVersionSkew({ kube: fakeKube(pods), thresholdMs: 0, now: 0 });
const CP = [controlPlanePod("destination"), controlPlanePod("identity"), controlPlanePod("proxy-injector")];

Deno.test("versions: tags, numbers, skew", () => {
  assert.equal(imageTag("localhost/weft:dev"), "dev");
  assert.equal(imageTag("reg.example:5000/weft:1.2.3@sha256:ab"), "1.2.3");
  assert.equal(imageTag("reg.example:5000/weft"), undefined);
  assert.equal(imageTag("weft@sha256:ab"), undefined);
  assert.deepEqual(numericVersion("stable-2.14.1"), { major: 2, minor: 14 });
  assert.deepEqual(numericVersion("v1.3"), { major: 1, minor: 3 });
  assert.equal(numericVersion("dev"), undefined);
  assert.equal(skew("1.2.0", "1.3.9"), 1);
  assert.equal(skew("1.2.0", "1.5.0"), 3);
  assert.equal(skew("1.2.0", "2.2.0"), Infinity);
  assert.equal(skew("dev", "1.2.0"), undefined);
});

Deno.test("every proxy on the control plane's version and build: ok, from one list of meshed pods", async () => {
  const kube = fakeKube([
    ...CP,
    meshedPod("web-1", { version: "dev" }),
    meshedPod("web-2", { phase: "Pending" }),
  ]);
  const r = await checkVersionSkew({ kube, thresholdMs: 0, now: 0 });
  assert.equal(r.outcome, "ok", r.detail);
  assert.match(
    r.detail,
    /^4 meshed pods' proxies match the control plane \(dev, build sha256:6bbd0d1585fb\)$/,
  );
  assert.deepEqual(kube.queries, ["/api/v1/pods?labelSelector=linkerd.io%2Fcontrol-plane-ns%3Dweft"]);
});

Deno.test("same version, older build (a pod started before the last deploy): a warning naming the pod", async () => {
  const r = await run([
    ...CP,
    meshedPod("web-1", { version: "dev", build: OLD }),
    meshedPod("web-2", { version: "dev" }),
  ]);
  assert.equal(r.outcome, "warn");
  assert.match(
    r.detail,
    /1 of 5 meshed pods run another proxy .*restart their workloads.*app\/web-1: proxy dev build sha256:111111111111, control plane build sha256:6bbd0d1585fb$/,
  );
  assert.doesNotMatch(r.detail, /web-2/);
  assert.equal(checkOutcome([r]).code, 0);
});

Deno.test("numbered versions: one minor apart warns, more fails; a control-plane flag sets its version", async () => {
  const cp = [
    controlPlanePod("destination", { tag: "1.4.0" }),
    controlPlanePod("proxy-injector", { tag: "1.4.0" }),
  ];
  const near = await run([...cp, meshedPod("a", { version: "1.3.2" })]);
  assert.equal(near.outcome, "warn");
  assert.match(near.detail, /app\/a: proxy 1\.3\.2, control plane 1\.4\.0 \(1 minor version apart\)/);
  const far = await run([...cp, meshedPod("a", { version: "1.3.2" }), meshedPod("b", { version: "1.1.0" })]);
  assert.equal(far.outcome, "fail");
  assert.match(
    far.detail,
    /app\/b: proxy 1\.1\.0, control plane 1\.4\.0 \(3 minor versions apart\) \(and 1 within one version\)$/,
  );
  assert.doesNotMatch(far.detail, /app\/a/);
  assert.equal(checkOutcome([far]).code, 1);
  const major = await run([...cp, meshedPod("c", { version: "2.4.0" })]);
  assert.equal(major.outcome, "fail");
  assert.match(major.detail, /another major version/);
  // No annotation: the proxy image's tag; a patch release apart is a difference, within the minor version.
  const byImage = await run([...cp, meshedPod("d", { image: "reg/weft:1.4.1" })]);
  assert.equal(byImage.outcome, "warn", byImage.detail);
  assert.match(byImage.detail, /app\/d: proxy 1\.4\.1, control plane 1\.4\.0 \(same minor version\)$/);
  assert.equal((await run([...cp, meshedPod("d", { image: "reg/weft:1.4.0" })])).outcome, "ok");
  // The injector's --proxy-version= is what it stamps on new pods.
  const flagged = [controlPlanePod("proxy-injector", { proxyVersionFlag: "1.4.0" })];
  assert.equal((await run([...flagged, meshedPod("e", { version: "1.4.0" })])).outcome, "warn"); // dev proxy of the cp pod
  assert.match(
    (await run([...flagged, meshedPod("e", { version: "1.4.0" })])).detail,
    /weft-proxy-injector-1: proxy dev/,
  );
});

Deno.test("unnumbered versions that differ warn (not comparable), never fail", async () => {
  const r = await run([...CP, meshedPod("a", { version: "feature-x" })]);
  assert.equal(r.outcome, "warn");
  assert.match(r.detail, /app\/a: proxy feature-x, control plane dev$/);
});

Deno.test("many skewed pods: the first ten, then a count", async () => {
  const pods = Array.from({ length: 13 }, (_, i) => meshedPod(`p${i}`, { version: "dev", build: OLD }));
  const r = await run([...CP, ...pods]);
  assert.match(r.detail, /^13 of 16 meshed pods/);
  assert.match(r.detail, /app\/p9: .*; and 3 more/);
  assert.doesNotMatch(r.detail, /app\/p10:/);
});

import assert from "node:assert/strict";
import type { V1Container } from "@kubernetes/client-node";
import { controlPlaneNames } from "../control/injector/config.ts";
import { INIT_CONTAINER, PROXY_CONTAINER } from "../control/injector/decision.ts";
import { parseInjectorArgs } from "../control/injector/flags.ts";
import { ProxyEnv } from "../proto/env.ts";
import { LeaderLeases } from "../proto/control_plane.ts";
import { Ports } from "../proto/ports.ts";
import { IMAGE_COMMANDS } from "../images/build.ts";
import { createWebhookCa, serviceDnsNames } from "./certs.ts";
import { CONTROL_PLANE_DIR } from "./deploy.ts";
import type { Manifest } from "./kinds.ts";
import {
  CLUSTER_DOMAIN,
  IMAGE_DIGEST_ANNOTATION,
  loadDir,
  MANIFEST_IMAGE,
  NAMESPACE,
  renderControlPlane,
  type RenderParams,
  TRUST_DOMAIN,
  WEBHOOK_CERTS,
} from "./render.ts";

// deno-lint-ignore no-explicit-any
type Obj = any;

const ANCHORS = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n";
const ca = await createWebhookCa(NAMESPACE, Date.now());
const docs = await loadDir(CONTROL_PLANE_DIR);

async function render(over: Partial<RenderParams> = {}): Promise<Manifest[]> {
  return await renderControlPlane(docs, {
    image: "registry.example/weft:1.2.3",
    imagePullPolicy: "IfNotPresent",
    imageDigest: "sha256:abc",
    trustAnchorsPem: ANCHORS,
    nativeSidecars: true,
    webhookCaPem: ca.certPem,
    ...over,
  });
}

const objects = await render();
const of = (kind: string) => objects.filter((o) => o.kind === kind) as Obj[];
const named = (kind: string, name: string) => of(kind).find((o) => o.metadata.name === name);
const containersOf = (d: Obj): V1Container[] => [
  ...(d.spec.template.spec.initContainers ?? []),
  ...d.spec.template.spec.containers,
];
const env = (c: V1Container, name: string) => c.env?.find((e) => e.name === name);

Deno.test("every control-plane Deployment gets an init container and a proxy from the injector's patch", () => {
  const ds = of("Deployment");
  assert.deepEqual(ds.map((d) => d.metadata.name).sort(), [
    "weft-dashboard",
    "weft-destination",
    "weft-identity",
    "weft-proxy-injector",
    "weft-tap",
  ]);
  for (const d of ds) {
    const spec = d.spec.template.spec;
    assert.equal(spec.initContainers[0].name, INIT_CONTAINER, d.metadata.name);
    const proxies = containersOf(d).filter((c) => c.name === PROXY_CONTAINER);
    assert.equal(proxies.length, 1, `${d.metadata.name}: exactly one proxy (the env-only entry is replaced)`);
    assert.deepEqual(proxies[0].command, ["weft-proxy"]);
    assert.ok(proxies[0].readinessProbe, "the proxy's readiness gates the pod");
    // The volumes the proxy mounts were added with it.
    const vols = new Set(spec.volumes.map((v: Obj) => v.name));
    for (const m of proxies[0].volumeMounts ?? []) {
      assert.ok(vols.has(m.name), `${d.metadata.name}: volume ${m.name}`);
    }
  }
});

Deno.test("every container runs one of the image's commands", () => {
  for (const d of of("Deployment")) {
    for (const c of containersOf(d)) {
      assert.ok(
        (IMAGE_COMMANDS as readonly string[]).includes(c.command![0]),
        `${d.metadata.name}/${c.name}: ${c.command}`,
      );
    }
  }
});

Deno.test("destination and injector proxies are native sidecars; identity's does not wait for itself", () => {
  for (const name of ["weft-destination", "weft-proxy-injector"]) {
    const proxy = named("Deployment", name).spec.template.spec.initContainers[1];
    assert.equal(proxy.name, PROXY_CONTAINER);
    assert.equal(proxy.restartPolicy, "Always");
    assert.ok(proxy.startupProbe);
  }
  const id = named("Deployment", "weft-identity").spec.template.spec;
  assert.equal(id.initContainers.length, 1, "no native sidecar: its startup probe would wait for identity");
  assert.equal(id.containers[0].name, PROXY_CONTAINER);
  assert.equal(id.containers[0].lifecycle?.postStart, undefined, "no postStart wait for a certificate");
});

Deno.test("control-plane proxies use loopback controllers next door and the anchors ConfigMap", () => {
  const proxy = (name: string) =>
    containersOf(named("Deployment", name)).find((c) => c.name === PROXY_CONTAINER)!;
  assert.equal(env(proxy("weft-identity"), ProxyEnv.identitySvcAddr)?.value, "localhost.:8080");
  assert.equal(env(proxy("weft-destination"), ProxyEnv.destinationSvcAddr)?.value, "localhost.:8086");
  assert.equal(env(proxy("weft-destination"), ProxyEnv.policySvcAddr)?.value, "localhost.:8090");
  const names = controlPlaneNames({
    controlPlaneNamespace: NAMESPACE,
    clusterDomain: CLUSTER_DOMAIN,
    trustDomain: TRUST_DOMAIN,
  });
  assert.equal(env(proxy("weft-proxy-injector"), ProxyEnv.identitySvcAddr)?.value, names.identityAddr);
  for (const d of of("Deployment")) {
    const p = proxy(d.metadata.name);
    const anchors = env(p, ProxyEnv.identityTrustAnchors);
    assert.deepEqual(anchors?.valueFrom?.configMapKeyRef, {
      name: "linkerd-identity-trust-roots",
      key: "ca-bundle.crt",
    });
    assert.equal(anchors?.value, undefined);
    assert.equal(p.env?.filter((e) => e.name === ProxyEnv.identityTrustAnchors).length, 1);
  }
});

Deno.test("control-plane pods skip the API server ports and are never seen by the injector webhook", () => {
  for (const d of of("Deployment")) {
    const tpl = d.spec.template;
    assert.equal(tpl.metadata.annotations["config.linkerd.io/skip-outbound-ports"], "443,6443");
    assert.ok(
      tpl.metadata.labels["linkerd.io/control-plane-component"],
      "the injector's objectSelector skips it",
    );
    const init = tpl.spec.initContainers[0];
    assert.ok(init.args.join(" ").includes("--outbound-ports-to-ignore 443,6443"), init.args.join(" "));
  }
});

Deno.test("the image deploy loaded replaces the manifests' image everywhere, with its pull policy and digest", () => {
  for (const d of of("Deployment")) {
    for (const c of containersOf(d)) {
      assert.equal(c.image, "registry.example/weft:1.2.3", `${d.metadata.name}/${c.name}`);
      assert.equal(c.imagePullPolicy, "IfNotPresent");
      assert.ok(!JSON.stringify(c).includes(MANIFEST_IMAGE), `${c.name} still names ${MANIFEST_IMAGE}`);
    }
    assert.equal(d.spec.template.metadata.annotations[IMAGE_DIGEST_ANNOTATION], "sha256:abc");
  }
  const injector = containersOf(named("Deployment", "weft-proxy-injector")).find((c) =>
    c.name === "proxy-injector"
  )!;
  assert.ok(injector.command!.includes("--proxy-image=registry.example/weft:1.2.3"));
  assert.ok(injector.command!.includes("--image-pull-policy=IfNotPresent"));
  // The inputs are not modified.
  assert.ok(JSON.stringify(docs).includes(MANIFEST_IMAGE));
});

Deno.test("classic sidecars when the API server has no native ones", async () => {
  const classic = await render({ nativeSidecars: false });
  for (const d of classic.filter((o) => o.kind === "Deployment") as Obj[]) {
    assert.equal(d.spec.template.spec.initContainers.length, 1, d.metadata.name);
    assert.equal(d.spec.template.spec.containers[0].name, PROXY_CONTAINER, d.metadata.name);
  }
});

Deno.test("controllers run unprivileged with a read-only root filesystem", () => {
  for (const d of of("Deployment")) {
    assert.equal(d.spec.template.spec.securityContext?.seccompProfile?.type, "RuntimeDefault");
    for (const c of d.spec.template.spec.containers as V1Container[]) {
      const sc = c.securityContext!;
      assert.equal(sc.runAsNonRoot, true, c.name);
      assert.equal(sc.readOnlyRootFilesystem, true, c.name);
      assert.equal(sc.allowPrivilegeEscalation, false, c.name);
      assert.deepEqual(sc.capabilities?.drop, ["ALL"], c.name);
    }
  }
});

Deno.test("each controller's probes and admin port are the admin port its code listens on (proto/ports.ts)", () => {
  // The manifests pass no --admin-addr: the containers listen on their code's default.
  const admin: [string, string, number][] = [
    ["weft-identity", "identity", Ports.identityAdmin],
    ["weft-destination", "destination", Ports.destinationAdmin],
    ["weft-destination", "policy", Ports.policyAdmin],
    ["weft-destination", "validator", Ports.validatorAdmin],
    ["weft-proxy-injector", "proxy-injector", Ports.injectorAdmin],
    ["weft-tap", "tap", Ports.tapAdmin],
    ["weft-dashboard", "dashboard", Ports.dashboardAdmin],
  ];
  for (const [deployment, name, port] of admin) {
    const c = containersOf(named("Deployment", deployment)).find((c) => c.name === name)!;
    assert.ok(c, `${deployment} has a ${name} container`);
    assert.ok(
      !c.command?.some((a) => a.startsWith("--admin-addr")),
      `${name} keeps the default admin address`,
    );
    assert.deepEqual(
      [c.readinessProbe?.httpGet?.port, c.livenessProbe?.httpGet?.port],
      [port, port],
      `${deployment}/${name} probes`,
    );
    assert.ok(c.ports?.some((p) => p.containerPort === port), `${deployment}/${name} declares ${port}`);
  }
});

Deno.test("the Services proxies dial exist with the ports and identities the injector writes", () => {
  const names = controlPlaneNames({
    controlPlaneNamespace: NAMESPACE,
    clusterDomain: CLUSTER_DOMAIN,
    trustDomain: TRUST_DOMAIN,
  });
  for (const addr of [names.destinationAddr, names.policyAddr, names.identityAddr]) {
    const m = /^([^.]+)\.([^.]+)\.svc\.[^:]+:(\d+)$/.exec(addr)!;
    const svc = named("Service", m[1]);
    assert.ok(svc, `Service ${m[1]} for ${addr}`);
    assert.equal(svc.metadata.namespace, m[2]);
    assert.equal(svc.spec.clusterIP, "None", `${m[1]} is headless: proxies balance over the pods`);
    assert.ok(svc.spec.ports.some((p: Obj) => p.port === Number(m[3])), `${m[1]} port ${m[3]}`);
  }
  // Identity names are `<serviceaccount>.<ns>.serviceaccount.identity...`: the serving pods run as those.
  const sa = (id: string) => id.split(".")[0];
  assert.equal(
    named("Deployment", "weft-destination").spec.template.spec.serviceAccountName,
    sa(names.destinationName),
  );
  assert.equal(
    named("Deployment", "weft-destination").spec.template.spec.serviceAccountName,
    sa(names.policyName),
  );
  assert.equal(
    named("Deployment", "weft-identity").spec.template.spec.serviceAccountName,
    sa(names.identityName),
  );
});

Deno.test("every Service selects a Deployment's pods and targets a port its containers declare", () => {
  for (const s of of("Service")) {
    const d = of("Deployment").find((d) =>
      Object.entries(s.spec.selector).every(([k, v]) => d.spec.template.metadata.labels[k] === v)
    );
    assert.ok(d, `Service ${s.metadata.name} selects no Deployment`);
    const ports = d.spec.template.spec.containers.flatMap((c: Obj) => c.ports ?? []);
    for (const p of s.spec.ports) {
      assert.ok(
        ports.some((cp: Obj) => cp.name === p.targetPort || cp.containerPort === p.targetPort),
        `${s.metadata.name}: targetPort ${p.targetPort}`,
      );
    }
  }
});

Deno.test("webhooks: caBundle set, kube-system and the control plane excluded, failure policy explicit", () => {
  const hooks = [...of("MutatingWebhookConfiguration"), ...of("ValidatingWebhookConfiguration")]
    .flatMap((c) => c.webhooks);
  assert.equal(hooks.length, 4);
  const bundle = new TextDecoder().decode(
    Uint8Array.from(atob(hooks[0].clientConfig.caBundle), (c) => c.charCodeAt(0)),
  );
  assert.equal(bundle, ca.certPem);
  for (const w of hooks) {
    assert.equal(w.clientConfig.caBundle, hooks[0].clientConfig.caBundle);
    assert.ok(
      ["Fail", "Ignore"].includes(w.failurePolicy),
      `${w.name}: failurePolicy is chosen, not defaulted`,
    );
    const exprs = w.namespaceSelector.matchExpressions;
    const byName = exprs.find((e: Obj) => e.key === "kubernetes.io/metadata.name");
    assert.equal(byName.operator, "NotIn");
    assert.deepEqual([...byName.values].sort(), ["kube-system", NAMESPACE]);
    assert.ok(
      exprs.some((e: Obj) =>
        e.key === "config.linkerd.io/admission-webhooks" && e.operator === "NotIn" &&
        e.values.includes("disabled")
      ),
    );
    // The Service it calls exists, and the serving certificate names it.
    const svc = named("Service", w.clientConfig.service.name);
    assert.ok(svc && svc.metadata.namespace === w.clientConfig.service.namespace, w.name);
    const cert = WEBHOOK_CERTS.find((c) =>
      (c.services as readonly string[]).includes(w.clientConfig.service.name)
    );
    assert.ok(cert, `${w.name}: no serving certificate names ${w.clientConfig.service.name}`);
    assert.ok(
      serviceDnsNames([...cert.services], NAMESPACE, CLUSTER_DOMAIN).includes(
        `${w.clientConfig.service.name}.${NAMESPACE}.svc`,
      ),
    );
  }
  const injector = hooks.find((w) => w.name === "weft-proxy-injector.weft.io");
  assert.equal(injector.failurePolicy, "Ignore");
  assert.ok(
    injector.objectSelector.matchExpressions.some((e: Obj) =>
      e.key === "linkerd.io/control-plane-component" && e.operator === "DoesNotExist"
    ),
  );
  assert.deepEqual(injector.rules[0].resources, ["pods"]);
  assert.deepEqual(injector.rules[0].operations, ["CREATE"]);
  const ns = docs.find((d) => d.kind === "Namespace")!;
  assert.equal(ns.metadata.labels?.["config.linkerd.io/admission-webhooks"], "disabled");
});

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };

/** Expands rules to `group/resource verb[@name]` grants, so roles compare as sets. */
function grants(rules: Rule[]): string[] {
  return rules.flatMap((r) =>
    r.apiGroups.flatMap((g) =>
      r.resources.flatMap((res) =>
        r.verbs.flatMap((v) => (r.resourceNames ?? [""]).map((n) => `${g}/${res} ${v}${n ? `@${n}` : ""}`))
      )
    )
  ).sort();
}
const listWatch = (...gr: string[]) => gr.flatMap((x) => [`${x} list`, `${x} watch`]);

Deno.test("RBAC: each role grants exactly what its component's code uses", () => {
  const role = (kind: string, name: string) => grants(named(kind, name).rules);
  assert.deepEqual(
    role("ClusterRole", "weft-destination"),
    listWatch(
      "/services",
      "/pods",
      "/namespaces",
      "/nodes",
      "discovery.k8s.io/endpointslices",
      "apps/replicasets",
      "batch/jobs",
      "linkerd.io/serviceprofiles",
      "policy.linkerd.io/servers",
      "workload.linkerd.io/externalworkloads",
    ).sort(),
  );
  assert.deepEqual(
    role("ClusterRole", "weft-policy"),
    [
      ...listWatch(
        "/pods",
        "/namespaces",
        "/services",
        "gateway.networking.k8s.io/httproutes",
        "gateway.networking.k8s.io/grpcroutes",
        "gateway.networking.k8s.io/tlsroutes",
        "gateway.networking.k8s.io/tcproutes",
        "workload.linkerd.io/externalworkloads",
      ),
      ...listWatch(
        ...[
          "servers",
          "serverauthorizations",
          "authorizationpolicies",
          "meshtlsauthentications",
          "networkauthentications",
          "httproutes",
          "egressnetworks",
          "httplocalratelimitpolicies",
        ]
          .map((r) => `policy.linkerd.io/${r}`),
      ),
      "policy.linkerd.io/httproutes/status patch",
      "policy.linkerd.io/egressnetworks/status patch",
      "policy.linkerd.io/httplocalratelimitpolicies/status patch",
      "gateway.networking.k8s.io/httproutes/status patch",
      "gateway.networking.k8s.io/grpcroutes/status patch",
      "gateway.networking.k8s.io/tlsroutes/status patch",
      "gateway.networking.k8s.io/tcproutes/status patch",
    ].sort(),
  );
  assert.deepEqual(role("ClusterRole", "weft-validator"), listWatch("policy.linkerd.io/servers").sort());
  assert.deepEqual(role("ClusterRole", "weft-identity"), ["authentication.k8s.io/tokenreviews create"]);
  // tap: target pods from a pod cache only (a Deployment's pods by their ReplicaSet owner's name).
  assert.deepEqual(role("ClusterRole", "weft-tap"), listWatch("/pods").sort());
  // dashboard: read only (issue 17) — what weft stat/routes/edges and mesh:check's read-only checks read.
  const getListWatch = (...gr: string[]) => gr.flatMap((x) => [`${x} get`, ...listWatch(x)]);
  assert.deepEqual(
    role("ClusterRole", "weft-dashboard"),
    [
      ...getListWatch("/pods", "/services", "/namespaces", "/events"),
      ...getListWatch(
        "apps/deployments",
        "apps/statefulsets",
        "apps/daemonsets",
        "apps/replicasets",
        "batch/jobs",
      ),
      "apiextensions.k8s.io/customresourcedefinitions get",
      "apiextensions.k8s.io/customresourcedefinitions list",
      ...getListWatch(
        ...["servers", "authorizationpolicies", "serverauthorizations", "httproutes"].map((r) =>
          `policy.linkerd.io/${r}`
        ),
      ),
      // The route page reads routes of both API groups and ServiceProfiles.
      ...getListWatch("gateway.networking.k8s.io/httproutes", "gateway.networking.k8s.io/grpcroutes"),
      ...getListWatch("linkerd.io/serviceprofiles"),
    ].sort(),
  );
  assert.deepEqual(
    role("Role", "weft-dashboard"),
    [
      "/configmaps get@linkerd-identity-trust-roots",
      "/configmaps get@weft-metrics",
      "/services/proxy get@weft-prometheus",
      "/services/proxy get@http:weft-prometheus:9090",
      "/services/proxy create@weft-tap",
      "/services/proxy create@http:weft-tap:8089",
    ].sort(),
  );
  assert.deepEqual(
    role("Role", "weft-identity"),
    [
      "/secrets list@linkerd-identity-issuer",
      "/secrets watch@linkerd-identity-issuer",
      "/configmaps get@linkerd-identity-trust-roots",
      "/configmaps list@linkerd-identity-trust-roots",
      "/configmaps watch@linkerd-identity-trust-roots",
      "/configmaps patch@linkerd-identity-trust-roots",
      "/events create",
      "/events patch",
    ].sort(),
  );
  assert.equal(named("Role", "weft-identity").metadata.namespace, NAMESPACE);
  // destination's remote-cluster store (issue 23): the credentials Secrets of its own namespace.
  assert.deepEqual(role("Role", "weft-destination-remote-clusters"), listWatch("/secrets").sort());
  assert.equal(named("Role", "weft-destination-remote-clusters").metadata.namespace, NAMESPACE);
  assert.deepEqual(named("RoleBinding", "weft-destination-remote-clusters").subjects, [
    { kind: "ServiceAccount", name: "weft-destination", namespace: NAMESPACE },
  ]);
  // Leader election (issue 19): each component may create Leases and get/update only its own.
  for (
    const [component, lease, sa] of [
      ["policy", LeaderLeases.policyStatus, "weft-destination"],
      ["identity", LeaderLeases.identityTrustRoots, "weft-identity"],
      ["proxy-injector", LeaderLeases.injectorTrustRootsCopier, "weft-proxy-injector"],
    ]
  ) {
    const name = `weft-${component}-leader-election`;
    assert.deepEqual(
      role("Role", name),
      [
        "coordination.k8s.io/leases create",
        `coordination.k8s.io/leases get@${lease}`,
        `coordination.k8s.io/leases update@${lease}`,
      ],
    );
    assert.equal(named("Role", name).metadata.namespace, NAMESPACE);
    const binding = named("RoleBinding", name);
    assert.equal(binding.metadata.namespace, NAMESPACE);
    assert.deepEqual(binding.subjects, [{ kind: "ServiceAccount", name: sa, namespace: NAMESPACE }]);
  }
  assert.deepEqual(
    role("ClusterRole", "weft-proxy-injector"),
    [
      "/namespaces get",
      "/namespaces list",
      "/namespaces watch",
      "/events create",
      "/events patch",
      // The namespace copies of the trust roots (issue 21).
      "/configmaps create",
      "/configmaps get@weft-identity-trust-roots",
      "/configmaps list@weft-identity-trust-roots",
      "/configmaps patch@weft-identity-trust-roots",
      "/configmaps get@linkerd-identity-trust-roots",
    ].sort(),
  );
});

Deno.test("RBAC: no wildcards, no access to Secrets but identity's own and destination's namespace reads, no workload writes", () => {
  const roles = [...of("ClusterRole"), ...of("Role")];
  assert.equal(roles.length, 13);
  for (const r of roles) {
    for (const g of grants(r.rules)) {
      assert.ok(!g.includes("*"), `${r.metadata.name}: ${g}`);
      if (g.startsWith("/secrets")) {
        assert.ok(
          g.endsWith("@linkerd-identity-issuer") ||
            // destination reads the multicluster credentials Secrets of its own namespace (issue 23).
            (r.kind === "Role" && r.metadata.name === "weft-destination-remote-clusters" &&
              /^\/secrets (list|watch)$/.test(g)),
          `${r.metadata.name}: ${g}`,
        );
      }
      const verb = g.split(" ")[1].split("@")[0];
      if (["create", "update", "patch", "delete", "deletecollection"].includes(verb)) {
        assert.ok(
          // identity merge-patches its own keys into the trust roots ConfigMap, by name (issue 21).
          /^(authentication\.k8s\.io\/tokenreviews|\/events|[a-z0-9.]+\/[a-z]+\/status) /.test(g) ||
            g === "/configmaps patch@linkerd-identity-trust-roots" ||
            // leader election: a component's own Lease (issue 19).
            (r.metadata.name.endsWith("-leader-election") &&
              /^coordination\.k8s\.io\/leases (create|update@weft-[a-z-]+)$/.test(g)) ||
            // the injector creates and updates the namespace copies of the trust roots (issue 21).
            (r.metadata.name === "weft-proxy-injector" &&
              (g === "/configmaps create" || g === "/configmaps patch@weft-identity-trust-roots")) ||
            // the dashboard POSTs taps through the service proxy (verb create there), as `weft tap` does.
            (r.metadata.name === "weft-dashboard" &&
              /^\/services\/proxy create@(http:)?weft-tap(:8089)?$/.test(g)),
          `${r.metadata.name} may write ${g}`,
        );
      }
    }
  }
  // Each binding names a role that exists and a ServiceAccount a Deployment runs as.
  const sas = new Set(of("Deployment").map((d) => d.spec.template.spec.serviceAccountName));
  for (const b of [...of("ClusterRoleBinding"), ...of("RoleBinding")]) {
    assert.ok(
      named(b.roleRef.kind, b.roleRef.name),
      `${b.metadata.name} → ${b.roleRef.kind} ${b.roleRef.name}`,
    );
    for (const s of b.subjects) {
      assert.ok(sas.has(s.name) && s.namespace === NAMESPACE, `${b.metadata.name}: ${s.name}`);
    }
  }
});

Deno.test("the controllers that elect a leader get their pod's name as POD_NAME (issue 19)", () => {
  for (
    const [deployment, container] of [
      ["weft-destination", "policy"],
      ["weft-identity", "identity"],
      ["weft-proxy-injector", "proxy-injector"],
    ]
  ) {
    const c = containersOf(named("Deployment", deployment)).find((x) => x.name === container)!;
    assert.deepEqual(env(c, "POD_NAME")?.valueFrom, { fieldRef: { fieldPath: "metadata.name" } }, container);
  }
});

Deno.test("the control plane's proxies record their image's tag as linkerd.io/proxy-version (issue 19)", async () => {
  for (const d of of("Deployment")) {
    assert.equal(d.spec.template.metadata.annotations["linkerd.io/proxy-version"], "1.2.3", d.metadata.name);
  }
  const dev = (await render({ image: "localhost/weft:dev" })).filter((o) => o.kind === "Deployment") as Obj[];
  for (const d of dev) assert.equal(d.spec.template.metadata.annotations["linkerd.io/proxy-version"], "dev");
});

Deno.test("--multicluster-gateway-trust puts the gateway's identity in the injector's flags, and only there (issue 23)", async () => {
  const gw = `weft-gateway.weft-multicluster.serviceaccount.identity.${NAMESPACE}.${TRUST_DOMAIN}`;
  const flagOf = (objs: Manifest[]) =>
    (objs as Obj[]).filter((o) => o.kind === "Deployment").flatMap((d) =>
      containersOf(d).flatMap((c) =>
        (c.command ?? []).filter((w) => w.startsWith("--trusted-gateway-identities")).map((w) =>
          `${d.metadata.name}/${c.name} ${w}`
        )
      )
    );
  // Without the flag nothing trusts the gateway: neither the injector's flags nor the control plane's proxies.
  assert.deepEqual(flagOf(objects), []);
  for (const d of of("Deployment")) {
    for (const c of containersOf(d)) {
      assert.equal(env(c, "WEFT_PROXY_INBOUND_TRUSTED_GATEWAY_IDENTITIES"), undefined);
    }
  }
  const trusting = await render({ multiclusterGatewayTrust: true });
  assert.deepEqual(flagOf(trusting), [
    `weft-proxy-injector/proxy-injector --trusted-gateway-identities=${gw}`,
  ]);
  const injector = (trusting as Obj[]).find((o) =>
    o.kind === "Deployment" && o.metadata.name === "weft-proxy-injector"
  );
  const words = containersOf(injector).find((c) => c.name === "proxy-injector")!.command!;
  assert.deepEqual(words.slice(0, 2), ["weft-control", "injector"]);
  // The injector's own parser reads it back as the list the patch puts on proxies.
  assert.deepEqual(parseInjectorArgs(words.slice(2), {}).base.trustedGatewayIdentities, [gw]);
  assert.deepEqual(flagOf(await render({ multiclusterGatewayTrust: false })), []);
});

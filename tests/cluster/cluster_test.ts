// Cluster tier: what the cluster itself must do for weft (issue 9's "Done when"), against the cluster in
// KUBECONFIG. Each test works in its own namespace and removes it. The isolation checks inspect installed rules
// and routes only; no test sends traffic anywhere but to pods and services of this cluster.

import assert from "node:assert/strict";
import { inNamespace, kc, kjson, KUBECONFIG, kubectl, runPodOnce, WEFT_IMAGE } from "./helpers.ts";
import {
  API_DEVICE,
  API_URL,
  BRIDGE,
  clusterConfig,
  ISOLATION_CHAIN,
  NODE_IP,
  NODE_POD_CIDR,
  POD_CIDR,
  SERVICE_CIDR,
  WORKER_LINK_PREFIX,
} from "./config.ts";
import { exec } from "./exec.ts";
import { listWorkers, workerLayout } from "./worker.ts";

const opts = { sanitizeOps: false, sanitizeResources: false, ignore: !KUBECONFIG };

/** True when KUBECONFIG points at the local cluster (the host-rule checks apply only there). */
async function isLocalCluster(): Promise<boolean> {
  const server = (await kc(["config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"]))
    .trim();
  return server === API_URL;
}

function demoDeployment(name: string, replicas = 1) {
  return `apiVersion: apps/v1
kind: Deployment
metadata: {name: ${name}}
spec:
  replicas: ${replicas}
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec:
      containers:
      - name: app
        image: ${WEFT_IMAGE}
        imagePullPolicy: Never
        env:
        - name: POD_NAME
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        ports: [{containerPort: 8080}]
        readinessProbe:
          httpGet: {path: /healthz, port: 8080}
          periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata: {name: ${name}}
spec:
  selector: {app: ${name}}
  ports: [{port: 80, targetPort: 8080}]
`;
}

Deno.test("every node is Ready and CoreDNS runs", opts, async () => {
  const nodes = await kjson(["get", "nodes"]);
  assert.ok(nodes.items.length >= 1, "no node");
  for (const n of nodes.items) {
    const ready = n.status.conditions.find((c: { type: string }) => c.type === "Ready");
    assert.equal(ready?.status, "True", `node ${n.metadata.name} is not Ready`);
  }
  const dns = await kjson(["-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-dns"]);
  assert.ok(dns.items.length >= 1, "no CoreDNS pod");
  for (const p of dns.items) {
    assert.equal(p.status.phase, "Running");
    assert.ok(p.status.containerStatuses.every((c: { ready: boolean }) => c.ready), "CoreDNS not ready");
  }
});

Deno.test(
  "a Deployment of the project image serves through its Service by ClusterIP and DNS name",
  opts,
  async () => {
    await inNamespace("t-svc", async (ns) => {
      await kc(["-n", ns, "apply", "-f", "-"], demoDeployment("demo", 2));
      await kc(["-n", ns, "rollout", "status", "deployment/demo", "--timeout=180s"]);
      const ip = (await kc(["-n", ns, "get", "service", "demo", "-o", "jsonpath={.spec.clusterIP}"])).trim();
      const urls = [`http://${ip}/`, `http://demo.${ns}.svc.cluster.local/`];
      const out = await runPodOnce(
        ns,
        "client",
        // kube-proxy programs a new Service's rules asynchronously after the rollout, so each URL
        // is retried for a bounded time before it counts as broken.
        `for (const u of ${JSON.stringify(urls)}) {
          for (let i = 0; ; i++) {
            try { const r = await fetch(u); console.log(u, r.status, await r.text()); break; }
            catch (e) { if (i >= 30) throw e; await new Promise((r) => setTimeout(r, 1000)); }
          }
        }`,
      );
      for (const u of urls) {
        assert.match(out, new RegExp(`${u.replaceAll(".", "\\.")} 200 hello from demo-`), out);
      }
    });
  },
);

Deno.test("a Job completes", opts, async () => {
  await inNamespace("t-job", async (ns) => {
    const job = {
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "once" },
      spec: {
        backoffLimit: 0,
        template: {
          spec: {
            restartPolicy: "Never",
            containers: [{
              name: "run",
              image: WEFT_IMAGE,
              imagePullPolicy: "Never",
              command: ["deno", "eval", "console.log('job done')"],
            }],
          },
        },
      },
    };
    await kc(["-n", ns, "apply", "-f", "-"], JSON.stringify(job));
    await kc(["-n", ns, "wait", "job/once", "--for=condition=Complete", "--timeout=120s"]);
    assert.match(await kc(["-n", ns, "logs", "job/once"]), /job done/);
  });
});

Deno.test("a Job with a native sidecar completes while the sidecar serves it", opts, async () => {
  await inNamespace("t-sidecar", async (ns) => {
    const job = {
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "with-sidecar" },
      spec: {
        backoffLimit: 0,
        template: {
          spec: {
            restartPolicy: "Never",
            initContainers: [{
              name: "sidecar",
              image: WEFT_IMAGE,
              imagePullPolicy: "Never",
              restartPolicy: "Always",
              // The startup probe holds the main container back until the sidecar serves, as a mesh proxy would.
              startupProbe: {
                httpGet: { path: "/healthz", port: 8080 },
                periodSeconds: 1,
                failureThreshold: 60,
              },
            }],
            containers: [{
              name: "main",
              image: WEFT_IMAGE,
              imagePullPolicy: "Never",
              command: ["deno", "eval", "console.log(await (await fetch('http://127.0.0.1:8080/')).text())"],
            }],
          },
        },
      },
    };
    await kc(["-n", ns, "apply", "-f", "-"], JSON.stringify(job));
    await kc(["-n", ns, "wait", "job/with-sidecar", "--for=condition=Complete", "--timeout=120s"]);
    assert.match(await kc(["-n", ns, "logs", "job/with-sidecar", "-c", "main"]), /hello from/);
  });
});

Deno.test("a deleted pod of a Deployment is replaced", opts, async () => {
  await inNamespace("t-replace", async (ns) => {
    await kc(["-n", ns, "apply", "-f", "-"], demoDeployment("demo"));
    await kc(["-n", ns, "rollout", "status", "deployment/demo", "--timeout=180s"]);
    const before = (await kjson(["-n", ns, "get", "pods", "-l", "app=demo"])).items.map((
      p: { metadata: { name: string } },
    ) => p.metadata.name);
    assert.equal(before.length, 1);
    await kc(["-n", ns, "delete", "pod", before[0], "--wait=false"]);
    let replaced = "";
    for (let i = 0; i < 120 && !replaced; i++) {
      const pods = (await kjson(["-n", ns, "get", "pods", "-l", "app=demo"])).items;
      for (const p of pods) {
        const ready = p.status.conditions?.some((c: { type: string; status: string }) =>
          c.type === "Ready" && c.status === "True"
        );
        if (p.metadata.name !== before[0] && ready) replaced = p.metadata.name;
      }
      if (!replaced) await new Promise((r) => setTimeout(r, 1000));
    }
    assert.ok(replaced, "no Ready replacement pod");
  });
});

Deno.test(
  "a TokenRequest token with audience identity.l5d.io passes TokenReview only for that audience",
  opts,
  async () => {
    await inNamespace("t-token", async (ns) => {
      await kc(["-n", ns, "create", "serviceaccount", "proxy"]);
      const token = (await kc([
        "-n",
        ns,
        "create",
        "token",
        "proxy",
        "--audience",
        "identity.l5d.io",
        "--duration",
        "10m",
      ]))
        .trim();
      const review = async (audience: string) =>
        JSON.parse(
          await kc(
            ["create", "-o", "json", "-f", "-"],
            JSON.stringify({
              apiVersion: "authentication.k8s.io/v1",
              kind: "TokenReview",
              spec: { token, audiences: [audience] },
            }),
          ),
        ).status;
      const ok = await review("identity.l5d.io");
      assert.equal(ok.authenticated, true, JSON.stringify(ok));
      assert.equal(ok.user.username, `system:serviceaccount:${ns}:proxy`);
      assert.deepEqual(ok.audiences, ["identity.l5d.io"]);
      const other = await review("other.example.test");
      assert.notEqual(other.authenticated, true, JSON.stringify(other));
      // RBAC is enforced: a fresh ServiceAccount may not read Secrets.
      const can = await kubectl([
        "auth",
        "can-i",
        "list",
        "secrets",
        "-n",
        ns,
        `--as=system:serviceaccount:${ns}:proxy`,
      ]);
      assert.equal(can.stdout.trim(), "no");
    });
  },
);

/** A throwaway CA and a serving certificate for `host`, made with openssl in a temp dir. */
async function webhookCerts(host: string) {
  const dir = await Deno.makeTempDir({ prefix: "weft-webhook-" });
  const o = async (args: string[]) => {
    const r = await exec("openssl", args, { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
  };
  try {
    await o(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key"]);
    await o([
      "req",
      "-x509",
      "-new",
      "-key",
      "ca.key",
      "-subj",
      "/CN=weft-test-webhook-ca",
      "-days",
      "1",
      "-out",
      "ca.crt",
    ]);
    await o(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ec.key"]);
    await o(["pkcs8", "-topk8", "-nocrypt", "-in", "ec.key", "-out", "tls.key"]);
    await o(["req", "-new", "-key", "tls.key", "-subj", `/CN=${host}`, "-out", "tls.csr"]);
    await Deno.writeTextFile(`${dir}/ext`, `subjectAltName=DNS:${host}\nextendedKeyUsage=serverAuth\n`);
    await o([
      "x509",
      "-req",
      "-in",
      "tls.csr",
      "-CA",
      "ca.crt",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-days",
      "1",
      "-extfile",
      "ext",
      "-out",
      "tls.crt",
    ]);
    const read = (f: string) => Deno.readTextFile(`${dir}/${f}`);
    return { ca: await read("ca.crt"), cert: await read("tls.crt"), key: await read("tls.key") };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a validating webhook served by a pod is called by the API server", opts, async () => {
  await inNamespace("t-webhook", async (ns) => {
    const certs = await webhookCerts(`webhook.${ns}.svc`);
    await kc([
      "-n",
      ns,
      "create",
      "secret",
      "generic",
      "webhook-tls",
      `--from-literal=tls.crt=${certs.cert}`,
      `--from-literal=tls.key=${certs.key}`,
    ]);
    await kc(
      ["-n", ns, "apply", "-f", "-"],
      `apiVersion: apps/v1
kind: Deployment
metadata: {name: webhook}
spec:
  selector: {matchLabels: {app: webhook}}
  template:
    metadata: {labels: {app: webhook}}
    spec:
      containers:
      - name: webhook
        image: ${WEFT_IMAGE}
        imagePullPolicy: Never
        args: [run, -A, --cached-only, tests/cluster/demo/webhook.ts]
        env:
        - name: POD_NAME
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        ports: [{containerPort: 8443}]
        readinessProbe:
          httpGet: {path: /healthz, port: 8443, scheme: HTTPS}
          periodSeconds: 1
        volumeMounts: [{name: tls, mountPath: /tls, readOnly: true}]
      volumes:
      - name: tls
        secret: {secretName: webhook-tls}
---
apiVersion: v1
kind: Service
metadata: {name: webhook}
spec:
  selector: {app: webhook}
  ports: [{port: 443, targetPort: 8443}]
`,
    );
    await kc(["-n", ns, "rollout", "status", "deployment/webhook", "--timeout=180s"]);
    const config = `weft-test-${ns}`;
    const vwc = {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: { name: config },
      webhooks: [{
        name: "deny.weft.test",
        admissionReviewVersions: ["v1"],
        sideEffects: "None",
        failurePolicy: "Fail",
        timeoutSeconds: 10,
        clientConfig: {
          service: { namespace: ns, name: "webhook", path: "/validate" },
          caBundle: btoa(certs.ca),
        },
        namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": ns } },
        rules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"] }],
      }],
    };
    await kc(["apply", "-f", "-"], JSON.stringify(vwc));
    try {
      // The API server picks a new webhook configuration up from its watch within moments: retry until denied.
      let denied = "";
      for (let i = 0; i < 30 && !denied; i++) {
        const name = `denied-${i}`;
        const r = await kubectl(
          ["-n", ns, "create", "-f", "-"],
          JSON.stringify({
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name, labels: { "weft.test/deny": "true" } },
          }),
        );
        if (r.code !== 0) denied = r.stderr;
        else await new Promise((res) => setTimeout(res, 1000));
      }
      assert.match(denied, /denied by webhook webhook-/, denied);
      await kc(["-n", ns, "create", "configmap", "allowed", "--from-literal=a=b"]);
      const logs = await kc(["-n", ns, "logs", "deployment/webhook"]);
      assert.match(logs, /deny=true/);
      assert.match(logs, /deny=false/);
    } finally {
      await kubectl(["delete", "validatingwebhookconfiguration", config]);
    }
  });
});

Deno.test("pod and service traffic is kept on this machine (rules and routes)", opts, async (t) => {
  if (!(await isLocalCluster())) {
    console.log("not the local cluster: host rules are not ours to inspect");
    return;
  }
  const ipt = async (args: string[]) => {
    const r = await exec("iptables", ["-w", ...args]);
    assert.equal(r.code, 0, r.stderr);
    return r.stdout.trim().split("\n");
  };
  await t.step("FORWARD jumps to the isolation chain first", async () => {
    const forward = await ipt(["-S", "FORWARD"]);
    assert.match(forward[1], new RegExp(`-j ${ISOLATION_CHAIN}$`), forward.join("\n"));
  });
  await t.step(
    "pod traffic may only reach pod and service ranges (and east's); the rest is dropped",
    async () => {
      const rules = (await ipt(["-S", ISOLATION_CHAIN])).slice(1).map((r) =>
        r.replace(/ -m comment --comment "[^"]*"/, "")
      );
      const east = clusterConfig("east");
      assert.deepEqual(rules, [
        `-A ${ISOLATION_CHAIN} -s ${POD_CIDR} -d ${POD_CIDR} -j RETURN`,
        `-A ${ISOLATION_CHAIN} -s ${POD_CIDR} -d ${SERVICE_CIDR} -j RETURN`,
        // The east cluster (`cluster:up --name=east`): its pods and node address, over its link only.
        `-A ${ISOLATION_CHAIN} -s ${POD_CIDR} -d ${east.podCidr} -o ${east.hostLink} -j RETURN`,
        `-A ${ISOLATION_CHAIN} -s ${POD_CIDR} -d ${east.nodeIp}/32 -o ${east.hostLink} -j RETURN`,
        `-A ${ISOLATION_CHAIN} -s ${east.podCidr} -d ${POD_CIDR} -i ${east.hostLink} -j RETURN`,
        `-A ${ISOLATION_CHAIN} -s ${east.nodeIp}/32 -d ${POD_CIDR} -i ${east.hostLink} -j RETURN`,
        `-A ${ISOLATION_CHAIN} -s ${POD_CIDR} -j DROP`,
        `-A ${ISOLATION_CHAIN} -d ${POD_CIDR} -j DROP`,
        `-A ${ISOLATION_CHAIN} -i ${WORKER_LINK_PREFIX}+ -j DROP`,
        `-A ${ISOLATION_CHAIN} -o ${WORKER_LINK_PREFIX}+ -j DROP`,
      ]);
    },
  );
  await t.step("nothing masquerades pod traffic", async () => {
    const nat = await ipt(["-t", "nat", "-S"]);
    const masq = nat.filter((r) => r.includes("-j MASQUERADE"));
    // kube-proxy's only masquerade rule acts on packets it marked for service hairpin; it is gated by the mark.
    for (const r of masq) assert.match(r, /^-A KUBE-POSTROUTING /, r);
    const post = await ipt(["-t", "nat", "-S", "KUBE-POSTROUTING"]);
    assert.ok(post.some((r) => r.includes("! --mark 0x4000/0x4000 -j RETURN")), post.join("\n"));
    assert.ok(!nat.some((r) => r.includes("CNI-")), "the bridge plugin installed masquerade chains");
  });
  await t.step("the API server is advertised on the local-only address", async () => {
    const slice = await kjson([
      "-n",
      "default",
      "get",
      "endpointslices",
      "-l",
      "kubernetes.io/service-name=kubernetes",
    ]);
    assert.deepEqual(slice.items[0].endpoints.map((e: { addresses: string[] }) => e.addresses[0]), [NODE_IP]);
    const addrs = JSON.parse((await exec("ip", ["-j", "-4", "addr", "show"])).stdout) as {
      ifname: string;
      addr_info: { local: string }[];
    }[];
    const holders = addrs.filter((l) => l.addr_info.some((a) => a.local === NODE_IP)).map((l) => l.ifname);
    assert.deepEqual(holders, [API_DEVICE]);
    const links = JSON.parse((await exec("ip", ["-j", "link", "show", "master", API_DEVICE])).stdout);
    assert.deepEqual(links, [], `${API_DEVICE} must have no ports`);
  });
  await t.step("pods are routed only on the cluster bridge and to worker nodes' links", async () => {
    const routes = JSON.parse((await exec("ip", ["-j", "-4", "route", "show", "table", "main"])).stdout) as {
      dst: string;
      dev: string;
    }[];
    const pod = routes.filter((r) => r.dst.startsWith("10.244."));
    const workers = (await listWorkers()).map(workerLayout);
    assert.deepEqual(
      pod.map((r) => `${r.dst} ${r.dev}`).sort(),
      [
        `${NODE_POD_CIDR} ${BRIDGE}`,
        ...workers.map((w) => `${w.podCidr} ${w.link}`),
      ].sort(),
    );
  });
  await t.step("CoreDNS answers cluster.local only and forwards nothing", async () => {
    const corefile = await kc([
      "-n",
      "kube-system",
      "get",
      "configmap",
      "coredns",
      "-o",
      "jsonpath={.data.Corefile}",
    ]);
    assert.ok(!/\bforward\b/.test(corefile), corefile);
    assert.ok(!/\bproxy\b/.test(corefile), corefile);
  });
});

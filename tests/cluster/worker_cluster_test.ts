// Cluster tier: worker nodes (`cluster:up --nodes=N`). When the local cluster has no worker, the test adds
// worker 1 and removes it at the end, so it runs on every CI machine. Traffic goes only between pods of this
// cluster; the rules that keep a worker's link from forwarding anything else are inspected, not probed.

import assert from "node:assert/strict";
import { join } from "node:path";
import { inNamespace, kc, kjson, KUBECONFIG, kubectl, runPodOnce, WEFT_IMAGE } from "./helpers.ts";
import { ADMIN_KUBECONFIG, API_URL, ISOLATION_CHAIN, NODE_NAME } from "./config.ts";
import { binaryDirs } from "./cluster.ts";
import { exec } from "./exec.ts";
import { nodeSpecs } from "./components.ts";
import { runningPid } from "./processes.ts";
import { withWorker, type WorkerLayout, workerProcessStats } from "./worker.ts";

const local = KUBECONFIG !== "" && Deno.uid?.() === 0 &&
  (await kubectl(["config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"])).stdout
      .trim() ===
    API_URL;
const opts = { sanitizeOps: false, sanitizeResources: false, ignore: !local };
const log = (s: string) => console.log(`  ${s}`);

function server(name: string, node: string) {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, labels: { app: name } },
    spec: {
      nodeName: node,
      containers: [{
        name: "app",
        image: WEFT_IMAGE,
        imagePullPolicy: "Never",
        env: [{ name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } }],
        ports: [{ containerPort: 8080 }],
        readinessProbe: { httpGet: { path: "/healthz", port: 8080 }, periodSeconds: 1 },
      }],
    },
  };
}

/** Fetches each URL (retried for a bounded time: a new Service's rules are programmed asynchronously). */
const fetchAll = (urls: string[]) =>
  `for (const u of ${JSON.stringify(urls)}) {
    for (let i = 0; ; i++) {
      try { const r = await fetch(u, { signal: AbortSignal.timeout(3000) }); console.log(u, r.status, await r.text()); break; }
      catch (e) { if (i >= 30) throw e; await new Promise((r) => setTimeout(r, 1000)); }
    }
  }`;

const inode = async (path: string) => (await Deno.stat(path)).ino;

Deno.test(
  "a worker node joins, serves pods that reach pods and Services on the other node, and leaves nothing behind",
  opts,
  async (t) => {
    const bins = await binaryDirs();
    let removed: WorkerLayout | undefined;
    await withWorker(async (w, { created, joinedMs }) => {
      if (joinedMs !== undefined) {
        console.log(`worker ${w.name} joined Ready in ${(joinedMs / 1000).toFixed(1)} s`);
      }
      if (created) removed = w;
      await t.step("the worker is Ready with its own pod range, address and kubelet identity", async () => {
        const node = await kjson(["get", "node", w.name]);
        // The range its CNI hands out is the one the cluster knows (deploy builds pod networks from it).
        assert.equal(node.spec.podCIDR, w.podCidr);
        assert.equal(
          node.status.conditions.find((c: { type: string }) => c.type === "Ready")?.status,
          "True",
        );
        assert.deepEqual(
          node.status.addresses.filter((a: { type: string }) => a.type === "InternalIP").map((
            a: { address: string },
          ) => a.address),
          [w.ip],
        );
        // The Node authorizer only lets system:node:<name> write its own Node: the heartbeat proves the identity.
        // The Lease follows the Node shortly after it turns Ready.
        let holder = "";
        for (let i = 0; i < 60 && holder !== w.name; i++) {
          const r = await kubectl([
            "-n",
            "kube-node-lease",
            "get",
            "lease",
            w.name,
            "-o",
            "jsonpath={.spec.holderIdentity}",
          ]);
          holder = r.stdout.trim();
          if (holder !== w.name) await new Promise((r) => setTimeout(r, 500));
        }
        assert.equal(holder, w.name);
      });

      await t.step(
        "its kubelet, kube-proxy and containerd run in its network namespace, not the host's",
        async () => {
          const nsIno = await inode(`/run/netns/${w.netns}`);
          const hostIno = await inode("/proc/self/ns/net");
          assert.notEqual(nsIno, hostIno);
          for (const spec of nodeSpecs(w, bins)) {
            const pid = await runningPid(spec.name, spec.binary);
            assert.ok(pid, `${spec.name} is not running`);
            assert.equal(await inode(`/proc/${pid}/ns/net`), nsIno, `${spec.name} is not in ${w.netns}`);
          }
        },
      );

      await t.step(
        "a worker link forwards pod traffic only, and pods on it are routed through it",
        async () => {
          const rules = (await exec("iptables", ["-w", "-S", ISOLATION_CHAIN])).stdout;
          assert.match(rules, /-i weft-w\+ .*-j DROP/);
          assert.match(rules, /-o weft-w\+ .*-j DROP/);
          const route = (await exec("ip", ["-4", "route", "show", w.podCidr])).stdout;
          assert.match(route, new RegExp(`via ${w.ip.replaceAll(".", "\\.")} dev ${w.link}`));
          // Inside the node: its pods' bridge, its link, and a default route to the host (which filters).
          const inside = (await exec("ip", ["-n", w.netns!, "-4", "route", "show"])).stdout.trim().split(
            "\n",
          );
          assert.ok(inside.some((r) => r.startsWith(`default via ${w.hostIp} dev eth0`)), inside.join("\n"));
        },
      );

      await t.step("pods on the two nodes reach each other by pod IP, Service and DNS name", async () => {
        await inNamespace("t-nodes", async (ns) => {
          await kc(["-n", ns, "apply", "-f", "-"], JSON.stringify(server("on-main", NODE_NAME)));
          await kc(["-n", ns, "apply", "-f", "-"], JSON.stringify(server("on-worker", w.name)));
          for (const name of ["on-main", "on-worker"]) {
            await kc(["-n", ns, "expose", "pod", name, "--port=80", "--target-port=8080"]);
            await kc(["-n", ns, "wait", `pod/${name}`, "--for=condition=Ready", "--timeout=120s"]);
          }
          const ipOf = async (name: string) =>
            (await kc(["-n", ns, "get", "pod", name, "-o", "jsonpath={.status.podIP}"])).trim();
          const workerIp = await ipOf("on-worker");
          const mainIp = await ipOf("on-main");
          assert.ok(workerIp.startsWith(w.podCidr.split(".").slice(0, 3).join(".") + "."), workerIp);
          // From the first node to the worker, and back, each way by pod IP, ClusterIP Service and DNS name.
          const toWorker = [`http://${workerIp}:8080/`, `http://on-worker.${ns}.svc.cluster.local/`];
          const toMain = [`http://${mainIp}:8080/`, `http://on-main.${ns}.svc.cluster.local/`];
          const fromMain = await runPodOnce(ns, "from-main", fetchAll(toWorker), NODE_NAME);
          const fromWorker = await runPodOnce(ns, "from-worker", fetchAll(toMain), w.name);
          for (const u of toWorker) {
            assert.match(fromMain, new RegExp(`${u.replaceAll(".", "\\.")} 200 hello from on-worker`));
          }
          for (const u of toMain) {
            assert.match(fromWorker, new RegExp(`${u.replaceAll(".", "\\.")} 200 hello from on-main`));
          }
        });
      });

      await t.step("cost of an idle worker node (kubelet, kube-proxy, containerd)", async () => {
        const a = await workerProcessStats(w.index, bins);
        const seconds = 20;
        await new Promise((r) => setTimeout(r, seconds * 1000));
        const b = await workerProcessStats(w.index, bins);
        const millicores = ((b.cpuTicks - a.cpuTicks) / 100 / seconds) * 1000;
        console.log(
          `idle worker node: RSS ${(b.rssKb / 1024).toFixed(0)} MiB, CPU ${
            millicores.toFixed(0)
          } millicores over ${seconds} s`,
        );
        assert.ok(b.rssKb > 0, "no process of the worker was measured");
      });
    }, { bins, kubectl: join(bins.k8s, "kubectl"), kubeconfig: ADMIN_KUBECONFIG, log });
    const w = removed;
    if (w) {
      await t.step("removing the worker leaves no namespace, link, route or process", async () => {
        assert.ok(!(await exec("ip", ["netns", "list"])).stdout.includes(w.netns!));
        assert.notEqual((await exec("ip", ["link", "show", w.link])).code, 0, `${w.link} is still there`);
        assert.equal((await exec("ip", ["-4", "route", "show", w.podCidr])).stdout.trim(), "");
        for (const spec of nodeSpecs(w, bins)) {
          assert.equal(await runningPid(spec.name), undefined, spec.name);
        }
      });
    }
  },
);

// Cluster tier, issue 16: a meshed pod created before the data-path tests' `ip netns add` must still finish
// terminating. On a host whose /run/netns was a plain directory when containerd started, that `ip netns add`
// bind-mounts /run/netns over itself, hides the pod's `cni-*` mount, and the pod stays Terminating for ever.
// Only meaningful on the local cluster (same host as this process); skipped against any other.

import assert from "node:assert/strict";
import { inNamespace, kc, kjson, KUBECONFIG, kubectl, WEFT_IMAGE } from "./helpers.ts";
import { API_URL } from "./config.ts";
import { readNetnsDirState } from "./netns_dir.ts";
import { PodNetwork } from "../../proxy/testing/netns.ts";

const opts = { sanitizeOps: false, sanitizeResources: false, ignore: !KUBECONFIG };

const GRACE_SECONDS = 5;
/** kubelet's status sync and the final API delete after the containers stopped; generous on 2 busy cores. */
const MARGIN_SECONDS = 25;

async function isLocalCluster(): Promise<boolean> {
  const server = (await kc(["config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"]))
    .trim();
  return server === API_URL;
}

Deno.test(
  "a meshed pod created before `ip netns add`/`ip netns delete` on the node is gone within its grace period",
  opts,
  async () => {
    if (!(await isLocalCluster())) {
      console.log(
        "skipped: KUBECONFIG is not the local cluster, so this host's /run/netns is not the node's",
      );
      return;
    }
    await inNamespace("t-netns", async (ns) => {
      await kc(["annotate", "namespace", ns, "linkerd.io/inject=enabled"]);
      const pod = {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "victim" },
        spec: {
          terminationGracePeriodSeconds: GRACE_SECONDS,
          containers: [{
            name: "app",
            image: WEFT_IMAGE,
            imagePullPolicy: "Never",
            env: [{ name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } }],
            ports: [{ containerPort: 8080 }],
          }],
        },
      };
      await kc(["-n", ns, "apply", "-f", "-"], JSON.stringify(pod));
      await kc(["-n", ns, "wait", "pod/victim", "--for=condition=Ready", "--timeout=180s"]);
      const running = await kjson(["-n", ns, "get", "pod", "victim"]);
      const names = [...running.spec.containers, ...(running.spec.initContainers ?? [])].map((
        c: { name: string },
      ) => c.name);
      assert.ok(names.includes("linkerd-proxy"), `pod was not meshed: containers ${names.join(", ")}`);

      // Exactly the data-path tests' set-up: a fresh `ip netns add` (the first one on a machine remounts
      // /run/netns), then its deletion.
      const net = await PodNetwork.create([]);
      await net.cleanup();
      const netns = await readNetnsDirState();

      const t0 = Date.now();
      await kc(["-n", ns, "delete", "pod", "victim", "--wait=false"]);
      const limit = (GRACE_SECONDS + MARGIN_SECONDS) * 1000;
      let gone = false;
      while (Date.now() - t0 < limit) {
        const r = await kubectl(["-n", ns, "get", "pod", "victim", "-o", "name"]);
        if (r.code !== 0 && /NotFound/.test(r.stderr)) {
          gone = true;
          break;
        }
        await new Promise((r) => setTimeout(r, 500));
      }
      const took = ((Date.now() - t0) / 1000).toFixed(1);
      if (!gone) {
        const ev = await kubectl([
          "-n",
          ns,
          "get",
          "events",
          "--field-selector",
          "involvedObject.name=victim",
        ]);
        assert.fail(
          `pod still there ${took}s after deletion (grace ${GRACE_SECONDS}s + ${MARGIN_SECONDS}s margin); ` +
            `namespace mounts hidden under /run/netns: ${netns.hidden.join(", ") || "none"}\n${ev.stdout}`,
        );
      }
      console.log(`pod gone ${took}s after deletion (grace ${GRACE_SECONDS}s)`);
      assert.deepEqual(netns.hidden, [], "namespace mounts hidden under a later mount of /run/netns");
    });
  },
);

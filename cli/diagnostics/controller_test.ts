// snapshot(): the proxy's channel and client against weft's real destination server on loopback (fed
// through its fake informers): the first answer, a refusal named with its status, and a controller that
// never answers bounded by the timeout.
import assert from "node:assert/strict";
import * as net from "node:net";
import { Fixture, pod, service, slice } from "../../control/destination/testing.ts";
import { CertStore } from "../../proxy/core/cert_store.ts";
import { controlChannel } from "../../proxy/discovery/control_client.ts";
import { GET, getRequest } from "../../proxy/discovery/requests.ts";
import { snapshot } from "./controller.ts";
import { endpointRows, endpointSet } from "./endpoints.ts";

function client(port: number) {
  return controlChannel(
    { addr: { host: "127.0.0.1", port }, name: undefined, plaintext: true },
    new CertStore(),
    { minMs: 1000, maxMs: 1000, jitter: 0 },
  );
}

Deno.test({
  name: "diagnostics snapshot: the destination server's first answer, and its refusal with the status",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const f = new Fixture();
    f.apply("namespaces", { metadata: { name: "shop" } });
    f.apply("services", service("shop", "web", [{ name: "http", port: 80 }]));
    f.apply("pods", pod("shop", "web-1", "10.244.0.5", { meshed: true }));
    f.apply("pods", pod("shop", "web-2", "10.244.0.6", { meshed: true }));
    f.apply(
      "endpointslices",
      slice("shop", "web", [{ ip: "10.244.0.5", pod: "web-1" }, { ip: "10.244.0.6", pod: "web-2" }]),
    );
    await f.start();
    const { channel, client: c } = client(f.port);
    try {
      const snap = await snapshot(c, GET, getRequest("web.shop.svc.cluster.local:80", ""), {
        settleMs: 200,
        timeoutMs: 5000,
      });
      const rows = endpointRows("web", endpointSet(snap.messages));
      assert.deepEqual(rows.map((r) => `${r.ip}:${r.port} ${r.pod}`), [
        "10.244.0.5:8080 web-1",
        "10.244.0.6:8080 web-2",
      ]);
      await assert.rejects(
        snapshot(c, GET, getRequest("nope.shop.svc.cluster.local:80", ""), {
          settleMs: 200,
          timeoutMs: 5000,
        }),
        /Destination\/Get failed: NOT_FOUND: .*nope/,
      );
    } finally {
      await channel.close();
      await f.stop();
    }
  },
});

Deno.test({
  name: "diagnostics snapshot: a controller that never answers fails after the timeout",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const sockets: net.Socket[] = [];
    const silent = net.createServer((s) => void sockets.push(s));
    const port = await new Promise<number>((r) =>
      silent.listen(0, "127.0.0.1", () => r((silent.address() as net.AddressInfo).port))
    );
    const { channel, client: c } = client(port);
    const t0 = Date.now();
    try {
      await assert.rejects(
        snapshot(c, GET, getRequest("web.shop.svc.cluster.local:80", ""), { settleMs: 200, timeoutMs: 1500 }),
        /Destination\/Get: no answer within 1500 ms/,
      );
      assert.ok(Date.now() - t0 < 10_000, "the timeout did not bound the call");
    } finally {
      await channel.close();
      for (const s of sockets) s.destroy();
      silent.close();
    }
  },
});

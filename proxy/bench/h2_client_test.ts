import assert from "node:assert/strict";
import { HpackDecoder } from "../http/h2/hpack.ts";
import { encodeHeaders, H2Connection } from "./h2_client.ts";

function decodeAll(d: HpackDecoder, block: Uint8Array): [string, string][] {
  const flat = d.decode(block);
  const out: [string, string][] = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i], flat[i + 1]]);
  return out;
}

// The RFC 7541 vectors and hostile blocks are the decoder's own tests (proxy/http/h2/hpack_test.ts).
Deno.test("HPACK: the bench client's literal encoding decodes back, long values use multi-byte lengths", () => {
  const fields: [string, string][] = [
    [":method", "POST"],
    [":scheme", "http"],
    [":path", "/weft.bench.Echo/Unary"],
    [":authority", "10.231.0.11:9200"],
    ["content-type", "application/grpc"],
    ["te", "trailers"],
    ["x-long", "v".repeat(300)],
  ];
  const d = new HpackDecoder();
  const block = encodeHeaders(fields);
  assert.deepEqual(decodeAll(d, block), fields);
  // Literals without indexing leave the peer's table alone, so one block serves every request.
  assert.deepEqual(decodeAll(d, block), fields);
});

const nghttpd = new Deno.Command("sh", { args: ["-c", "command -v nghttpd"], stdout: "piped" }).outputSync();

Deno.test({
  name: "H2Connection: gRPC-shaped calls against nghttpd get status 200, the body and grpc-status",
  ignore: !nghttpd.success,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    await Deno.mkdir(`${dir}/svc`);
    await Deno.writeFile(`${dir}/svc/Call`, new Uint8Array([0, 0, 0, 0, 3, 1, 2, 3]));
    // A free port (nghttpd cannot report the one it bound).
    const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (probe.addr as Deno.NetAddr).port;
    probe.close();
    const server = new Deno.Command("nghttpd", {
      args: ["--no-tls", "-a", "127.0.0.1", "-d", dir, "--trailer", "grpc-status: 0", String(port)],
      stdout: "null",
      stderr: "null",
    }).spawn();
    try {
      let c: H2Connection | undefined;
      for (let i = 0; i < 100 && !c; i++) {
        c = await H2Connection.connect("127.0.0.1", port).catch(() => undefined);
        if (!c) await new Promise((r) => setTimeout(r, 50));
      }
      assert.ok(c, "nghttpd did not start");
      const block = encodeHeaders([
        [":method", "POST"],
        [":scheme", "http"],
        [":path", "/svc/Call"],
        [":authority", `127.0.0.1:${port}`],
        ["content-type", "application/grpc"],
      ]);
      const call = (path?: Uint8Array) =>
        new Promise<[boolean, number, string]>((resolve) =>
          c!.request(
            path ?? block,
            new Uint8Array([0, 0, 0, 0, 0]),
            (ok, status, grpc) => resolve([ok, status, grpc]),
          )
        );
      const results = await Promise.all(Array.from({ length: 50 }, () => call()));
      for (const r of results) assert.deepEqual(r, [true, 200, "0"]);
      const missing = encodeHeaders([[":method", "POST"], [":scheme", "http"], [":path", "/nope"], [
        ":authority",
        "x",
      ]]);
      const [ok, status] = await call(missing);
      assert.equal(status, 404);
      assert.equal(ok, false);
      c!.close();
    } finally {
      server.kill();
      await server.status;
      await Deno.remove(dir, { recursive: true });
    }
  },
});

import assert from "node:assert/strict";
import { encodeHeaders, H2Connection, HpackDecoder } from "./h2_client.ts";

const hex = (s: string) => Uint8Array.from(s.replace(/\s+/g, "").match(/../g)!.map((b) => parseInt(b, 16)));

function decodeAll(d: HpackDecoder, block: Uint8Array): [string, string][] {
  const out: [string, string][] = [];
  d.decode(block, (n, v) => out.push([n, v]));
  return out;
}

Deno.test("HPACK: RFC 7541 C.4 requests with Huffman coding, decoded in sequence on one table", () => {
  const d = new HpackDecoder();
  assert.deepEqual(decodeAll(d, hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff")), [
    [":method", "GET"],
    [":scheme", "http"],
    [":path", "/"],
    [":authority", "www.example.com"],
  ]);
  assert.deepEqual(decodeAll(d, hex("8286 84be 5886 a8eb 1064 9cbf")), [
    [":method", "GET"],
    [":scheme", "http"],
    [":path", "/"],
    [":authority", "www.example.com"],
    ["cache-control", "no-cache"],
  ]);
  assert.deepEqual(decodeAll(d, hex("8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf")), [
    [":method", "GET"],
    [":scheme", "https"],
    [":path", "/index.html"],
    [":authority", "www.example.com"],
    ["custom-key", "custom-value"],
  ]);
});

Deno.test("HPACK: the client's own encoding decodes back, long values use multi-byte lengths", () => {
  const fields: [string, string][] = [
    [":method", "POST"],
    [":scheme", "http"],
    [":path", "/weft.bench.Echo/Unary"],
    [":authority", "10.231.0.11:9200"],
    ["content-type", "application/grpc"],
    ["te", "trailers"],
    ["x-long", "v".repeat(300)],
  ];
  assert.deepEqual(decodeAll(new HpackDecoder(), encodeHeaders(fields)), fields);
});

Deno.test("HPACK: bad input is an error naming the problem", () => {
  assert.throws(() => new HpackDecoder().decode(hex("be"), () => {}), /index 62 out of range/);
  assert.throws(() => new HpackDecoder().decode(hex("0003 6162"), () => {}), /truncated string/);
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

// A trivial HTTP server for cluster tests: answers with the pod's name so a test can tell which backend replied.
// Run inside the weft image: `deno run -A tests/cluster/demo/server.ts` (PORT defaults to 8080).

const port = Number(Deno.env.get("PORT") ?? "8080");
const name = Deno.env.get("POD_NAME") ?? Deno.hostname();

Deno.serve(
  { port, hostname: "0.0.0.0", onListen: () => console.log(`demo server ${name} on :${port}`) },
  (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/healthz") return new Response("ok\n");
    return new Response(`hello from ${name}\n`, { headers: { "x-pod-name": name } });
  },
);

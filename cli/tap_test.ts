import assert from "node:assert/strict";
import { tapEventJson } from "../control/tap/event_json.ts";
import { requestEvents } from "../control/tap/testing.ts";
import { UsageError } from "./context.ts";
import { parseTapArgs, tapProxyPath } from "./tap.ts";
import { formatEvent, formatLine } from "./tap_format.ts";

const ns = () => "ctx-ns";

Deno.test("weft tap flags become the tap API's request; bad ones are usage errors naming the flag", () => {
  assert.deepEqual(parseTapArgs(["deploy/web"], ns), {
    body: { namespace: "ctx-ns", resource: "deploy/web" },
    output: "text",
  });
  assert.deepEqual(
    parseTapArgs(
      [
        "deploy/web",
        "-n",
        "a",
        "--to",
        "deploy/api",
        "--to-namespace=b",
        "--path",
        "/v1",
        "--method=GET",
        "--authority",
        "api:80",
        "--max-rps",
        "5",
        "--limit=3",
        "-o",
        "wide",
      ],
      ns,
    ),
    {
      body: {
        namespace: "a",
        resource: "deploy/web",
        to: "deploy/api",
        toNamespace: "b",
        path: "/v1",
        method: "GET",
        authority: "api:80",
        maxRps: 5,
        limit: 3,
      },
      output: "wide",
    },
  );
  const bad: [string[], RegExp][] = [
    [[], /which resource\?/],
    [["deploy/a", "deploy/b"], /one resource only/],
    [["svc/web"], /resource: "svc\/web" is not a resource/],
    [["deploy/web", "--limit", "x"], /--limit: "x" is not a positive number/],
    [["deploy/web", "--limit", "2.5"], /limit: must be a whole number/],
    [["deploy/web", "-o", "yaml"], /--output: "yaml" is not text, wide or json/],
    [["deploy/web", "--path", "v1"], /path: "v1" must start with \//],
    [["deploy/web", "--bogus"], /unknown flag --bogus/],
    [
      ["cronjob/web"],
      /is not a resource; use deploy\/NAME, sts\/NAME, ds\/NAME, job\/NAME, pod\/NAME or ns\/NAME/,
    ],
    // Tap events carry no route labels: a route filter would never match, so it is refused, saying why.
    [
      ["deploy/web", "--route", "books"],
      /--route: tap cannot filter by route \(tap events carry no route labels\); use --path/,
    ],
    [["deploy/web", "--route-label=rt=books"], /--route-label: tap cannot filter by route label/],
  ];
  for (const [args, re] of bad) {
    assert.throws(
      () => parseTapArgs(args, ns),
      (e: Error) => e instanceof UsageError && re.test(e.message),
      args.join(" "),
    );
  }
  for (
    const [res, to] of [["sts/db", "ds/agent"], ["statefulset/db", "job/migrate"], [
      "daemonsets/agent",
      "sts/db",
    ]]
  ) {
    assert.deepEqual(
      parseTapArgs([res, "--to", to], ns).body,
      { namespace: "ctx-ns", resource: res, to },
      res,
    );
  }
  assert.equal(parseTapArgs(["jobs/migrate", "-n", "b"], ns).body.resource, "jobs/migrate");
  assert.equal(tapProxyPath(), "/api/v1/namespaces/weft/services/http:weft-tap:8089/proxy/apis/tap");
});

Deno.test("events print as linkerd viz tap prints them: req, rsp, end with id, proxy, src, dst, tls", () => {
  const [req, rsp, end] = requestEvents({ stream: 3, status: 503, grpcStatus: 14 }).map((e) =>
    tapEventJson("a/server-1", e)!
  );
  assert.equal(
    formatEvent(req, "text"),
    "req id=7:3 proxy=in  src=10.0.0.1:40003 dst=10.0.0.2:8080 tls=true :method=GET :authority=server.a:8080 :path=/hello",
  );
  assert.equal(
    formatEvent(rsp, "text"),
    "rsp id=7:3 proxy=in  src=10.0.0.1:40003 dst=10.0.0.2:8080 tls=true :status=503 latency=1500µs",
  );
  assert.equal(
    formatEvent(end, "text"),
    "end id=7:3 proxy=in  src=10.0.0.1:40003 dst=10.0.0.2:8080 tls=true grpc-status=Unavailable duration=300µs response-length=12B",
  );
  assert.equal(
    formatEvent(req, "wide"),
    "req id=7:3 proxy=in  src=10.0.0.1:40003 dst=10.0.0.2:8080 tls=true :method=GET :authority=server.a:8080 :path=/hello " +
      "dst_res=po/server-1 dst_ns=a client_id=client.a.serviceaccount.identity.weft.cluster.local",
  );
  // Outbound: tls is the server side's, and wide names the destination workload and its identity.
  const out = tapEventJson("a/client-1", requestEvents({ stream: 4, inbound: false })[0])!;
  assert.equal(
    formatEvent(out, "wide"),
    "req id=7:4 proxy=out src=10.0.0.1:40004 dst=10.0.0.2:8080 tls=true :method=GET :authority=server.a:8080 :path=/hello " +
      "src_res=po/client-1 src_ns=a dst_res=deploy/server server_id=server.a.serviceaccount.identity.weft.cluster.local",
  );
  assert.deepEqual(JSON.parse(formatEvent(out, "json")), out);
});

Deno.test("errors and the end of the tap go to stderr, saying why", () => {
  assert.deepEqual(formatLine({ error: { pod: "a/p", message: "tap PERMISSION_DENIED: x" } }, "text"), {
    err: "tap of a/p failed: tap PERMISSION_DENIED: x",
  });
  assert.deepEqual(formatLine({ end: { reason: "limit", requests: 3, dropped: 2 } }, "text"), {
    err: "tap limit of 3 request(s) reached; 2 event(s) dropped because output was slow",
  });
});

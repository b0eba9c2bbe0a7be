import assert from "node:assert/strict";
import { observeRequest, parseResource, parseTapRequest, TapRequestError } from "./request.ts";

Deno.test("resources: deploy/pod/ns with their aliases; bad ones name the field and what to write", () => {
  assert.deepEqual(parseResource("deploy/web", "emoji", "resource"), {
    namespace: "emoji",
    kind: "deployment",
    name: "web",
  });
  assert.deepEqual(parseResource("po/web-1", "a", "resource"), {
    namespace: "a",
    kind: "pod",
    name: "web-1",
  });
  assert.deepEqual(parseResource("ns/b", "a", "to"), { namespace: "b", kind: "namespace", name: "" });
  assert.deepEqual(parseResource("namespace", "a", "to"), { namespace: "a", kind: "namespace", name: "" });
  for (
    const [text, re] of [
      ["svc/web", /resource: "svc\/web" is not a resource; use deploy\/NAME/],
      ["deploy", /names no deployment; use deploy\/NAME/],
      ["deploy/Web", /resource name: "Web" is not a Kubernetes name/],
      ["deploy/a/b", /is not a resource/],
    ] as const
  ) {
    assert.throws(
      () => parseResource(text, "a", "resource"),
      (e: Error) => e instanceof TapRequestError && re.test(e.message),
    );
  }
});

Deno.test("tap request: defaults, filters, and each bad field named", () => {
  assert.deepEqual(parseTapRequest({ namespace: "emoji", resource: "deploy/web" }), {
    target: { namespace: "emoji", kind: "deployment", name: "web" },
    maxRps: 100,
  });
  assert.deepEqual(
    parseTapRequest({
      namespace: "a",
      resource: "ns",
      to: "deploy/api",
      toNamespace: "b",
      path: "/v1",
      method: "post",
      authority: "api.b:80",
      maxRps: 5,
      limit: 10,
    }),
    {
      target: { namespace: "a", kind: "namespace", name: "" },
      to: { namespace: "b", kind: "deployment", name: "api" },
      pathPrefix: "/v1",
      method: "POST",
      authority: "api.b:80",
      maxRps: 5,
      limit: 10,
    },
  );
  const bad: [unknown, RegExp][] = [
    [[], /body must be a JSON object/],
    [{ namespace: "a" }, /resource: required/],
    [{ resource: "deploy/a", path: "v1" }, /path: "v1" must start with \//],
    [{ resource: "deploy/a", method: "GE T" }, /method: "GE T" is not an HTTP method token/],
    [{ resource: "deploy/a", limit: 1.5 }, /limit: must be a whole number/],
    [{ resource: "deploy/a", limit: -1 }, /limit: must be a positive number/],
    [{ resource: "deploy/a", maxRps: 1e9 }, /maxRps: 1000000000 is above the ceiling/],
    [{ resource: "deploy/a", maxRps: "9" }, /maxRps: must be a positive number, got "9"/],
    [{ resource: "deploy/a", namespace: 3 }, /namespace: must be a string, got number/],
    [{ resource: "deploy/a", tls: true }, /tls: unknown field/],
  ];
  for (const [body, re] of bad) {
    assert.throws(
      () => parseTapRequest(body),
      (e: Error) => e instanceof TapRequestError && re.test(e.message),
      JSON.stringify(body),
    );
  }
});

Deno.test("observe request: every filter in one `all`, --to as the destination labels a proxy sets", () => {
  const r = parseTapRequest({
    namespace: "a",
    resource: "deploy/web",
    to: "deploy/api",
    path: "/p",
    method: "GET",
    authority: "api:80",
  });
  const o = observeRequest(r, 7);
  assert.equal(o.limit, 7);
  assert.equal(o.match?.match?.$case, "all");
  const ms = o.match!.match!.$case === "all" ? o.match!.match!.value.matches : [];
  assert.deepEqual(ms.map((m) => m.match), [
    { $case: "destinationLabel", value: { key: "namespace", value: "a" } },
    { $case: "destinationLabel", value: { key: "deployment", value: "api" } },
    {
      $case: "http",
      value: { match: { $case: "path", value: { match: { $case: "prefix", value: "/p" } } } },
    },
    {
      $case: "http",
      value: { match: { $case: "method", value: { type: { $case: "registered", value: 0 } } } },
    },
    {
      $case: "http",
      value: { match: { $case: "authority", value: { match: { $case: "exact", value: "api:80" } } } },
    },
  ]);
  const all = observeRequest(parseTapRequest({ resource: "deploy/web" }), 1);
  assert.deepEqual(all.match, { match: { $case: "all", value: { matches: [] } } });
});

Deno.test("resources: StatefulSets, DaemonSets and Jobs with kubectl's names; --to as Destination labels them", () => {
  for (
    const [text, kind] of [
      ["sts/db", "statefulset"],
      ["statefulset/db", "statefulset"],
      ["statefulsets/db", "statefulset"],
      ["ds/db", "daemonset"],
      ["daemonset/db", "daemonset"],
      ["daemonsets/db", "daemonset"],
      ["job/db", "job"],
      ["jobs/db", "job"],
    ] as const
  ) {
    assert.deepEqual(parseResource(text, "a", "resource"), { namespace: "a", kind, name: "db" }, text);
  }
  assert.throws(
    () => parseResource("cronjob/db", "a", "resource"),
    /"cronjob\/db" is not a resource; use deploy\/NAME, sts\/NAME, ds\/NAME, job\/NAME, pod\/NAME or ns\/NAME/,
  );
  assert.throws(() => parseResource("sts", "a", "resource"), /names no statefulset; use sts\/NAME/);
  const label = (to: string) => {
    const o = observeRequest(parseTapRequest({ namespace: "a", resource: "deploy/web", to }), 1);
    const ms = o.match!.match!.$case === "all" ? o.match!.match!.value.matches : [];
    return ms.map((m) =>
      m.match?.$case === "destinationLabel" ? [m.match.value.key, m.match.value.value] : []
    );
  };
  assert.deepEqual(label("sts/db"), [["namespace", "a"], ["statefulset", "db"]]);
  assert.deepEqual(label("ds/agent"), [["namespace", "a"], ["daemonset", "agent"]]);
  // Linkerd's label for a Job's pods (`job` is Prometheus' own target label).
  assert.deepEqual(label("job/migrate"), [["namespace", "a"], ["k8s_job", "migrate"]]);
});

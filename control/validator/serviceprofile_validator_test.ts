import assert from "node:assert/strict";
import { reviewResponse } from "./admission.ts";
import { serviceProfileAdmissionHandler, serviceProfileProblems } from "./serviceprofile_validator.ts";

const OPTS = { clusterDomain: "cluster.local" };

/** A profile using every field, as Linkerd's docs write them. */
function full(): Record<string, unknown> {
  return {
    apiVersion: "linkerd.io/v1alpha2",
    kind: "ServiceProfile",
    metadata: { name: "books.shop.svc.cluster.local", namespace: "shop" },
    spec: {
      routes: [
        {
          name: "GET /books/{id}",
          condition: { method: "GET", pathRegex: "/books/[^/]*" },
          responseClasses: [{ condition: { status: { min: 500, max: 599 } }, isFailure: true }],
          isRetryable: true,
          timeout: "300ms",
        },
        {
          name: "POST /books",
          condition: {
            all: [{ method: "POST" }, { not: { pathRegex: "/books/admin.*" } }, {
              any: [{ pathRegex: "/books" }],
            }],
          },
          responseClasses: [{
            condition: { any: [{ status: { min: 502 } }, { not: { status: { max: 499 } } }] },
            isFailure: true,
          }],
          timeout: "1m30s",
        },
      ],
      retryBudget: { retryRatio: 0.2, minRetriesPerSecond: 10, ttl: "10s" },
      dstOverrides: [
        { authority: "books.shop.svc.cluster.local:8080", weight: "900m" },
        { authority: "books-v2.shop.svc.cluster.local:8080", weight: 100 },
      ],
      opaquePorts: ["3306", 6379, "8000-8080"],
    },
  };
}

type Edit = (p: ReturnType<typeof full>) => void;
// deno-lint-ignore no-explicit-any
const spec = (p: Record<string, unknown>) => p.spec as Record<string, any>;

const valid: [string, Edit][] = [
  ["every field set", () => {}],
  ["an external FQDN", (p) => (p.metadata as { name: string }).name = "api.example.com"],
  // Linkerd asks only for a DNS-1123 subdomain as the name.
  ["a name without the namespace", (p) => (p.metadata as { name: string }).name = "books.svc.cluster.local"],
  ["a bare service name", (p) => (p.metadata as { name: string }).name = "books"],
  ["no routes (only a traffic split)", (p) => delete spec(p).routes],
  ["Linkerd's opaquePorts map", (p) => spec(p).opaquePorts = { "3306": true }],
  [
    "status 0 meaning unset",
    (p) => spec(p).routes[0].responseClasses[0].condition = { status: { min: 0, max: 503 } },
  ],
  ["retryRatio 0", (p) => spec(p).retryBudget.retryRatio = 0],
  // Rust regex syntax (what Linkerd's proxy evaluates), which JavaScript's RegExp refuses.
  ["a case-insensitive (?i) pathRegex", (p) => spec(p).routes[0].condition.pathRegex = "(?i)/books/[^/]*"],
  ["an escaped hyphen in pathRegex", (p) => spec(p).routes[0].condition.pathRegex = "/books/\\d+\\-v\\d"],
  [
    "named groups, \\A and POSIX classes",
    (p) => spec(p).routes[0].condition.pathRegex = "\\A/(?P<b>[[:alpha:]]+)",
  ],
  ["timeout with fractions", (p) => spec(p).routes[0].timeout = "1.5s"],
];
for (const [title, edit] of valid) {
  Deno.test(`ServiceProfile accepted: ${title}`, () => {
    const p = full();
    edit(p);
    assert.deepEqual(serviceProfileProblems(p, OPTS).problems, []);
  });
}

// Each case: the edit, and the exact problems.
const invalid: [string, Edit, string[]][] = [
  [
    "look-around in pathRegex (Rust regex has none)",
    (p) => spec(p).routes[0].condition.pathRegex = "/books/(?!admin)",
    [
      'spec.routes[0].condition.pathRegex: invalid regular expression "/books/(?!admin)": look-around (look-ahead and look-behind) is not supported (at character 8)',
    ],
  ],
  [
    "a backreference in pathRegex",
    (p) => spec(p).routes[0].condition.pathRegex = "/(a)/\\1",
    [
      'spec.routes[0].condition.pathRegex: invalid regular expression "/(a)/\\\\1": backreferences (and octal escapes) are not supported (at character 6)',
    ],
  ],
  [
    "invalid path regex",
    (p) => spec(p).routes.push({ name: "bad", condition: { pathRegex: "(" } }),
    ['spec.routes[2].condition.pathRegex: invalid regular expression "(": unclosed group (at character 1)'],
  ],
  [
    "regex nested in all/not",
    (p) => spec(p).routes[1].condition.all[1].not.pathRegex = "[a-",
    ['spec.routes[1].condition.all[1].not.pathRegex: invalid regular expression "[a-": unclosed character class (at character 1)'],
  ],
  [
    "unknown field in a route",
    (p) => spec(p).routes[0].retries = 3,
    ["spec.routes[0].retries: unknown field; want one of name, condition, responseClasses, isRetryable, timeout"],
  ],
  [
    "unknown field in a request match",
    (p) => spec(p).routes[0].condition.path = "/books",
    ["spec.routes[0].condition.path: unknown field; want one of all, any, not, pathRegex, method"],
  ],
  [
    "unknown top-level and spec fields",
    (p) => {
      p.status = {};
      spec(p).retries = {};
    },
    [
      "status: unknown field; want one of apiVersion, kind, metadata, spec",
      "spec.retries: unknown field; want one of routes, retryBudget, dstOverrides, opaquePorts",
    ],
  ],
  [
    "empty request match",
    (p) => spec(p).routes[0].condition = {},
    ["spec.routes[0].condition: a request match must set at least one of all, any, not, pathRegex, method"],
  ],
  [
    "route without name and condition",
    (p) => spec(p).routes[0] = { timeout: "1s" },
    ["spec.routes[0].name: required", "spec.routes[0].condition: required"],
  ],
  [
    "method that is not a token",
    (p) => spec(p).routes[0].condition.method = "GET /",
    ['spec.routes[0].condition.method: string "GET /" is not an HTTP method such as GET or POST'],
  ],
  [
    "bad timeout",
    (p) => spec(p).routes[0].timeout = "5 seconds",
    [
      'spec.routes[0].timeout: "5 seconds" is not a duration (unknown unit " seconds"); want e.g. 300ms, 1.5s or 1h30m',
    ],
  ],
  ["zero timeout", (p) => spec(p).routes[0].timeout = "0s", [
    'spec.routes[0].timeout: "0s" must be greater than 0',
  ]],
  [
    "negative timeout",
    (p) => spec(p).routes[0].timeout = "-1s",
    ['spec.routes[0].timeout: "-1s" is not a duration (negative); want e.g. 300ms, 1.5s or 1h30m'],
  ],
  [
    "isRetryable as a string",
    (p) => spec(p).routes[0].isRetryable = "yes",
    ['spec.routes[0].isRetryable: must be true or false, got string "yes"'],
  ],
  [
    "status out of range",
    (p) => spec(p).routes[0].responseClasses[0].condition.status = { min: 600, max: 99 },
    [
      "spec.routes[0].responseClasses[0].condition.status.min: number 600 is not an HTTP status code in 100..599",
      "spec.routes[0].responseClasses[0].condition.status.max: number 99 is not an HTTP status code in 100..599",
    ],
  ],
  [
    "status min above max",
    (p) => spec(p).routes[0].responseClasses[0].condition.status = { min: 503, max: 500 },
    ["spec.routes[0].responseClasses[0].condition.status: min 503 is greater than max 500"],
  ],
  [
    "empty status",
    (p) => spec(p).routes[0].responseClasses[0].condition.status = {},
    ["spec.routes[0].responseClasses[0].condition.status: set min, max or both"],
  ],
  [
    "response class without condition",
    (p) => spec(p).routes[0].responseClasses[0] = { isFailure: true },
    ["spec.routes[0].responseClasses[0].condition: required"],
  ],
  [
    "response match with a request field",
    (p) => spec(p).routes[1].responseClasses[0].condition.any[0] = { method: "GET" },
    [
      "spec.routes[1].responseClasses[0].condition.any[0].method: unknown field; want one of all, any, not, status",
      "spec.routes[1].responseClasses[0].condition.any[0]: a response match must set at least one of all, any, not, status",
    ],
  ],
  [
    "negative retryRatio",
    (p) => spec(p).retryBudget.retryRatio = -0.1,
    ["spec.retryBudget.retryRatio: number -0.1 is not a number >= 0"],
  ],
  [
    "fractional minRetriesPerSecond",
    (p) => spec(p).retryBudget.minRetriesPerSecond = 1.5,
    ["spec.retryBudget.minRetriesPerSecond: number 1.5 is not an integer in 0..4294967295"],
  ],
  [
    "retry budget without ttl, bad ttl type",
    (p) => spec(p).retryBudget = { retryRatio: 0.2, minRetriesPerSecond: -1 },
    [
      "spec.retryBudget.ttl: required",
      "spec.retryBudget.minRetriesPerSecond: number -1 is not an integer in 0..4294967295",
    ],
  ],
  [
    "ttl not a duration",
    (p) => spec(p).retryBudget.ttl = 10,
    ['spec.retryBudget.ttl: must be a duration string such as "500ms", got number 10'],
  ],
  [
    "dstOverrides: bad weight and authority",
    (p) =>
      spec(p).dstOverrides = [{ authority: "books v2:80", weight: "lots" }, {
        authority: "b:99999",
        weight: -1,
      }],
    [
      'spec.dstOverrides[0].authority: "books v2:80" is not <host>[:<port>], e.g. web-v2.shop.svc.cluster.local:8080',
      'spec.dstOverrides[0].weight: string "lots" is not a weight >= 0 (a number or a quantity such as "500m")',
      'spec.dstOverrides[1].authority: "b:99999" is not <host>[:<port>], e.g. web-v2.shop.svc.cluster.local:8080',
      'spec.dstOverrides[1].weight: number -1 is not a weight >= 0 (a number or a quantity such as "500m")',
    ],
  ],
  [
    "dstOverrides all zero",
    (p) => spec(p).dstOverrides = [{ authority: "a.shop.svc.cluster.local:80", weight: 0 }],
    ["spec.dstOverrides: every weight is 0, so no request could be routed"],
  ],
  [
    "opaquePorts out of range",
    (p) => spec(p).opaquePorts = ["0", "8080-80", "http"],
    [
      'spec.opaquePorts[0]: string "0" is not a port or a range such as 8000-8080',
      'spec.opaquePorts[1]: string "8080-80" is not a port or a range such as 8000-8080',
      'spec.opaquePorts[2]: string "http" is not a port or a range such as 8000-8080',
    ],
  ],
  [
    "upper-case name",
    (p) => (p.metadata as { name: string }).name = "Books.shop.svc.cluster.local",
    [
      `metadata.name: "Books.shop.svc.cluster.local" is not a DNS subdomain (lowercase labels of letters, digits and '-', up to 253 characters)`,
    ],
  ],
  ["routes not a list", (p) => spec(p).routes = { name: "x" }, [
    "spec.routes: must be a list, got an object",
  ]],
  ["no spec", (p) => delete p.spec, ["spec: required"]],
  [
    "nesting too deep",
    (p) => {
      let m: Record<string, unknown> = { method: "GET" };
      for (let i = 0; i < 40; i++) m = { not: m };
      spec(p).routes[0].condition = m;
    },
    [`spec.routes[0].condition${".not".repeat(33)}: matches are nested deeper than 32 levels`],
  ],
];
for (const [title, edit, want] of invalid) {
  Deno.test(`ServiceProfile refused: ${title}`, () => {
    const p = full();
    edit(p);
    assert.deepEqual(serviceProfileProblems(p, OPTS).problems, want);
  });
}

Deno.test("ServiceProfile warnings: lower-case methods and duplicate route names are admitted with a warning", () => {
  const p = full();
  spec(p).routes[1].name = "GET /books/{id}";
  spec(p).routes[0].condition.method = "get";
  const r = serviceProfileProblems(p, OPTS);
  assert.deepEqual(r.problems, []);
  assert.deepEqual(r.warnings, [
    'spec.routes[0].condition.method: "get" matches only requests whose method is exactly "get" (methods are case-sensitive); did you mean "GET"?',
    'spec.routes[1].name: "GET /books/{id}" is also the name of spec.routes[0]',
  ]);
});

Deno.test("the ServiceProfile admission handler: message of the refusal, other clusters' domain, DELETE", async () => {
  const handler = serviceProfileAdmissionHandler({ clusterDomain: "example.internal" });
  const p = full();
  (p.metadata as { name: string }).name = "books.shop.svc.example.internal";
  spec(p).routes[0].condition.pathRegex = "(";
  const req = {
    uid: "u1",
    kind: { group: "linkerd.io", version: "v1alpha2", kind: "ServiceProfile" },
    namespace: "shop",
    name: "books.shop.svc.example.internal",
    operation: "CREATE",
    object: p,
  };
  const review = reviewResponse(req, await handler(req));
  assert.equal(review.response?.allowed, false);
  assert.equal(
    review.response?.status?.message,
    'ServiceProfile shop/books.shop.svc.example.internal is invalid: spec.routes[0].condition.pathRegex: invalid regular expression "(": unclosed group (at character 1)',
  );
  assert.deepEqual((await handler({ ...req, operation: "DELETE", object: undefined })).problems, []);
  const other = await handler({
    ...req,
    kind: { group: "policy.linkerd.io", version: "v1beta3", kind: "Server" },
  });
  assert.deepEqual(other.problems, ["kind: policy.linkerd.io/Server is not a linkerd.io ServiceProfile"]);
});

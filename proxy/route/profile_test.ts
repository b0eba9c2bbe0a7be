import assert from "node:assert/strict";
import type { DestinationProfile, RequestMatch, Route } from "../../proto/gen_messages/destination.ts";
import { FakeClock } from "../../proto/support/fake_clock.ts";
import { seededRng } from "../core/rng.ts";
import { HeaderList } from "../http/message.ts";
import { msDuration } from "../core/duration.ts";
import { anchorProfileRegex, compileProfile } from "./profile.ts";
import { request } from "./testing.ts";

const path = (regex: string): RequestMatch => ({ match: { $case: "path", value: { regex } } });
const method = (m: number): RequestMatch => ({
  match: { $case: "method", value: { type: { $case: "registered", value: m } } },
});
const all = (...ms: RequestMatch[]): RequestMatch => ({ match: { $case: "all", value: { matches: ms } } });
const any = (...ms: RequestMatch[]): RequestMatch => ({ match: { $case: "any", value: { matches: ms } } });
const not = (m: RequestMatch): RequestMatch => ({ match: { $case: "not", value: m } });

function route(name: string, condition: RequestMatch | undefined, extra: Partial<Route> = {}): Route {
  return { condition, responseClasses: [], metricsLabels: { route: name }, isRetryable: false, ...extra };
}

function profile(routes: Route[], extra: Partial<DestinationProfile> = {}): DestinationProfile {
  return {
    routes,
    retryBudget: { retryRatio: 0.2, minRetriesPerSecond: 10, ttl: msDuration(10_000) },
    dstOverrides: [],
    opaqueProtocol: false,
    fullyQualifiedName: "books.ns.svc.cluster.local",
    ...extra,
  };
}

Deno.test("profile: pathRegex anchored as Linkerd does; condition trees; first matching route wins", () => {
  assert.equal(anchorProfileRegex(" /books/\\d+ "), "^/books/\\d+$");
  assert.equal(anchorProfileRegex("^/a$"), "^/a$");
  assert.equal(anchorProfileRegex("^/a"), "^/a$");
  const p = compileProfile(
    profile([
      route("GET /books/{id}", all(method(0), path("/books/\\d+"))),
      route("not-get /books", all(not(method(0)), path("/books.*"))),
      route("any", any(path("/authors"), path("/publishers/.*"))),
      route("empty-any", any()),
      route("dropped", undefined),
      route("bad-regex", path("(")),
    ]),
    new FakeClock(),
  );
  const find = (m: string, p2: string) => p.route(request(m, p2))?.name ?? "none";
  assert.equal(find("GET", "/books/12"), "GET /books/{id}");
  assert.equal(find("GET", "/books/12?x=1"), "GET /books/{id}", "the query is not part of the path");
  assert.equal(find("GET", "/x/books/12"), "none", "anchored at the start");
  assert.equal(find("GET", "/books/12/reviews"), "none", "anchored at the end");
  assert.equal(find("POST", "/books/12"), "not-get /books");
  assert.equal(find("GET", "/authors"), "any");
  assert.equal(find("GET", "/publishers/x"), "any");
  assert.deepEqual(p.routes.map((r) => r.name), ["GET /books/{id}", "not-get /books", "any", "empty-any"]);
  assert.equal(p.warnings.length, 3, p.warnings.join("\n"));
  assert.ok(p.warnings.some((w) => /bad-regex.*invalid pathRegex/.test(w)));
  assert.equal(p.interesting, true);
});

Deno.test("profile: pathRegex is Rust regex syntax ((?i), \\-, \\pL), invalid Rust patterns are dropped", () => {
  const p = compileProfile(
    profile([
      route("books any case", path("(?i)/books/\\d+")),
      route("dashed", path("/a\\-b/\\pL+")),
      route("lookahead", path("/c(?=d)")),
    ]),
    new FakeClock(),
  );
  const find = (p2: string) => p.route(request("GET", p2))?.name ?? "none";
  assert.equal(find("/BOOKS/7"), "books any case");
  assert.equal(find("/a-b/été"), "dashed");
  assert.equal(find("/a-b/1"), "none");
  assert.deepEqual(p.routes.map((r) => r.name), ["books any case", "dashed"]);
  assert.ok(p.warnings.some((w) => /lookahead.*look-around/.test(w)), p.warnings.join("\n"));
});

Deno.test("profile: response classes, timeout, retryable routes under the shared budget", () => {
  const clock = new FakeClock();
  const p = compileProfile(
    profile([
      route("r", path("/.*"), {
        responseClasses: [
          { condition: { match: { $case: "status", value: { min: 500, max: 502 } } }, isFailure: true },
          { condition: { match: { $case: "status", value: { min: 503, max: 503 } } }, isFailure: false },
          { condition: undefined, isFailure: true },
        ],
        isRetryable: true,
        timeout: msDuration(250),
      }),
      route("plain", path("/plain")),
    ]),
    clock,
  );
  const r = p.routes[0];
  const h = new HeaderList();
  assert.equal(r.classifier!(501, h), true);
  assert.equal(r.classifier!(503, h), false);
  assert.equal(r.classifier!(504, h), undefined, "no class: the default classification decides");
  assert.deepEqual(r.plan.timeouts, { requestMs: 250 });
  assert.equal(r.plan.retry!.budget, p.budget);
  assert.equal(r.plan.retry!.maxRetries, Infinity, "profile retries are bounded by the budget");
  assert.deepEqual(p.budget!.config, { ttlMs: 10_000, minRetriesPerSecond: 10, retryRatio: 0.2 });
  assert.equal(p.routes[1].plan.retry, undefined);
  assert.equal(p.routes[1].classifier, undefined);

  const noBudget = compileProfile(
    profile([route("r", path("/"), { isRetryable: true })], {
      retryBudget: { retryRatio: 0.2, minRetriesPerSecond: 10, ttl: msDuration(120_000) },
    }),
    clock,
  );
  assert.equal(noBudget.routes[0].plan.retry, undefined);
  assert.ok(noBudget.warnings.some((w) => /ttl/.test(w)), noBudget.warnings.join("\n"));
});

Deno.test("profile: dst_overrides split traffic by weight (decimillis), weight 0 dropped", () => {
  const p = compileProfile(
    profile([], {
      dstOverrides: [
        { authority: "books-v1.ns.svc.cluster.local:8080", weight: 7_500 },
        { authority: "books-v2.ns.svc.cluster.local:8080", weight: 2_500 },
        { authority: "books-v3.ns.svc.cluster.local:8080", weight: 0 },
      ],
    }),
    new FakeClock(),
  );
  assert.equal(p.interesting, true);
  assert.equal(p.targets!.backends.length, 2);
  const rng = seededRng(99);
  let v2 = 0;
  for (let i = 0; i < 10_000; i++) if (p.chooseTarget(rng)!.authority.startsWith("books-v2")) v2++;
  assert.ok(Math.abs(v2 - 2_500) < 150, `v2 got ${v2} of 10000`);
  assert.equal(compileProfile(profile([]), new FakeClock()).interesting, false);
});

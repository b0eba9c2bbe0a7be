import assert from "node:assert/strict";
import {
  evaluateComponent,
  IDENTITY_ISSUER_METRIC,
  type NamedCert,
  parseRotationMetrics,
  parseSample,
  type RotationState,
} from "./rotation_state.ts";
import { rotationResults } from "./rotation.ts";

const DAY = 86_400_000;
const now = Date.UTC(2026, 11, 4);
const fp = (c: string) => c.repeat(64);
const OLD: NamedCert = {
  fingerprint: fp("a"),
  subject: "root.weft.cluster.local",
  notAfter: new Date(now + 20 * DAY),
};
const NEW: NamedCert = { fingerprint: fp("b"), subject: "root-2", notAfter: new Date(now + 3650 * DAY) };
const ISS1: NamedCert = {
  fingerprint: fp("1"),
  subject: "identity.weft.cluster.local",
  notAfter: new Date(now + 300 * DAY),
};
const ISS2: NamedCert = { fingerprint: fp("2"), subject: "identity-2", notAfter: new Date(now + 3 * DAY) };

function proxyMetrics(anchors: NamedCert[], issuer?: NamedCert, extra = ""): string {
  return [
    "# HELP weft_identity_trust_anchor_expiration_timestamp_seconds x",
    "# TYPE weft_identity_trust_anchor_expiration_timestamp_seconds gauge",
    ...anchors.map((a) =>
      `weft_identity_trust_anchor_expiration_timestamp_seconds{fingerprint_sha256="${a.fingerprint}",subject="${a.subject}"} ${
        a.notAfter!.getTime() / 1000
      }`
    ),
    ...(issuer
      ? [
        `weft_identity_leaf_issuer_info{fingerprint_sha256="${issuer.fingerprint}",subject="${issuer.subject}"} 1`,
      ]
      : []),
    `identity_cert_expiration_timestamp_seconds ${(now + DAY) / 1000}`,
    `request_total{direction="inbound",target_addr="10.0.0.1:80"} 12`,
    extra,
  ].join("\n");
}

Deno.test("Prometheus samples: labels with escapes, values, comments and junk", () => {
  assert.deepEqual(parseSample(`m{a="x",b="say \\"hi\\"",} 1.5e3`), {
    name: "m",
    labels: { a: "x", b: 'say "hi"' },
    value: 1500,
  });
  assert.deepEqual(parseSample("plain 7"), { name: "plain", labels: {}, value: 7 });
  assert.equal(parseSample("# TYPE m gauge"), undefined);
  assert.equal(parseSample(`m{a=unquoted} 1`), undefined);
});

Deno.test("a proxy's rotation series are read; other series are ignored", () => {
  const m = parseRotationMetrics(proxyMetrics([OLD, NEW], ISS1));
  assert.deepEqual(m.anchors?.map((a) => [a.fingerprint, a.subject, a.notAfter?.getTime()]), [
    [OLD.fingerprint, OLD.subject, OLD.notAfter!.getTime()],
    [NEW.fingerprint, NEW.subject, NEW.notAfter!.getTime()],
  ]);
  assert.deepEqual(m.issuer, { fingerprint: ISS1.fingerprint, subject: ISS1.subject });
  assert.equal(m.certExpiry?.getTime(), now + DAY);
  assert.deepEqual(m.problems, []);
  const two = parseRotationMetrics(
    proxyMetrics(
      [OLD],
      ISS1,
      `weft_identity_leaf_issuer_info{fingerprint_sha256="${ISS2.fingerprint}",subject="x"} 1`,
    ),
  );
  assert.match(two.problems[0], /reports 2 issuers/);
  // Identity names its issuer with another series.
  const id = parseRotationMetrics(
    `${IDENTITY_ISSUER_METRIC}{fingerprint_sha256="${ISS2.fingerprint}",subject="identity-2"} 1`,
    IDENTITY_ISSUER_METRIC,
  );
  assert.equal(id.issuer?.fingerprint, ISS2.fingerprint);
});

Deno.test("a pod is current, behind (anchors or issuer) or unknown (no metrics)", () => {
  const pod = { namespace: "demo", name: "web-1", kind: "proxy" as const };
  const want = { anchors: [OLD, NEW], issuer: ISS1 };
  assert.equal(
    evaluateComponent(pod, parseRotationMetrics(proxyMetrics([NEW, OLD], ISS1)), want).status,
    "current",
  );
  const missing = evaluateComponent(pod, parseRotationMetrics(proxyMetrics([OLD], ISS1)), want);
  assert.equal(missing.status, "behind");
  assert.match(missing.reasons.join(), /does not trust anchor bbbbbbbbbbbb of ca-bundle\.crt yet/);
  const extra = evaluateComponent(pod, parseRotationMetrics(proxyMetrics([OLD, NEW], ISS1)), {
    anchors: [NEW],
    issuer: ISS1,
  });
  assert.equal(extra.status, "behind");
  assert.match(extra.reasons.join(), /still trusts anchor aaaaaaaaaaaa, no longer in ca-bundle\.crt/);
  const oldLeaf = evaluateComponent(pod, parseRotationMetrics(proxyMetrics([OLD, NEW], ISS1)), {
    anchors: [OLD, NEW],
    issuer: ISS2,
  });
  assert.equal(oldLeaf.status, "behind");
  assert.match(oldLeaf.reasons.join(), /leaf from issuer 111111111111, not the current 222222222222/);
  const old = evaluateComponent(pod, parseRotationMetrics("request_total 1\n"), want);
  assert.equal(old.status, "unknown");
  assert.match(old.reasons.join(), /no weft_identity_trust_anchor_expiration_timestamp_seconds/);
  const down = evaluateComponent(pod, { error: "admin /metrics on 4191: HTTP 503" }, want);
  assert.deepEqual([down.status, down.reasons], ["unknown", ["admin /metrics on 4191: HTTP 503"]]);
});

function state(over: Partial<RotationState> = {}): RotationState {
  return {
    now,
    anchors: [NEW],
    publishedIssuers: [ISS1],
    secretIssuer: ISS1,
    problems: [],
    pods: [
      evaluateComponent(
        { namespace: "demo", name: "web-1", kind: "proxy" },
        parseRotationMetrics(proxyMetrics([NEW], ISS1)),
        { anchors: [NEW], issuer: ISS1 },
      ),
    ],
    ...over,
  };
}

Deno.test("check lines: expiry under each threshold fails, behind pods warn", () => {
  const t = { anchorMs: 30 * DAY, issuerMs: 7 * DAY };
  const good = rotationResults(state(), t);
  assert.deepEqual(good.map((r) => [r.name, r.outcome]), [
    ["trust anchors", "ok"],
    ["issuer", "ok"],
    ["pod demo/web-1", "ok"],
    ["summary", "ok"],
  ]);
  assert.match(
    good[2].detail,
    /^trusts bbbbbbbbbbbb "root-2"; leaf from 111111111111 "identity.weft.cluster.local"$/,
  );

  // The old anchor has 20 days left (< 30): fail, naming the flag.
  const anchors = rotationResults(state({ anchors: [OLD, NEW] }), t);
  assert.equal(anchors[0].outcome, "fail");
  assert.match(anchors[0].detail, /1 within --anchor-threshold=720h, rotate/);
  assert.equal(
    rotationResults(state({ anchors: [OLD, NEW] }), { ...t, anchorMs: 10 * DAY })[0].outcome,
    "ok",
  );

  // An issuer with 3 days left (< 7) fails; identity not using the Secret's issuer fails.
  const issuer = rotationResults(state({ publishedIssuers: [ISS2, ISS1], secretIssuer: ISS2 }), t);
  assert.equal(issuer[1].outcome, "fail");
  assert.match(issuer[1].detail, /expires within --issuer-threshold=168h/);
  assert.match(issuer[1].detail, /also live: 111111111111/);
  const stale = rotationResults(
    state({ problems: ["identity signs with issuer 111111111111, not the Secret's"] }),
    t,
  );
  assert.equal(stale[1].outcome, "fail");

  // A behind pod is a warning with the reason and what it has.
  const behind = rotationResults(
    state({
      pods: [
        evaluateComponent(
          { namespace: "demo", name: "web-2", kind: "proxy" },
          parseRotationMetrics(proxyMetrics([OLD], ISS1)),
          { anchors: [NEW], issuer: ISS1 },
        ),
      ],
    }),
    t,
  );
  assert.equal(behind[2].outcome, "warn");
  assert.match(behind[2].detail, /^BEHIND: does not trust anchor bbbbbbbbbbbb.*\(trusts aaaaaaaaaaaa/);
  assert.deepEqual([behind[3].outcome, behind[3].detail], ["warn", "1 of 1 behind or unknown: demo/web-2"]);
});

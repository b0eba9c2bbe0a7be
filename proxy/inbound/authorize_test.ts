import assert from "node:assert/strict";
import type { Server } from "../../proto/gen_messages/inbound.ts";
import { toIpAddress } from "../../proto/ip.ts";
import { authorize, compileServer, defaultPolicy, PolicyError } from "./authorize.ts";

const CLUSTER = [{ ip: "10.0.0.0", prefix: 8 }];
const A = "a.ns.serviceaccount.identity.linkerd.cluster.local";
const tls = (clientId?: string) => ({ clientId });

Deno.test("inbound authz: default policies", () => {
  const unauth = defaultPolicy("all-unauthenticated", CLUSTER, false);
  assert.equal(authorize(unauth, { clientIp: "192.0.2.1", tls: undefined }).allow, true);
  const authd = defaultPolicy("all-authenticated", CLUSTER, false);
  assert.equal(authorize(authd, { clientIp: "10.1.1.1", tls: undefined }).allow, false);
  assert.equal(authorize(authd, { clientIp: "10.1.1.1", tls: tls() }).allow, false, "TLS without identity");
  assert.equal(authorize(authd, { clientIp: "10.1.1.1", tls: tls(A) }).allow, true);
  const cluster = defaultPolicy("cluster-unauthenticated", CLUSTER, false);
  assert.equal(authorize(cluster, { clientIp: "10.9.9.9", tls: undefined }).allow, true);
  assert.equal(authorize(cluster, { clientIp: "192.168.1.1", tls: undefined }).allow, false);
  const deny = defaultPolicy("deny", CLUSTER, false);
  const d = authorize(deny, { clientIp: "10.1.1.1", tls: tls(A) });
  assert.equal(d.allow, false);
  assert.match((d as { reason: string }).reason, /server deny/);
  assert.equal(
    authorize(deny, { clientIp: "127.0.0.1", tls: undefined }).allow,
    true,
    "localhost always allowed",
  );
  const audit = authorize(defaultPolicy("audit", CLUSTER, false), { clientIp: "192.0.2.1", tls: undefined });
  assert.deepEqual(audit, { allow: true, authzName: "audit", authzKind: "default", audited: true });
  assert.equal(defaultPolicy("deny", CLUSTER, true).protocol, "opaque");
});

function server(authz: Server["authorizations"], labels = { name: "web-http", kind: "server" }): Server {
  return {
    protocol: { kind: { $case: "opaque", value: {} } },
    serverIps: [],
    authorizations: authz,
    labels,
  };
}

Deno.test("inbound authz: Server with identity and suffix rules, networks with holes", () => {
  const p = compileServer(server([{
    networks: [{
      net: { ip: toIpAddress("10.0.0.0"), prefixLen: 8 },
      except: [{ ip: toIpAddress("10.6.0.0"), prefixLen: 16 }],
    }],
    authentication: {
      permit: {
        $case: "meshTLS",
        value: {
          clients: {
            $case: "identities",
            value: {
              identities: [{ name: A }],
              suffixes: [{ parts: ["other", "serviceaccount", "identity", "linkerd", "cluster", "local"] }],
            },
          },
        },
      },
    },
    labels: {},
    metadata: {
      kind: {
        $case: "resource",
        value: {
          group: "policy.linkerd.io",
          kind: "MeshTLSAuthentication",
          name: "a-only",
          namespace: "ns",
          section: "",
          port: 0,
        },
      },
    },
  }]));
  assert.equal(p.serverName, "web-http");
  assert.equal(p.protocol, "opaque");
  assert.deepEqual(authorize(p, { clientIp: "10.1.2.3", tls: tls(A) }), {
    allow: true,
    authzName: "a-only",
    authzKind: "meshtlsauthentication",
    audited: false,
  });
  assert.equal(
    authorize(p, { clientIp: "10.1.2.3", tls: tls("x.other.serviceaccount.identity.linkerd.cluster.local") })
      .allow,
    true,
  );
  assert.equal(
    authorize(p, { clientIp: "10.1.2.3", tls: tls("b.ns.serviceaccount.identity.linkerd.cluster.local") })
      .allow,
    false,
  );
  assert.equal(authorize(p, { clientIp: "10.6.2.3", tls: tls(A) }).allow, false, "excepted network");
  assert.equal(authorize(p, { clientIp: "10.1.2.3", tls: undefined }).allow, false);
});

Deno.test("inbound authz: invalid Server messages are refused with a reason", () => {
  assert.throws(
    () => compileServer({ ...server([]), protocol: undefined }),
    (e: Error) => e instanceof PolicyError && /no protocol/.test(e.message),
  );
  assert.throws(() => compileServer(server([], { name: "", kind: "" })), /no name/);
  assert.throws(
    () =>
      compileServer(server([{ networks: [], authentication: undefined, labels: {}, metadata: undefined }])),
    /no networks/,
  );
  assert.throws(
    () =>
      compileServer({
        ...server([]),
        protocol: {
          kind: {
            $case: "detect",
            value: { timeout: undefined, httpRoutes: [], httpLocalRateLimit: undefined },
          },
        },
      }),
    /no timeout/,
  );
});

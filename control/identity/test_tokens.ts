/**
 * Test helpers: JWTs shaped like Kubernetes projected ServiceAccount tokens. The signature is
 * random bytes: only the TokenReview (faked in tests) could tell, which is the point.
 */
import { IDENTITY_TOKEN_AUDIENCE } from "../../proto/identity_name.ts";

function b64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");
}

/** A JWT with these header fields (RS256 by default) and claims, and a random signature. */
export function fakeJwt(claims: Record<string, unknown>, header: Record<string, unknown> = {}): string {
  const enc = new TextEncoder();
  const h = b64url(enc.encode(JSON.stringify({ alg: "RS256", kid: "test", ...header })));
  const p = b64url(enc.encode(JSON.stringify(claims)));
  return `${h}.${p}.${b64url(crypto.getRandomValues(new Uint8Array(64)))}`;
}

/**
 * A projected token of `namespace/serviceAccount` for the identity audience, valid for a day
 * from `now` (override any claim with `extra`; `undefined` removes it).
 */
export function serviceAccountJwt(
  namespace: string,
  serviceAccount: string,
  extra: Record<string, unknown> = {},
  now = Date.now(),
): string {
  const iat = Math.floor(now / 1000);
  const claims: Record<string, unknown> = {
    aud: [IDENTITY_TOKEN_AUDIENCE],
    exp: iat + 86_400,
    iat,
    nbf: iat,
    iss: "https://kubernetes.default.svc.cluster.local",
    sub: `system:serviceaccount:${namespace}:${serviceAccount}`,
    "kubernetes.io": { namespace, serviceaccount: { name: serviceAccount, uid: crypto.randomUUID() } },
    jti: crypto.randomUUID(),
    ...extra,
  };
  for (const [k, v] of Object.entries(claims)) if (v === undefined) delete claims[k];
  return fakeJwt(claims);
}
